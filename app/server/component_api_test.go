package server_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"nimbus/app/access"
	"nimbus/app/environment"
)

func machineJSON(t testing.TB, name string) map[string]any {
	t.Helper()
	read := func(f string) string {
		b, err := os.ReadFile("../component/testdata/" + f)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	return map[string]any{
		"name": name, "display_name": "Machine", "description": "A <b>machine</b>", "provider": "simcloud",
		"semantic_type": "VirtualMachine", "language": "yaml", "code": read("machine.yaml"),
		"input_schema": json.RawMessage(read("machine.inputs.json")), "output_schema": json.RawMessage(read("machine.outputs.json")),
	}
}

// publish publishes the draft as it is now: it reads the draft's revision first, as a client
// that reviewed the draft would have.
func (s *site) publish(t testing.TB, token, id, changelog string) reply {
	t.Helper()
	r := s.call(t, "GET", "/api/v1/components/"+id, token, nil)
	wantStatus(t, r, http.StatusOK)
	return s.call(t, "POST", "/api/v1/components/"+id+"/publish", token, map[string]any{"changelog": changelog, "revision": r.json(t)["revision"]})
}

func TestAPI_ComponentLifecycle(t *testing.T) {
	s := newSite(t)
	admin := s.token(t, s.admin)

	r := s.call(t, "POST", "/api/v1/components", admin, machineJSON(t, "api-machine"))
	wantStatus(t, r, http.StatusCreated)
	id := r.json(t)["id"].(string)

	// Invalid edits are refused with where and why; nothing changes.
	r = s.call(t, "PATCH", "/api/v1/components/"+id, admin, map[string]any{"code": "name: x\nruntime: yaml\nresorces: {}\n"})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.body), `"line":3`) || !strings.Contains(string(r.body), "did you mean") {
		t.Fatalf("no position or suggestion: %s", r.body)
	}
	wantStatus(t, s.publish(t, admin, id, " "), http.StatusUnprocessableEntity)

	// The engine can run simcloud programs here, so it must pass the draft before it is published.
	r = s.publish(t, admin, id, "first")
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.body), `"field":"check"`) {
		t.Fatalf("publish without a check: %s", r.body)
	}
	if got := s.check(t, admin, id); got["status"] != "succeeded" {
		t.Fatalf("check: %v %s", got["status"], got["output"])
	}
	r = s.publish(t, admin, id, "first")
	wantStatus(t, r, http.StatusCreated)
	r = s.call(t, "PATCH", "/api/v1/components/"+id, admin, map[string]any{"code": machineJSON(t, "x")["code"].(string) + "# second\n"})
	wantStatus(t, r, http.StatusOK)
	// The passed check was of the old program: the new one needs its own.
	wantStatus(t, s.publish(t, admin, id, "second"), http.StatusUnprocessableEntity)
	s.check(t, admin, id)
	wantStatus(t, s.publish(t, admin, id, "second"), http.StatusCreated)

	r = s.call(t, "GET", "/api/v1/components/"+id+"/versions", admin, nil)
	var vs struct{ Versions []struct{ Version int } }
	_ = json.Unmarshal(r.body, &vs)
	if len(vs.Versions) != 2 || vs.Versions[0].Version != 2 {
		t.Fatalf("versions = %s", r.body)
	}
	r = s.call(t, "GET", "/api/v1/components/"+id+"/versions/1", admin, nil)
	wantStatus(t, r, http.StatusOK)
	if !strings.Contains(r.json(t)["code"].(string), "simcloud:index:Machine") {
		t.Fatal("version 1 lacks its code")
	}
	wantStatus(t, s.call(t, "GET", "/api/v1/components/"+id+"/versions/9", admin, nil), http.StatusNotFound)

	r = s.call(t, "GET", "/api/v1/components?search=api-mach&provider=simcloud&published=true", admin, nil)
	if !strings.Contains(string(r.body), `"latest_version":2`) {
		t.Fatalf("catalog search: %s", r.body)
	}
	r = s.call(t, "GET", "/api/v1/components?provider=aws", admin, nil)
	if strings.Contains(string(r.body), "api-machine") {
		t.Fatal("provider filter let simcloud through")
	}

	wantStatus(t, s.call(t, "POST", "/api/v1/components", admin, machineJSON(t, "api-machine")), http.StatusUnprocessableEntity)
	bad := machineJSON(t, "other")
	bad["provider"] = "nope"
	r = s.call(t, "POST", "/api/v1/components", admin, bad)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.body), `"field":"provider"`) {
		t.Fatalf("unknown provider: %s", r.body)
	}

	wantStatus(t, s.call(t, "DELETE", "/api/v1/components/"+id, admin, nil), http.StatusNoContent)
	wantStatus(t, s.call(t, "GET", "/api/v1/components/"+id, admin, nil), http.StatusNotFound)
}

