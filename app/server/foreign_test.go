package server_test

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/uuid"

	"nimbus/app/apptest"
	"nimbus/app/domain/auth"
)

// byIDRoutes are the pages and API endpoints that act on one object named in their path, with
// the kind of the object. {id} is the object; any other ID in the path is random.
var byIDRoutes = []struct{ method, path, kind string }{
	{"GET", "/tenants/{id}", "tenant"},
	{"GET", "/tenants/{id}/governance", "tenant"},
	{"GET", "/tenants/{id}/governance/{other}", "tenant"},
	{"POST", "/tenants/{id}/governance/{other}", "tenant"},
	{"POST", "/tenants/{id}/governance/{other}/clear", "tenant"},
	{"POST", "/tenants/{id}/rename", "tenant"},
	{"POST", "/tenants/{id}/delete", "tenant"},
	{"POST", "/tenants/{id}/members", "tenant"},
	{"POST", "/tenants/{id}/members/{other}/delete", "tenant"},
	{"POST", "/tenants/{id}/namespaces", "tenant"},
	{"POST", "/tenants/{id}/namespaces/{other}/decommission", "tenant"},
	{"GET", "/ipam/pools/{id}", "pool"},
	{"GET", "/environments/{id}", "environment"},
	{"POST", "/environments/{id}/decommission", "environment"},
	{"POST", "/environments/{id}/retry", "environment"},
	{"GET", "/environments/{id}/resolvers", "environment"},
	{"GET", "/environments/{id}/resolvers/naming/next", "environment"},
	{"POST", "/environments/{id}/resolvers/ipam", "environment"},
	{"POST", "/tokens/{id}/revoke", "token"},
	{"POST", "/admin/elevations/{id}/revoke", "elevation"},
	{"DELETE", "/api/v1/elevations/{id}", "elevation"},
	{"GET", "/deployments/{id}", "deployment"},
	{"POST", "/deployments/{id}/apply", "deployment"},
	{"POST", "/deployments/{id}/upgrade", "deployment"},
	{"POST", "/deployments/{id}/refresh", "deployment"},
	{"POST", "/deployments/{id}/destroy", "deployment"},
	{"POST", "/deployments/{id}/drift-check", "deployment"},
	{"POST", "/deployments/{id}/reconcile", "deployment"},
	{"POST", "/deployments/{id}/git", "deployment"},
	{"GET", "/operations/{id}", "operation"},
	{"GET", "/operations/{id}/stream", "operation"},
	{"POST", "/operations/{id}/cancel", "operation"},
	{"POST", "/operations/{id}/apply", "operation"},
	{"GET", "/components/{id}", "component"},
	{"GET", "/components/{id}/deploy", "component"},
	{"POST", "/components/{id}/deploy", "component"},
	{"GET", "/components/{id}/edit", "component"},
	{"POST", "/components/{id}/draft", "component"},
	{"POST", "/components/{id}/publish", "component"},
	{"POST", "/components/{id}/delete", "component"},
	{"GET", "/components/{id}/versions/1", "component"},
	{"POST", "/components/{id}/versions/1/archive", "component"},
	{"GET", "/components/{id}/diff", "component"},
	{"POST", "/components/{id}/check", "component"},
	{"GET", "/components/{id}/repository", "component"},
	{"POST", "/components/{id}/repository", "component"},
	{"POST", "/components/{id}/repository/delete", "component"},
	{"GET", "/checks/{id}", "check"},
	{"GET", "/landing-zones/{id}", "zone"},
	{"GET", "/landing-zones/{id}/inputs", "zone"},
	{"GET", "/landing-zones/{id}/refers", "zone"},
	{"POST", "/landing-zones/{id}/system-services", "zone"},
	{"POST", "/landing-zones/{id}/templates", "zone"},
	{"POST", "/landing-zones/{id}/templates/{other}/withdraw", "zone"},
	{"POST", "/landing-zones/{id}/system-services/{other}/remove", "zone"},
	{"POST", "/landing-zones/{id}/publish", "zone"},
	{"POST", "/landing-zones/{id}/retire", "zone"},
	{"GET", "/landing-zones/{id}/resolvers", "zone"},
	{"GET", "/landing-zones/{id}/resolvers/naming/next", "zone"},
	{"POST", "/landing-zones/{id}/resolvers/ipam", "zone"},
	{"GET", "/landing-zones/{id}/cluster", "zone"},
	{"POST", "/landing-zones/{id}/cluster", "zone"},
	{"POST", "/landing-zones/{id}/cluster/check", "zone"},
	{"POST", "/landing-zones/{id}/cluster/remove", "zone"},
	{"GET", "/landing-zones/{id}/proxmox-access", "zone"},
	{"POST", "/landing-zones/{id}/proxmox-access", "zone"},
	{"POST", "/landing-zones/{id}/proxmox-access/check", "zone"},
	{"POST", "/landing-zones/{id}/proxmox-access/remove", "zone"},
	{"GET", "/landing-zones/{id}/tenant-factory", "zone"},
	{"POST", "/landing-zones/{id}/tenant-factory", "zone"},
	{"GET", "/landing-zones/{id}/policies", "zone"},
	{"POST", "/landing-zones/{id}/policies", "zone"},
	{"GET", "/landing-zones/{id}/policies/{other}", "zone"},
	{"POST", "/landing-zones/{id}/policies/{other}", "zone"},
	{"POST", "/landing-zones/{id}/policies/{other}/remove", "zone"},
	{"GET", "/approvals/{id}", "approval"},
	{"POST", "/approvals/{id}/approve", "approval"},
	{"POST", "/approvals/{id}/reject", "approval"},
	{"POST", "/approval-policies/{id}/delete", "policy"},

	{"GET", "/api/v1/tenants/{id}", "tenant"},
	{"PATCH", "/api/v1/tenants/{id}", "tenant"},
	{"DELETE", "/api/v1/tenants/{id}", "tenant"},
	{"GET", "/api/v1/tenants/{id}/members", "tenant"},
	{"POST", "/api/v1/tenants/{id}/members", "tenant"},
	{"DELETE", "/api/v1/tenants/{id}/members", "tenant"},
	{"DELETE", "/api/v1/tenants/{id}/members/{other}", "tenant"},
	{"GET", "/api/v1/tenants/{id}/namespaces", "tenant"},
	{"POST", "/api/v1/tenants/{id}/namespaces", "tenant"},
	{"DELETE", "/api/v1/tenants/{id}/namespaces/{other}", "tenant"},
	{"GET", "/api/v1/tenants/{id}/governance", "tenant"},
	{"GET", "/api/v1/tenants/{id}/governance/{other}", "tenant"},
	{"PUT", "/api/v1/tenants/{id}/governance/{other}", "tenant"},
	{"DELETE", "/api/v1/tenants/{id}/governance/{other}", "tenant"},
	{"GET", "/api/v1/users/{id}", "user"},
	{"PATCH", "/api/v1/users/{id}", "user"},
	{"DELETE", "/api/v1/users/{id}", "user"},
	{"POST", "/api/v1/users/{id}/password", "user"},
	{"GET", "/users/{id}", "user"},
	{"POST", "/users/{id}", "user"},
	{"POST", "/users/{id}/disable", "user"},
	{"POST", "/users/{id}/password", "user"},
	{"POST", "/users/{id}/remove", "user"},
	{"POST", "/users/{id}/second-factor/reset", "user"},
	{"DELETE", "/api/v1/tokens/{id}", "token"},
	{"GET", "/api/v1/deployments/{id}", "deployment"},
	{"POST", "/api/v1/deployments/{id}/preview", "deployment"},
	{"POST", "/api/v1/deployments/{id}/deploy", "deployment"},
	{"POST", "/api/v1/deployments/{id}/update", "deployment"},
	{"POST", "/api/v1/deployments/{id}/upgrade", "deployment"},
	{"POST", "/api/v1/deployments/{id}/refresh", "deployment"},
	{"POST", "/api/v1/deployments/{id}/destroy", "deployment"},
	{"GET", "/api/v1/deployments/{id}/state", "deployment"},
	{"PUT", "/api/v1/deployments/{id}/state", "deployment"},
	{"POST", "/api/v1/deployments/{id}/drift-checks", "deployment"},
	{"POST", "/api/v1/deployments/{id}/reconcile", "deployment"},
	{"PUT", "/api/v1/deployments/{id}/git", "deployment"},
	{"GET", "/api/v1/environments/{id}/drift-interval", "environment"},
	{"PUT", "/api/v1/environments/{id}/drift-interval", "environment"},
	{"PUT", "/api/v1/landing-zones/{id}/drift-interval", "zone"},
	{"GET", "/api/v1/ipam/pools/{id}", "pool"},
	{"GET", "/api/v1/environments/{id}", "environment"},
	{"GET", "/api/v1/environments/{id}/policies", "environment"},
	{"POST", "/api/v1/environments/{id}/decommission", "environment"},
	{"POST", "/api/v1/environments/{id}/retry", "environment"},
	{"GET", "/api/v1/environments/{id}/resolvers", "environment"},
	{"GET", "/api/v1/environments/{id}/resolvers/naming/next", "environment"},
	{"PUT", "/api/v1/environments/{id}/resolvers/ipam", "environment"},
	{"DELETE", "/api/v1/environments/{id}/resolvers/ipam", "environment"},
	{"GET", "/api/v1/operations/{id}", "operation"},
	{"GET", "/api/v1/operations/{id}/logs", "operation"},
	{"GET", "/api/v1/operations/{id}/log", "operation"},
	{"POST", "/api/v1/operations/{id}/cancel", "operation"},
	{"POST", "/api/v1/operations/{id}/apply", "operation"},
	{"GET", "/api/v1/landing-zones/{id}", "zone"},
	{"GET", "/api/v1/landing-zones/{id}/resolvers", "zone"},
	{"GET", "/api/v1/landing-zones/{id}/cluster", "zone"},
	{"PUT", "/api/v1/landing-zones/{id}/cluster", "zone"},
	{"POST", "/api/v1/landing-zones/{id}/cluster/check", "zone"},
	{"DELETE", "/api/v1/landing-zones/{id}/cluster", "zone"},
	{"GET", "/api/v1/landing-zones/{id}/proxmox-access", "zone"},
	{"PUT", "/api/v1/landing-zones/{id}/proxmox-access", "zone"},
	{"POST", "/api/v1/landing-zones/{id}/proxmox-access/check", "zone"},
	{"DELETE", "/api/v1/landing-zones/{id}/proxmox-access", "zone"},
	{"GET", "/api/v1/landing-zones/{id}/tenant-factory", "zone"},
	{"PUT", "/api/v1/landing-zones/{id}/tenant-factory", "zone"},
	{"GET", "/api/v1/landing-zones/{id}/policies", "zone"},
	{"POST", "/api/v1/landing-zones/{id}/policies", "zone"},
	{"GET", "/api/v1/landing-zones/{id}/policies/versions", "zone"},
	{"GET", "/api/v1/landing-zones/{id}/policies/{other}", "zone"},
	{"PUT", "/api/v1/landing-zones/{id}/policies/{other}", "zone"},
	{"DELETE", "/api/v1/landing-zones/{id}/policies/{other}", "zone"},
	{"PUT", "/api/v1/landing-zones/{id}/resolvers/ipam", "zone"},
	{"POST", "/api/v1/landing-zones/{id}/system-services", "zone"},
	{"POST", "/api/v1/landing-zones/{id}/templates", "zone"},
	{"DELETE", "/api/v1/landing-zones/{id}/templates/{other}", "zone"},
	{"DELETE", "/api/v1/landing-zones/{id}/system-services/{other}", "zone"},
	{"POST", "/api/v1/landing-zones/{id}/publish", "zone"},
	{"POST", "/api/v1/landing-zones/{id}/retire", "zone"},
	{"GET", "/api/v1/components/{id}", "component"},
	{"PATCH", "/api/v1/components/{id}", "component"},
	{"DELETE", "/api/v1/components/{id}", "component"},
	{"POST", "/api/v1/components/{id}/publish", "component"},
	{"GET", "/api/v1/components/{id}/versions", "component"},
	{"GET", "/api/v1/components/{id}/versions/1", "component"},
	{"POST", "/api/v1/components/{id}/versions/1/archive", "component"},
	{"POST", "/api/v1/components/{id}/check", "component"},
	{"GET", "/api/v1/components/{id}/repository", "component"},
	{"PUT", "/api/v1/components/{id}/repository", "component"},
	{"DELETE", "/api/v1/components/{id}/repository", "component"},
	{"GET", "/api/v1/checks/{id}", "check"},
	{"GET", "/api/v1/approvals/{id}", "approval"},
	{"POST", "/api/v1/approvals/{id}/approve", "approval"},
	{"POST", "/api/v1/approvals/{id}/reject", "approval"},
	{"DELETE", "/api/v1/approval-policies/{id}", "policy"},
	{"GET", "/stacks/{id}", "stack"},
	{"GET", "/stacks/{id}/edit", "stack"},
	{"POST", "/stacks/{id}/edit", "stack"},
	{"POST", "/stacks/{id}/publish", "stack"},
	{"POST", "/stacks/{id}/versions/1/archive", "stack"},
	{"POST", "/stacks/{id}/fork", "stack"},
	{"GET", "/stacks/{id}/diff", "stack"},
	{"GET", "/api/v1/stacks/{id}", "stack"},
	{"PUT", "/api/v1/stacks/{id}", "stack"},
	{"DELETE", "/api/v1/stacks/{id}", "stack"},
	{"POST", "/api/v1/stacks/{id}/publish", "stack"},
	{"GET", "/api/v1/stacks/{id}/versions", "stack"},
	{"GET", "/api/v1/stacks/{id}/versions/1", "stack"},
	{"POST", "/api/v1/stacks/{id}/versions/1/archive", "stack"},
	{"GET", "/api/v1/stacks/{id}/diff", "stack"},
	{"POST", "/api/v1/stacks/{id}/fork", "stack"},
	{"GET", "/stack-instances/{id}", "stack_instance"},
	{"POST", "/stack-instances/{id}/destroy", "stack_instance"},
	{"POST", "/stack-instances/{id}/retry", "stack_instance"},
	{"POST", "/stack-instances/{id}/transitions", "stack_instance"},
	{"POST", "/stack-instances/{id}/operations/{other}", "stack_instance"},
	{"POST", "/stack-instances/{id}/upgrade", "stack_instance"},
	{"GET", "/stacks/{id}/deploy", "stack"},
	{"POST", "/stacks/{id}/deploy", "stack"},
	{"GET", "/api/v1/stack-instances/{id}", "stack_instance"},
	{"DELETE", "/api/v1/stack-instances/{id}", "stack_instance"},
	{"POST", "/api/v1/stack-instances/{id}/destroy", "stack_instance"},
	{"POST", "/api/v1/stack-instances/{id}/retry", "stack_instance"},
	{"GET", "/api/v1/stack-instances/{id}/runs", "stack_instance"},
	{"GET", "/api/v1/stack-instances/{id}/upgrade", "stack_instance"},
	{"POST", "/api/v1/stack-instances/{id}/upgrade", "stack_instance"},
	{"POST", "/api/v1/stack-instances/{id}/transitions", "stack_instance"},
	{"GET", "/api/v1/stack-instances/{id}/operations", "stack_instance"},
	{"POST", "/api/v1/stack-instances/{id}/operations/{other}", "stack_instance"},
	{"GET", "/api/v1/stack-instances/{id}/history", "stack_instance"},
	{"POST", "/api/v1/stack-instances/{id}/deploy", "stack_instance"},
	{"POST", "/api/v1/stack-instances/{id}/discard", "stack_instance"},
	{"GET", "/stack-instances/{id}/plan", "stack_instance"},
	{"POST", "/stack-instances/{id}/deploy", "stack_instance"},
	{"POST", "/stack-instances/{id}/discard", "stack_instance"},
	{"POST", "/stack-instances/{id}/edit", "stack_instance"},
	{"POST", "/environments/{id}/extend", "environment"},
	{"POST", "/api/v1/environments/{id}/extend", "environment"},
	{"POST", "/landing-zones/{id}/lifetimes", "zone"},
	{"PUT", "/api/v1/landing-zones/{id}/lifetimes", "zone"},
	{"GET", "/landing-zones/{id}/event-sources", "zone"},
	{"POST", "/landing-zones/{id}/event-sources", "zone"},
	{"POST", "/event-sources/{id}/secret", "event_source"},
	{"POST", "/event-sources/{id}/active", "event_source"},
	{"POST", "/event-sources/{id}/delete", "event_source"},
	{"GET", "/tenants/{id}/event-subscriptions", "tenant"},
	{"POST", "/tenants/{id}/event-subscriptions", "tenant"},
	{"GET", "/event-subscriptions/{id}", "subscription"},
	{"POST", "/event-subscriptions/{id}/active", "subscription"},
	{"POST", "/event-subscriptions/{id}/delete", "subscription"},
	{"GET", "/api/v1/landing-zones/{id}/event-sources", "zone"},
	{"POST", "/api/v1/landing-zones/{id}/event-sources", "zone"},
	{"PATCH", "/api/v1/event-sources/{id}", "event_source"},
	{"POST", "/api/v1/event-sources/{id}/secret", "event_source"},
	{"DELETE", "/api/v1/event-sources/{id}", "event_source"},
	{"PATCH", "/api/v1/event-subscriptions/{id}", "subscription"},
	{"DELETE", "/api/v1/event-subscriptions/{id}", "subscription"},
	{"GET", "/api/v1/event-subscriptions/{id}/deliveries", "subscription"},
	{"POST", "/notifications/{id}/read", "notification"},
	{"POST", "/api/v1/notifications/{id}/read", "notification"},
	{"GET", "/inventory/{id}", "item"},
	{"GET", "/api/v1/inventory/{id}", "item"},
	{"POST", "/inventory/{id}/ignore", "item"},
	{"POST", "/inventory/{id}/unignore", "item"},
	{"POST", "/api/v1/inventory/{id}/ignore", "item"},
	{"POST", "/api/v1/inventory/{id}/unignore", "item"},
	{"POST", "/inventory/{id}/adopt", "item"},
	{"POST", "/api/v1/inventory/{id}/adopt", "item"},
}

