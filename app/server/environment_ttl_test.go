package server_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"nimbus/app/environment"
)

// ttlZone publishes a landing zone whose template deploys one machine, with the lifetimes
// given, and returns the zone's and the template's IDs.
func ttlZone(t *testing.T, s *site, lifetimes map[string]any) (zone, template string) {
	t.Helper()
	ids := builtinIDs(t, s)
	root := s.token(t, s.admin)
	zone = s.call(t, "POST", "/api/v1/landing-zones", root, map[string]any{"name": "short", "provider": "simcloud"}).json(t)["id"].(string)
	r := s.call(t, "POST", "/api/v1/landing-zones/"+zone+"/templates", root, map[string]any{"name": "one",
		"mandatory_components": []map[string]any{{"component_id": ids["simcloud-machine"], "name": "web", "parameters": map[string]any{"name": "web"}}}})
	wantStatus(t, r, http.StatusCreated)
	template = r.json(t)["id"].(string)
	r = s.call(t, "PUT", "/api/v1/landing-zones/"+zone+"/lifetimes", root, lifetimes)
	wantStatus(t, r, http.StatusOK)
	wantStatus(t, s.call(t, "POST", "/api/v1/landing-zones/"+zone+"/publish", root, nil), http.StatusAccepted)
	s.waitZoneServices(t, root, zone)
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
func ownEvents(t *testing.T, s *site, env, kind string) int {
	t.Helper()
	var n int
	must(t, s.pool.QueryRow(context.Background(), `SELECT count(*) FROM event_log WHERE environment_id = $1 AND type = $2`, env, kind).Scan(&n))
	return n
}

// An environment opened in a zone with a short default lifetime gets it; it is warned of its
// expiry a day and an hour before (here halfway and nine tenths through its life), each
// warning once, its page says when it goes, and at expiry it is decommissioned on its own,
// audited as the system's doing.
func TestEnvironmentTTL_WarnsThenDecommissionsItself(t *testing.T) {
	s := newSiteWith(t, siteConfig{backend: "file", expiryCheck: time.Second})
	_, template := ttlZone(t, s, map[string]any{"default_ttl": "60s", "max_ttl": "2m"})
	admin := s.token(t, s.adminA)

	before := time.Now()
	r := s.call(t, "POST", "/api/v1/environments", admin, map[string]any{"tenant_id": s.a.ID, "name": "dev", "template_id": template})
	wantStatus(t, r, http.StatusAccepted)
	env := r.json(t)
	id := env["id"].(string)
	if at := expiresAt(t, env); at.Before(before.Add(60*time.Second)) || at.After(time.Now().Add(60*time.Second)) {
		t.Fatalf("the zone's default of 60s gave an expiry at %s, %s after opening", at, at.Sub(before))
	}

	// Extending within the zone's maximum works; beyond it, or to an earlier time, is refused.
	r = s.call(t, "POST", "/api/v1/environments/"+id+"/extend", admin, map[string]any{"by": "20s"})
	wantStatus(t, r, http.StatusOK)
	extended := expiresAt(t, r.json(t))
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
		r := s.call(t, "POST", "/api/v1/environments/"+id+"/extend", admin, c.body)
		wantStatus(t, r, http.StatusUnprocessableEntity)
		wantProblem(t, r, c.field, c.rule)
	}
	wantStatus(t, s.call(t, "POST", "/api/v1/environments/"+id+"/extend", s.token(t, s.userA), map[string]any{"by": "1s"}), http.StatusForbidden)

	// The first warning, halfway through its life: the page says when it goes.
	waitFor(t, "the first warning", func() bool { return ownEvents(t, s, id, "environment.expiring") >= 1 })
	page := s.call(t, "GET", "/environments/"+id, admin, nil)
	wantStatus(t, page, http.StatusOK)
	if got := ownEvents(t, s, id, "environment.expired"); got == 0 {
		wantIn(t, page, `data-testid="expiry-banner"`, "This environment expires in")
	}

	waitFor(t, "the decommissioning", func() bool {
		return s.call(t, "GET", "/api/v1/environments/"+id, admin, nil).json(t)["status"] == "decommissioned"
	})
	var left int
	must(t, s.pool.QueryRow(context.Background(), `SELECT count(*) FROM deployed_components WHERE environment_id = $1 AND status <> 'destroyed'`, id).Scan(&left))
	if left != 0 {
		t.Fatalf("%d deployments of the expired environment are not destroyed", left)
	}
	var points []string
	rows, err := s.pool.Query(context.Background(), `SELECT payload->'data'->>'warning' FROM event_log WHERE environment_id = $1 AND type = 'environment.expiring' ORDER BY received_at`, id)
	must(t, err)
	for rows.Next() {
		var p string
		must(t, rows.Scan(&p))
		points = append(points, p)
	}
	must(t, rows.Err())
	if strings.Join(points, ",") != "day,hour" {
		t.Fatalf("the warnings sent: %v, want day then hour, each once", points)
	}
	if n := ownEvents(t, s, id, "environment.expired"); n != 1 {
		t.Fatalf("%d environment.expired events, want 1", n)
	}
	var actor string
	must(t, s.pool.QueryRow(context.Background(), `SELECT actor_email FROM audit_events WHERE action = 'environment.expire' AND target_id = $1`, id).Scan(&actor))
	if actor != "system" {
		t.Fatalf("the expiry is audited as done by %q", actor)
	}
}