func TestAPI_CheckRunsTheEngine(t *testing.T) {
	s := newSite(t)
	admin := s.token(t, s.admin)
	r := s.call(t, "POST", "/api/v1/components", admin, machineJSON(t, "checked-machine"))
	wantStatus(t, r, http.StatusCreated)
	id := r.json(t)["id"].(string)

	got := s.check(t, admin, id)
	if got["status"] != "succeeded" {
		t.Fatalf("check of a good program: %v\n%s", got["status"], got["output"])
	}
	// A property the provider does not know passes static validation; the engine catches it.
	r = s.call(t, "PATCH", "/api/v1/components/"+id, admin, map[string]any{
		"code": strings.Replace(machineJSON(t, "x")["code"].(string), "memoryMb:", "memoryMB:", 1),
	})
	wantStatus(t, r, http.StatusOK)
	got = s.check(t, admin, id)
	if got["status"] != "failed" || !strings.Contains(got["output"].(string), "memoryMB") {
		t.Fatalf("check of a bad property: %v\n%s", got["status"], got["output"])
	}
}

// check asks for a check of a component's draft and waits for its result.
func (s *site) check(t testing.TB, token, id string) map[string]any {
	t.Helper()
	r := s.call(t, "POST", "/api/v1/components/"+id+"/check", token, nil)
	wantStatus(t, r, http.StatusAccepted)
	checkID := r.json(t)["id"].(string)
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		got := s.call(t, "GET", "/api/v1/checks/"+checkID, token, nil).json(t)
		if got["status"] == "succeeded" || got["status"] == "failed" {
			return got
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("the check did not finish in 2 minutes")
	return nil
}

func TestPages_ComponentTextIsShownAsText(t *testing.T) {
	s := newSite(t)
	admin := s.token(t, s.admin)
	in := machineJSON(t, "escaped-machine")
	in["display_name"] = `<script>alert("name")</script>`
	in["description"] = `<img src=x onerror=alert(1)>`
	r := s.call(t, "POST", "/api/v1/components", admin, in)
	wantStatus(t, r, http.StatusCreated)
	id := r.json(t)["id"].(string)

	b := newBrowser(t, s.url)
	b.signIn(t, "root@example.com", "correct horse battery")
	for _, path := range []string{"/catalog?search=escaped", "/components/" + id, "/components/" + id + "/edit"} {
		body := string(b.get(t, path).body)
		if strings.Contains(body, `<script>alert("name")`) || strings.Contains(body, `<img src=x`) {
			t.Fatalf("%s renders author text as HTML", path)
		}
		if !strings.Contains(body, `&lt;script&gt;alert(`) {
			t.Fatalf("%s does not show the display name as text", path)
		}
	}
}

func TestPages_DiffComparesEachPart(t *testing.T) {
	s := newSite(t)
	admin := s.token(t, s.admin)
	r := s.call(t, "POST", "/api/v1/components", admin, machineJSON(t, "diffed-machine"))
	id := r.json(t)["id"].(string)
	s.check(t, admin, id)
	wantStatus(t, s.publish(t, admin, id, "one"), http.StatusCreated)
	schema := strings.Replace(string(machineJSON(t, "x")["input_schema"].(json.RawMessage)), `"maximum": 64, "default": 2`, `"maximum": 64, "default": 4`, 1)
	wantStatus(t, s.call(t, "PATCH", "/api/v1/components/"+id, admin, map[string]any{"input_schema": json.RawMessage(schema)}), http.StatusOK)
	s.check(t, admin, id)
	wantStatus(t, s.publish(t, admin, id, "two"), http.StatusCreated)

	b := newBrowser(t, s.url)
	b.signIn(t, "root@example.com", "correct horse battery")
	body := string(b.get(t, "/components/"+id+"/diff?from=1&to=2&part=input_schema").body)
	if !strings.Contains(body, `&#34;default&#34;: 2`) && !strings.Contains(body, `"default": 2`) {
		t.Fatalf("the inputs diff lacks v1's default: %.2000s", body)
	}
	if !strings.Contains(body, `: 4,`) {
		t.Fatal("the inputs diff lacks v2's default")
	}
	wantStatus(t, b.get(t, "/components/"+id+"/diff?from=1&to=7"), http.StatusNotFound)
}

func TestPages_CheckSavesWhatTheEditorHolds(t *testing.T) {
	s := newSite(t)
	admin := s.token(t, s.admin)
	in := machineJSON(t, "form-checked")
	r := s.call(t, "POST", "/api/v1/components", admin, in)
	id := r.json(t)["id"].(string)

	b := newBrowser(t, s.url)
	b.signIn(t, "root@example.com", "correct horse battery")
	b.get(t, "/components/"+id+"/edit")
	form := url.Values{
		"_csrf": {b.csrf}, "display_name": {"Edited"}, "language": {"yaml"},
		"code":         {strings.Replace(in["code"].(string), "memoryMb:", "memoryMB:", 1)},
		"input_schema": {string(in["input_schema"].(json.RawMessage))}, "output_schema": {string(in["output_schema"].(json.RawMessage))},
		"resolver_bindings": {"{}"},
	}
	r = b.post(t, "/components/"+id+"/check", form, "HX-Request", "true")
	wantStatus(t, r, http.StatusAccepted)
	got := s.call(t, "GET", "/api/v1/components/"+id, admin, nil).json(t)
	if got["display_name"] != "Edited" || !strings.Contains(got["code"].(string), "memoryMB") {
		t.Fatal("checking did not save what the editor held")
	}
	form.Set("code", "name: x\nruntime: yaml\nresorces: {}\n")
	r = b.post(t, "/components/"+id+"/check", form, "HX-Request", "true")
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.body), "Not checked") || !strings.Contains(string(r.body), "did you mean") {
		t.Fatalf("a draft with problems is checked or not explained: %s", r.body)
	}
}