func TestAccess_AnotherTenantsObjectAnswersAsAMissingOne(t *testing.T) {
	g := apptest.NewGated(t, apptest.SiteConfig{Backend: "file"})
	root := g.As.Root
	// Tenant A's objects, of every kind with pages or endpoints of its own; and a landing zone,
	// which only provider admins see.
	g.Policy(t, g.As.Admin, map[string]any{"scope": "environment", "scope_id": g.Env, "operations": []string{"destroy"},
		"approver_role": "tenant_admin"})
	op, request := g.Destroy(t)
	check := g.Call(t, "POST", "/api/v1/components/"+g.OfA.ID.String()+"/check", g.As.Admin, nil)
	apptest.WantStatus(t, check, http.StatusAccepted)
	r := g.Call(t, "POST", "/api/v1/ipam/pools", root, map[string]any{"name": "net", "prefix": "10.70.0.0/29", "environment_id": g.Env})
	apptest.WantStatus(t, r, http.StatusCreated)
	pool := r.JSON(t)["id"].(string)
	r = g.Call(t, "POST", "/api/v1/landing-zones", root, map[string]any{"name": "sim-eu", "provider": "simcloud"})
	apptest.WantStatus(t, r, http.StatusCreated)
	zone := r.JSON(t)["id"].(string)
	token, err := g.Auth.CreateToken(t.Context(), g.UserA, auth.TokenSpec{Name: "pipeline"})
	apptest.Must(t, err)
	r = g.Call(t, "POST", "/api/v1/elevations", root, map[string]any{"user_id": g.UserA.UserID, "tenant_id": g.A.ID, "role": "tenant_admin",
		"duration": "1h", "reason": "on call"})
	apptest.WantStatus(t, r, http.StatusCreated)
	elevationInA := r.JSON(t)["id"].(string)
	policies := g.Call(t, "GET", "/api/v1/approval-policies", root, nil).JSON(t)["policies"].([]any)
	r = g.Call(t, "POST", "/api/v1/stacks", g.As.Admin, map[string]any{"tenant_id": g.A.ID, "provider": "simcloud", "name": "a-stack",
		"draft": apptest.StackDraft(g.Shared.ID, 1)})
	apptest.WantStatus(t, r, http.StatusCreated)
	stackOfA := r.JSON(t)["id"].(string)
	apptest.WantStatus(t, g.Call(t, "POST", "/api/v1/stacks/"+stackOfA+"/publish", g.As.Admin, map[string]any{"changelog": "first"}), http.StatusCreated)
	r = g.Call(t, "POST", "/api/v1/stack-instances", g.As.Admin, map[string]any{"stack_id": stackOfA, "environment_id": g.Env, "name": "a-shop"})
	apptest.WantStatus(t, r, http.StatusAccepted)
	instanceOfA := r.JSON(t)["id"].(string)
	r = g.Call(t, "POST", "/api/v1/landing-zones/"+zone+"/event-sources", root, map[string]any{"name": "alerts", "kind": "webhook"})
	apptest.WantStatus(t, r, http.StatusCreated)
	source := r.JSON(t)["id"].(string)
	r = g.Call(t, "POST", "/api/v1/event-subscriptions", g.As.Admin, map[string]any{"tenant_id": g.A.ID, "name": "hooks",
		"url": "https://hooks.example.com/nimbus"})
	apptest.WantStatus(t, r, http.StatusCreated)
	subscriptionOfA := r.JSON(t)["id"].(string)
	// The destroy's request for approval reaches the inbox of A's second admin, who may decide it.
	var notice string
	apptest.WaitFor(t, "A's second admin told of the request for approval", func() bool {
		if list := g.Call(t, "GET", "/api/v1/notifications", g.As.Admin2, nil).JSON(t)["notifications"].([]any); len(list) > 0 {
			notice = list[0].(map[string]any)["id"].(string)
		}
		return notice != ""
	})
	items := g.Call(t, "GET", "/api/v1/inventory", g.As.Reader, nil).JSON(t)["items"].([]any)
	if len(items) == 0 {
		t.Fatal("A's deployment made no inventory items")
	}
	foreign := map[string]string{
		"tenant": g.A.ID.String(), "component": g.OfA.ID.String(), "check": check.JSON(t)["id"].(string),
		"deployment": g.Deployment, "operation": op["id"].(string), "environment": g.Env, "pool": pool, "zone": zone,
		"approval": request["id"].(string), "policy": policies[0].(map[string]any)["id"].(string),
		"token": token.Token.ID.String(), "user": g.UserA.UserID.String(), "stack": stackOfA,
		"stack_instance": instanceOfA, "event_source": source, "subscription": subscriptionOfA, "elevation": elevationInA, "notification": notice,
		"item": items[0].(map[string]any)["id"].(string),
	}

	// Tenant B's admin asks about each of them, and about an object that does not exist.
	other := g.As.Other
	for _, rt := range byIDRoutes {
		t.Run(rt.method+" "+rt.path, func(t *testing.T) {
			id, ok := foreign[rt.kind]
			if !ok {
				t.Fatalf("no object of kind %q", rt.kind)
			}
			answer := func(id string) apptest.Reply {
				path := strings.NewReplacer("{id}", id, "{other}", uuid.NewString()).Replace(rt.path)
				return g.Ask(t, rt.method, path, other)
			}
			ofA, missing := answer(id), answer(uuid.NewString())
			if ofA.Status != http.StatusNotFound || missing.Status != http.StatusNotFound {
				t.Fatalf("another tenant's %s answers %d (%.300s), a missing one %d (%.300s); want 404 for both",
					rt.kind, ofA.Status, ofA.Body, missing.Status, missing.Body)
			}
		})
	}
	// A body that cannot be read tells no more: an action looks its deployment up first.
	for _, id := range []string{g.Deployment, uuid.NewString()} {
		r := g.Call(t, "POST", "/api/v1/deployments/"+id+"/update", other, `{"parameters": `)
		if r.Status != http.StatusNotFound {
			t.Errorf("an update of another tenant's deployment with a broken body answers %d (%.300s); want 404", r.Status, r.Body)
		}
	}
	// Nothing of A's was changed by those requests.
	if got := g.DeploymentStatus(t); got != "deployed" {
		t.Fatalf("A's deployment is %s after B's requests", got)
	}
	if got := g.Call(t, "GET", "/api/v1/approvals/"+request["id"].(string), g.As.Admin, nil).JSON(t)["status"]; got != "pending" {
		t.Fatalf("A's approval request is %v after B's requests", got)
	}
}

