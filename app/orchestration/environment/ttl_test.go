package environment_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"nimbus/app/apptest"
	"nimbus/app/orchestration/environment"
)

// ttlZone publishes a landing zone whose template deploys one machine, with the lifetimes
// given, and returns the zone's and the template's IDs.
func ttlZone(t *testing.T, s *apptest.Site, lifetimes map[string]any) (zone, template string) {
	t.Helper()
	ids := apptest.BuiltinIDs(t, s)
	root := s.Token(t, s.Admin)
	zone = s.Call(t, "POST", "/api/v1/landing-zones", root, map[string]any{"name": "short", "provider": "simcloud"}).JSON(t)["id"].(string)
	r := s.Call(t, "POST", "/api/v1/landing-zones/"+zone+"/templates", root, map[string]any{"name": "one",
		"mandatory_components": []map[string]any{{"component_id": ids["simcloud-machine"], "name": "web", "parameters": map[string]any{"name": "web"}}}})
	apptest.WantStatus(t, r, http.StatusCreated)
	template = r.JSON(t)["id"].(string)
	r = s.Call(t, "PUT", "/api/v1/landing-zones/"+zone+"/lifetimes", root, lifetimes)
	apptest.WantStatus(t, r, http.StatusOK)
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/landing-zones/"+zone+"/publish", root, nil), http.StatusAccepted)
	s.WaitZoneServices(t, root, zone)
	return zone, template
}

// expiresAt reads an environment's expiry from the API.
func expiresAt(t *testing.T, env map[string]any) time.Time {
	t.Helper()
	s, _ := env["expires_at"].(string)
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("the environment has no expiry: %v", env)
	}
	return at
}

// ownEvents counts the environment's events of Nimbus's own of type kind.
func ownEvents(t *testing.T, s *apptest.Site, env, kind string) int {
	t.Helper()
	var n int
	apptest.Must(t, s.Pool.QueryRow(context.Background(), `SELECT count(*) FROM event_log WHERE environment_id = $1 AND type = $2`, env, kind).Scan(&n))
	return n
}