func TestAPI_ComponentBadNumbersAndOwners(t *testing.T) {
	s := newSite(t)
	admin := s.token(t, s.admin)
	in := machineJSON(t, "owned")
	in["tenant_id"] = "00000000-0000-0000-0000-000000000009"
	r := s.call(t, "POST", "/api/v1/components", admin, in)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.body), `"field":"tenant_id"`) {
		t.Fatalf("unknown tenant: %s", r.body)
	}
	wantStatus(t, s.call(t, "GET", "/api/v1/components?page=2147483647", admin, nil), http.StatusUnprocessableEntity)
	id := s.call(t, "POST", "/api/v1/components", admin, machineJSON(t, "numbered")).json(t)["id"].(string)
	s.check(t, admin, id)
	wantStatus(t, s.publish(t, admin, id, "one"), http.StatusCreated)
	wantStatus(t, s.call(t, "GET", "/api/v1/components/"+id+"/versions/4294967297", admin, nil), http.StatusNotFound)
}

// versionCount is how many versions of the component are published.
func (s *site) versionCount(t testing.TB, token, id string) int {
	t.Helper()
	r := s.call(t, "GET", "/api/v1/components/"+id+"/versions", token, nil)
	wantStatus(t, r, http.StatusOK)
	return len(r.json(t)["versions"].([]any))
}