// sharedByID are routes with an ID in their path whose objects are no tenant's: every tenant
// sees them, and who may not change them is refused alike whether the ID exists or not.
var sharedByID = []string{"POST /images/{id}/delete", "DELETE /api/v1/images/{id}"}

// routeLine is a route with an ID in its path, as a domain registers it in its routes.go.
var routeLine = regexp.MustCompile(`(pages|api)\.(GET|POST|PUT|PATCH|DELETE)\("([^"]*:id\b[^"]*)",`)

func TestAccess_EveryRouteWithAnIDIsInTheTable(t *testing.T) {
	files, err := filepath.Glob("../*/*/routes.go")
	apptest.Must(t, err)
	var src []byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		apptest.Must(t, err)
		src = append(src, b...)
	}
	listed := map[string]bool{}
	for _, rt := range byIDRoutes {
		listed[rt.method+" "+rt.path] = true
	}
	for _, s := range sharedByID {
		listed[s] = true
	}
	params, versionParam := regexp.MustCompile(`:[a-z_]+`), regexp.MustCompile(`:n\b`)
	found := 0
	for _, m := range routeLine.FindAllStringSubmatch(string(src), -1) {
		path := strings.ReplaceAll(m[3], ":id", "{id}")
		path = versionParam.ReplaceAllString(path, "1")
		path = params.ReplaceAllString(path, "{other}")
		if m[1] == "api" {
			path = "/api/v1" + path
		}
		// The resolver types are many routes of one handler; the table asks with ipam.
		path = strings.ReplaceAll(path, "/resolvers/{other}", "/resolvers/ipam")
		found++
		if !listed[m[2]+" "+path] {
			t.Errorf("%s %s is not in byIDRoutes: add it, with the kind of object its ID names", m[2], path)
		}
	}
	if found < 50 {
		t.Fatalf("found only %d routes with an ID in the domains' routes.go; is the pattern broken?", found)
	}
}