// An environment opened in a zone with a short default lifetime gets it; it is warned of its
// expiry a day and an hour before (here halfway and nine tenths through its life), each
// warning once, its page says when it goes, and at expiry it is decommissioned on its own,
// audited as the system's doing.
func TestEnvironmentTTL_WarnsThenDecommissionsItself(t *testing.T) {
	s := apptest.NewSiteWith(t, apptest.SiteConfig{Backend: "file", ExpiryCheck: time.Second})
	_, template := ttlZone(t, s, map[string]any{"default_ttl": "60s", "max_ttl": "2m"})
	admin := s.Token(t, s.AdminA)

	before := time.Now()
	r := s.Call(t, "POST", "/api/v1/environments", admin, map[string]any{"tenant_id": s.A.ID, "name": "dev", "template_id": template})
	apptest.WantStatus(t, r, http.StatusAccepted)
	env := r.JSON(t)
	id := env["id"].(string)
	if at := expiresAt(t, env); at.Before(before.Add(60*time.Second)) || at.After(time.Now().Add(60*time.Second)) {
		t.Fatalf("the zone's default of 60s gave an expiry at %s, %s after opening", at, at.Sub(before))
	}

	// Extending within the zone's maximum works; beyond it, or to an earlier time, is refused.
	r = s.Call(t, "POST", "/api/v1/environments/"+id+"/extend", admin, map[string]any{"by": "20s"})
	apptest.WantStatus(t, r, http.StatusOK)
	extended := expiresAt(t, r.JSON(t))
	if d := extended.Sub(expiresAt(t, env)); d != 20*time.Second {
		t.Fatalf("extending by 20s moved the expiry by %s", d)
	}
	for _, c := range []struct {
		body        map[string]any
		field, rule string
	}{
		{map[string]any{"by": "5m"}, "by", "max"},
		{map[string]any{"expires_at": time.Now().Add(time.Hour)}, "expires_at", "max"},
		{map[string]any{"expires_at": extended.Add(-time.Second)}, "expires_at", "after"},
		{map[string]any{"by": "soon"}, "by", "duration"},
		{map[string]any{}, "expires_at", "required"},
	} {
		r := s.Call(t, "POST", "/api/v1/environments/"+id+"/extend", admin, c.body)
		apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
		apptest.WantProblem(t, r, c.field, c.rule)
	}
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/environments/"+id+"/extend", s.Token(t, s.UserA), map[string]any{"by": "1s"}), http.StatusForbidden)

	// The first warning, halfway through its life: the page says when it goes.
	apptest.WaitFor(t, "the first warning", func() bool { return ownEvents(t, s, id, "environment.expiring") >= 1 })
	page := s.Call(t, "GET", "/environments/"+id, admin, nil)
	apptest.WantStatus(t, page, http.StatusOK)
	if got := ownEvents(t, s, id, "environment.expired"); got == 0 {
		apptest.WantIn(t, page, `data-testid="expiry-banner"`, "This environment expires in")
	}

	apptest.WaitFor(t, "the decommissioning", func() bool {
		return s.Call(t, "GET", "/api/v1/environments/"+id, admin, nil).JSON(t)["status"] == "decommissioned"
	})
	var left int
	apptest.Must(t, s.Pool.QueryRow(context.Background(), `SELECT count(*) FROM deployed_components WHERE environment_id = $1 AND status <> 'destroyed'`, id).Scan(&left))
	if left != 0 {
		t.Fatalf("%d deployments of the expired environment are not destroyed", left)
	}
	var points []string
	rows, err := s.Pool.Query(context.Background(), `SELECT payload->'data'->>'warning' FROM event_log WHERE environment_id = $1 AND type = 'environment.expiring' ORDER BY received_at`, id)
	apptest.Must(t, err)
	for rows.Next() {
		var p string
		apptest.Must(t, rows.Scan(&p))
		points = append(points, p)
	}
	apptest.Must(t, rows.Err())
	if strings.Join(points, ",") != "day,hour" {
		t.Fatalf("the warnings sent: %v, want day then hour, each once", points)
	}
	if n := ownEvents(t, s, id, "environment.expired"); n != 1 {
		t.Fatalf("%d environment.expired events, want 1", n)
	}
	var actor string
	apptest.Must(t, s.Pool.QueryRow(context.Background(), `SELECT actor_email FROM audit_events WHERE action = 'environment.expire' AND target_id = $1`, id).Scan(&actor))
	if actor != "system" {
		t.Fatalf("the expiry is audited as done by %q", actor)
	}
}

// An expired environment's stack instances are destroyed first, through their own destroy and
// as the system; then the environment is decommissioned.
func TestEnvironmentTTL_ExpiryDestroysStackInstancesFirst(t *testing.T) {
	s := apptest.NewSiteWith(t, apptest.SiteConfig{Backend: "file", ExpiryCheck: time.Second})
	stackID := apptest.PublishedStack(t, s, "web", apptest.WebStack(t, s, 0))
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	admin := s.Token(t, s.AdminA)
	r := s.Call(t, "POST", "/api/v1/stack-instances", admin, map[string]any{
		"stack_id": stackID, "environment_id": env.ID, "name": "shop", "parameters": map[string]any{"prefix": "shop", "cores": 1}})
	apptest.WantStatus(t, r, http.StatusAccepted)
	inst := r.JSON(t)["id"].(string)
	if got := s.WaitInstance(t, admin, inst, apptest.Status("active", "failed")); got["status"] != "active" {
		t.Fatalf("the instance: %v", got)
	}
	_, err = s.Pool.Exec(t.Context(), `UPDATE environments SET expires_at = now() + interval '3 seconds' WHERE id = $1`, env.ID)
	apptest.Must(t, err)

	apptest.WaitFor(t, "the decommissioning", func() bool {
		return s.Call(t, "GET", "/api/v1/environments/"+env.ID.String(), admin, nil).JSON(t)["status"] == "decommissioned"
	})
	if got := s.Call(t, "GET", "/api/v1/stack-instances/"+inst, admin, nil).JSON(t); got["status"] != "destroyed" {
		t.Fatalf("the instance of the expired environment: %v", got)
	}
	var by string
	apptest.Must(t, s.Pool.QueryRow(t.Context(), `SELECT actor_email FROM audit_events WHERE action = 'stack_instance.destroy' AND target_id = $1`, inst).Scan(&by))
	if by != "system" {
		t.Fatalf("the instance's destroy is audited as %q's", by)
	}
	if n := ownEvents(t, s, env.ID.String(), "environment.expired"); n != 1 {
		t.Fatalf("%d environment.expired events, want 1", n)
	}
}