// An expired environment's stack instances are destroyed first, through their own destroy and
// as the system; then the environment is decommissioned.
func TestEnvironmentTTL_ExpiryDestroysStackInstancesFirst(t *testing.T) {
	s := newSiteWith(t, siteConfig{backend: "file", expiryCheck: time.Second})
	stackID := publishedStack(t, s, "web", webStack(t, s, 0))
	env, err := environment.NewService(s.pool).Create(t.Context(), s.adminA, s.a.ID, "dev")
	must(t, err)
	admin := s.token(t, s.adminA)
	r := s.call(t, "POST", "/api/v1/stack-instances", admin, map[string]any{
		"stack_id": stackID, "environment_id": env.ID, "name": "shop", "parameters": map[string]any{"prefix": "shop", "cores": 1}})
	wantStatus(t, r, http.StatusAccepted)
	inst := r.json(t)["id"].(string)
	if got := s.waitInstance(t, admin, inst, status("active", "failed")); got["status"] != "active" {
		t.Fatalf("the instance: %v", got)
	}
	_, err = s.pool.Exec(t.Context(), `UPDATE environments SET expires_at = now() + interval '3 seconds' WHERE id = $1`, env.ID)
	must(t, err)

	waitFor(t, "the decommissioning", func() bool {
		return s.call(t, "GET", "/api/v1/environments/"+env.ID.String(), admin, nil).json(t)["status"] == "decommissioned"
	})
	if got := s.call(t, "GET", "/api/v1/stack-instances/"+inst, admin, nil).json(t); got["status"] != "destroyed" {
		t.Fatalf("the instance of the expired environment: %v", got)
	}
	var by string
	must(t, s.pool.QueryRow(t.Context(), `SELECT actor_email FROM audit_events WHERE action = 'stack_instance.destroy' AND target_id = $1`, inst).Scan(&by))
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
	s := newSite(t)
	zone, template := ttlZone(t, s, map[string]any{"default_ttl": "1d", "max_ttl": "7d"})
	root, admin := s.token(t, s.admin), s.token(t, s.adminA)

	for _, c := range []struct {
		body        map[string]any
		field, rule string
	}{
		{map[string]any{"ttl": "8d"}, "ttl", "max"},
		{map[string]any{"expires_at": time.Now().Add(200 * time.Hour)}, "expires_at", "max"},
		{map[string]any{"expires_at": time.Now().Add(-time.Hour)}, "expires_at", "future"},
		{map[string]any{"ttl": "a while"}, "ttl", "duration"},
	} {
		body := map[string]any{"tenant_id": s.a.ID, "name": "dev", "template_id": template}
		for k, v := range c.body {
			body[k] = v
		}
		r := s.call(t, "POST", "/api/v1/environments", admin, body)
		wantStatus(t, r, http.StatusUnprocessableEntity)
		wantProblem(t, r, c.field, c.rule)
	}
	before := time.Now()
	r := s.call(t, "POST", "/api/v1/environments", admin, map[string]any{"tenant_id": s.a.ID, "name": "dev", "template_id": template, "ttl": "3d"})
	wantStatus(t, r, http.StatusAccepted)
	env := r.json(t)
	at := expiresAt(t, env)
	if at.Before(before.Add(72*time.Hour)) || at.After(time.Now().Add(72*time.Hour)) {
		t.Fatalf("asking for 3d gave an expiry at %s", at)
	}

	// The page offers the extension; beyond the maximum it says so beside the field.
	page := "/environments/" + env["id"].(string)
	wantIn(t, s.call(t, "GET", page, admin, nil), `data-testid="extend-form"`, `data-testid="environment-expires"`)
	r = s.submit(t, page+"/extend", admin, url.Values{"by": {"30d"}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantIn(t, r, `data-field-error="by"`)
	wantStatus(t, s.submit(t, page+"/extend", admin, url.Values{"by": {"1d"}}), http.StatusSeeOther)
	if got := expiresAt(t, s.call(t, "GET", "/api/v1"+page, admin, nil).json(t)); got.Sub(at) != 24*time.Hour {
		t.Fatalf("extended by a day from the page, the expiry moved by %s", got.Sub(at))
	}

	for _, c := range []struct {
		body        map[string]any
		field, rule string
	}{
		{map[string]any{"default_ttl": "8d", "max_ttl": "7d"}, "default_ttl", "max"},
		{map[string]any{"max_ttl": "forever"}, "max_ttl", "duration"},
	} {
		r := s.call(t, "PUT", "/api/v1/landing-zones/"+zone+"/lifetimes", root, c.body)
		wantStatus(t, r, http.StatusUnprocessableEntity)
		wantProblem(t, r, c.field, c.rule)
	}
	wantStatus(t, s.call(t, "PUT", "/api/v1/landing-zones/"+zone+"/lifetimes", admin, map[string]any{"max_ttl": "1d"}), http.StatusNotFound)

	r = s.submit(t, "/landing-zones/"+zone+"/lifetimes", root, url.Values{"default_ttl": {"2d"}, "max_ttl": {"14d"}})
	wantStatus(t, r, http.StatusSeeOther)
	z := s.call(t, "GET", "/api/v1/landing-zones/"+zone, root, nil).json(t)
	if z["default_ttl"] != "2d" || z["max_ttl"] != "14d" {
		t.Fatalf("the zone's lifetimes after the form: %v, %v", z["default_ttl"], z["max_ttl"])
	}
}

// waitFor polls cond until it holds, for a few minutes at most.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(4 * time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("%s did not come within 4 minutes", what)
}

// wantProblem fails unless the reply names field and the rule it broke.
func wantProblem(t *testing.T, r reply, field, rule string) {
	t.Helper()
	if want := `"field":"` + field + `","rule":"` + rule + `"`; !strings.Contains(string(r.body), want) {
		t.Fatalf("the reply does not say %s: %s", want, r.body)
	}
}