func TestAPI_PublishRefusesADraftChangedSinceItWasReviewed(t *testing.T) {
	s := newSite(t)
	admin := s.token(t, s.admin)
	r := s.call(t, "POST", "/api/v1/components", admin, machineJSON(t, "reviewed-machine"))
	wantStatus(t, r, http.StatusCreated)
	id := r.json(t)["id"].(string)
	if rev := r.json(t)["revision"]; rev != 1.0 {
		t.Fatalf("a new draft is at revision %v, want 1", rev)
	}
	s.check(t, admin, id)
	// Each change of the draft is a revision; a save that changes nothing is not.
	for _, want := range []float64{2, 2} {
		r = s.call(t, "PATCH", "/api/v1/components/"+id, admin, map[string]any{"description": "Reviewed"})
		wantStatus(t, r, http.StatusOK)
		if rev := r.json(t)["revision"]; rev != want {
			t.Fatalf("after the save the draft is at revision %v, want %v", rev, want)
		}
	}
	cases := []struct {
		name          string
		body          map[string]any
		field, rule   string
		wantInMessage string
	}{
		{"no revision", map[string]any{"changelog": "one"}, "revision", "required", "give the revision of the draft you reviewed"},
		{"an older revision", map[string]any{"changelog": "one", "revision": 1}, "revision", "current",
			"the draft is at revision 2; you reviewed revision 1: review the changes and publish again"},
		{"a revision yet to come", map[string]any{"changelog": "one", "revision": 3}, "revision", "current",
			"the draft is at revision 2; you reviewed revision 3"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := s.call(t, "POST", "/api/v1/components/"+id+"/publish", admin, c.body)
			wantStatus(t, r, http.StatusUnprocessableEntity)
			mentions(t, r, `"field":"`+c.field+`","rule":"`+c.rule+`"`)
			mentions(t, r, c.wantInMessage)
			if n := s.versionCount(t, admin, id); n != 0 {
				t.Fatalf("a refused publish published %d versions", n)
			}
		})
	}
	r = s.call(t, "POST", "/api/v1/components/"+id+"/publish", admin, map[string]any{"changelog": "one", "revision": 2})
	wantStatus(t, r, http.StatusCreated)
	if r.json(t)["version"] != 1.0 {
		t.Fatalf("published %s", r.body)
	}
}

var revisionField = regexp.MustCompile(`name="revision" value="(\d+)"`)