// A request's own lifetime is taken within the zone's maximum and refused beyond it, naming
// the field and the rule; a zone's lifetimes are checked, and set from its page too.
func TestEnvironmentTTL_RequestedLifetimeWithinTheMaximum(t *testing.T) {
	s := apptest.NewSite(t)
	zone, template := ttlZone(t, s, map[string]any{"default_ttl": "1d", "max_ttl": "7d"})
	root, admin := s.Token(t, s.Admin), s.Token(t, s.AdminA)

	for _, c := range []struct {
		body        map[string]any
		field, rule string
	}{
		{map[string]any{"ttl": "8d"}, "ttl", "max"},
		{map[string]any{"expires_at": time.Now().Add(200 * time.Hour)}, "expires_at", "max"},
		{map[string]any{"expires_at": time.Now().Add(-time.Hour)}, "expires_at", "future"},
		{map[string]any{"ttl": "a while"}, "ttl", "duration"},
	} {
		body := map[string]any{"tenant_id": s.A.ID, "name": "dev", "template_id": template}
		for k, v := range c.body {
			body[k] = v
		}
		r := s.Call(t, "POST", "/api/v1/environments", admin, body)
		apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
		apptest.WantProblem(t, r, c.field, c.rule)
	}
	before := time.Now()
	r := s.Call(t, "POST", "/api/v1/environments", admin, map[string]any{"tenant_id": s.A.ID, "name": "dev", "template_id": template, "ttl": "3d"})
	apptest.WantStatus(t, r, http.StatusAccepted)
	env := r.JSON(t)
	at := expiresAt(t, env)
	if at.Before(before.Add(72*time.Hour)) || at.After(time.Now().Add(72*time.Hour)) {
		t.Fatalf("asking for 3d gave an expiry at %s", at)
	}

	// The page offers the extension; beyond the maximum it says so beside the field.
	page := "/environments/" + env["id"].(string)
	apptest.WantIn(t, s.Call(t, "GET", page, admin, nil), `data-testid="extend-form"`, `data-testid="environment-expires"`)
	r = s.Submit(t, page+"/extend", admin, url.Values{"by": {"30d"}})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	apptest.WantIn(t, r, `data-field-error="by"`)
	apptest.WantStatus(t, s.Submit(t, page+"/extend", admin, url.Values{"by": {"1d"}}), http.StatusSeeOther)
	if got := expiresAt(t, s.Call(t, "GET", "/api/v1"+page, admin, nil).JSON(t)); got.Sub(at) != 24*time.Hour {
		t.Fatalf("extended by a day from the page, the expiry moved by %s", got.Sub(at))
	}

	for _, c := range []struct {
		body        map[string]any
		field, rule string
	}{
		{map[string]any{"default_ttl": "8d", "max_ttl": "7d"}, "default_ttl", "max"},
		{map[string]any{"max_ttl": "forever"}, "max_ttl", "duration"},
	} {
		r := s.Call(t, "PUT", "/api/v1/landing-zones/"+zone+"/lifetimes", root, c.body)
		apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
		apptest.WantProblem(t, r, c.field, c.rule)
	}
	apptest.WantStatus(t, s.Call(t, "PUT", "/api/v1/landing-zones/"+zone+"/lifetimes", admin, map[string]any{"max_ttl": "1d"}), http.StatusNotFound)

	r = s.Submit(t, "/landing-zones/"+zone+"/lifetimes", root, url.Values{"default_ttl": {"2d"}, "max_ttl": {"14d"}})
	apptest.WantStatus(t, r, http.StatusSeeOther)
	z := s.Call(t, "GET", "/api/v1/landing-zones/"+zone, root, nil).JSON(t)
	if z["default_ttl"] != "2d" || z["max_ttl"] != "14d" {
		t.Fatalf("the zone's lifetimes after the form: %v, %v", z["default_ttl"], z["max_ttl"])
	}
}