func TestPages_PublishFormRefusesADraftChangedSinceThePageShowedIt(t *testing.T) {
	s := newSite(t)
	admin := s.token(t, s.admin)
	id := s.call(t, "POST", "/api/v1/components", admin, machineJSON(t, "form-reviewed")).json(t)["id"].(string)
	s.check(t, admin, id)
	b := newBrowser(t, s.url)
	b.signIn(t, "root@example.com", "correct horse battery")
	page := b.get(t, "/components/"+id+"/edit")
	if m := revisionField.FindSubmatch(page.body); m == nil || string(m[1]) != "1" || !strings.Contains(string(page.body), `data-testid="revision">1<`) {
		t.Fatalf("the editor does not show and send revision 1: %.4000s", page.body)
	}
	// Someone else changes the draft while the page is open.
	wantStatus(t, s.call(t, "PATCH", "/api/v1/components/"+id, admin, map[string]any{"display_name": "Changed meanwhile"}), http.StatusOK)
	publish := url.Values{"_csrf": {b.csrf}, "changelog": {"one"}, "revision": {"1"}}
	r := b.post(t, "/components/"+id+"/publish", publish)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	mentions(t, r, "the draft changed after you opened it")
	mentions(t, r, "the draft is at revision 2; you reviewed revision 1: review the changes and publish again")
	// The editor shows the draft as it is now, and its form sends that revision.
	if m := revisionField.FindSubmatch(r.body); m == nil || string(m[1]) != "2" || !strings.Contains(string(r.body), "Changed meanwhile") {
		t.Fatalf("the refusal does not show the current draft at revision 2: %.4000s", r.body)
	}
	if n := s.versionCount(t, admin, id); n != 0 {
		t.Fatalf("a stale publish published %d versions", n)
	}
	// A save from the editor by htmx tells the page the revision it now shows.
	in := machineJSON(t, "x")
	saved := b.post(t, "/components/"+id+"/draft", url.Values{"_csrf": {b.csrf}, "display_name": {"Saved here"}, "description": {""},
		"language": {"yaml"}, "code": {in["code"].(string)}, "input_schema": {string(in["input_schema"].(json.RawMessage))},
		"output_schema": {string(in["output_schema"].(json.RawMessage))}, "resolver_bindings": {"{}"}}, "HX-Request", "true")
	wantStatus(t, saved, http.StatusOK)
	if m := revisionField.FindSubmatch(saved.body); m == nil || string(m[1]) != "3" || !strings.Contains(string(saved.body), `hx-swap-oob="true"`) {
		t.Fatalf("the save does not hand the page revision 3: %s", saved.body)
	}
	publish.Set("revision", "3")
	wantStatus(t, b.post(t, "/components/"+id+"/publish", publish), http.StatusSeeOther)
	if n := s.versionCount(t, admin, id); n != 1 {
		t.Fatalf("%d versions after publishing the current draft", n)
	}
}

func TestAPI_CatalogCountsTheViewersDeploymentsOnly(t *testing.T) {
	s := newSite(t)
	userB := s.member(t, "user-b@example.com", s.b.ID, access.User)
	tokens := map[string]string{"user A": s.token(t, s.userA), "reader A": s.token(t, s.readerA), "user B": s.token(t, userB),
		"admin B": s.token(t, s.adminB), "provider admin": s.token(t, s.admin)}
	// Tenant A runs one machine of the shared component, tenant B two.
	for _, d := range []struct {
		tenant uuid.UUID
		admin  access.Principal
		by     string
		names  []string
	}{{s.a.ID, s.adminA, "user A", []string{"a-1"}}, {s.b.ID, s.adminB, "user B", []string{"b-1", "b-2"}}} {
		env, err := environment.NewService(s.pool).Create(t.Context(), d.admin, d.tenant, "dev")
		must(t, err)
		for _, name := range d.names {
			r := s.call(t, "POST", "/api/v1/deployments", tokens[d.by], map[string]any{"component_id": s.shared.ID, "environment_id": env.ID,
				"name": name, "parameters": map[string]any{"name": name}})
			wantStatus(t, r, http.StatusAccepted)
			s.waitOperation(t, tokens[d.by], r.json(t)["operation"].(map[string]any)["id"].(string))
		}
	}
	for viewer, want := range map[string]float64{"user A": 1, "reader A": 1, "user B": 2, "admin B": 2, "provider admin": 3} {
		t.Run(viewer, func(t *testing.T) {
			r := s.call(t, "GET", "/api/v1/components?search=shared-machine", tokens[viewer], nil)
			wantStatus(t, r, http.StatusOK)
			list := r.json(t)["components"].([]any)
			if len(list) != 1 || list[0].(map[string]any)["deployments"] != want {
				t.Fatalf("the catalog counts %v deployments for %s, want %v: %s", list[0].(map[string]any)["deployments"], viewer, want, r.body)
			}
		})
	}
	b := newBrowser(t, s.url)
	b.signIn(t, "user-a@example.com", "long enough password")
	if page := string(b.get(t, "/catalog?search=shared-machine").body); !strings.Contains(page, `data-testid="deployments">1 deployment<`) {
		t.Fatalf("the catalog page counts others' deployments for user A: %.4000s", page)
	}
}
