package component_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/uuid"

	"nimbus/app/apptest"
	"nimbus/app/kernel/access"
	"nimbus/app/orchestration/environment"
)

func machineJSON(t testing.TB, name string) map[string]any {
	t.Helper()
	read := func(f string) string {
		b, err := os.ReadFile("testdata/" + f)
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

func TestAPI_ComponentLifecycle(t *testing.T) {
	s := apptest.NewSite(t)
	admin := s.Token(t, s.Admin)

	r := s.Call(t, "POST", "/api/v1/components", admin, machineJSON(t, "api-machine"))
	apptest.WantStatus(t, r, http.StatusCreated)
	id := r.JSON(t)["id"].(string)

	// Invalid edits are refused with where and why; nothing changes.
	r = s.Call(t, "PATCH", "/api/v1/components/"+id, admin, map[string]any{"code": "name: x\nruntime: yaml\nresorces: {}\n"})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.Body), `"line":3`) || !strings.Contains(string(r.Body), "did you mean") {
		t.Fatalf("no position or suggestion: %s", r.Body)
	}
	apptest.WantStatus(t, s.Publish(t, admin, id, " "), http.StatusUnprocessableEntity)

	// The engine can run simcloud programs here, so it must pass the draft before it is published.
	r = s.Publish(t, admin, id, "first")
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.Body), `"field":"check"`) {
		t.Fatalf("publish without a check: %s", r.Body)
	}
	if got := s.Check(t, admin, id); got["status"] != "succeeded" {
		t.Fatalf("check: %v %s", got["status"], got["output"])
	}
	r = s.Publish(t, admin, id, "first")
	apptest.WantStatus(t, r, http.StatusCreated)
	r = s.Call(t, "PATCH", "/api/v1/components/"+id, admin, map[string]any{"code": machineJSON(t, "x")["code"].(string) + "# second\n"})
	apptest.WantStatus(t, r, http.StatusOK)
	// The passed check was of the old program: the new one needs its own.
	apptest.WantStatus(t, s.Publish(t, admin, id, "second"), http.StatusUnprocessableEntity)
	s.Check(t, admin, id)
	apptest.WantStatus(t, s.Publish(t, admin, id, "second"), http.StatusCreated)

	r = s.Call(t, "GET", "/api/v1/components/"+id+"/versions", admin, nil)
	var vs struct{ Versions []struct{ Version int } }
	_ = json.Unmarshal(r.Body, &vs)
	if len(vs.Versions) != 2 || vs.Versions[0].Version != 2 {
		t.Fatalf("versions = %s", r.Body)
	}
	r = s.Call(t, "GET", "/api/v1/components/"+id+"/versions/1", admin, nil)
	apptest.WantStatus(t, r, http.StatusOK)
	if !strings.Contains(r.JSON(t)["code"].(string), "simcloud:index:Machine") {
		t.Fatal("version 1 lacks its code")
	}
	apptest.WantStatus(t, s.Call(t, "GET", "/api/v1/components/"+id+"/versions/9", admin, nil), http.StatusNotFound)

	r = s.Call(t, "GET", "/api/v1/components?search=api-mach&provider=simcloud&published=true", admin, nil)
	if !strings.Contains(string(r.Body), `"latest_version":2`) {
		t.Fatalf("catalog search: %s", r.Body)
	}
	r = s.Call(t, "GET", "/api/v1/components?provider=aws", admin, nil)
	if strings.Contains(string(r.Body), "api-machine") {
		t.Fatal("provider filter let simcloud through")
	}

	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/components", admin, machineJSON(t, "api-machine")), http.StatusUnprocessableEntity)
	bad := machineJSON(t, "other")
	bad["provider"] = "nope"
	r = s.Call(t, "POST", "/api/v1/components", admin, bad)
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.Body), `"field":"provider"`) {
		t.Fatalf("unknown provider: %s", r.Body)
	}

	apptest.WantStatus(t, s.Call(t, "DELETE", "/api/v1/components/"+id, admin, nil), http.StatusNoContent)
	apptest.WantStatus(t, s.Call(t, "GET", "/api/v1/components/"+id, admin, nil), http.StatusNotFound)
}

func TestAPI_CheckRunsTheEngine(t *testing.T) {
	s := apptest.NewSite(t)
	admin := s.Token(t, s.Admin)
	r := s.Call(t, "POST", "/api/v1/components", admin, machineJSON(t, "checked-machine"))
	apptest.WantStatus(t, r, http.StatusCreated)
	id := r.JSON(t)["id"].(string)

	got := s.Check(t, admin, id)
	if got["status"] != "succeeded" {
		t.Fatalf("check of a good program: %v\n%s", got["status"], got["output"])
	}
	// A property the provider does not know passes static validation; the engine catches it.
	r = s.Call(t, "PATCH", "/api/v1/components/"+id, admin, map[string]any{
		"code": strings.Replace(machineJSON(t, "x")["code"].(string), "memoryMb:", "memoryMB:", 1),
	})
	apptest.WantStatus(t, r, http.StatusOK)
	got = s.Check(t, admin, id)
	if got["status"] != "failed" || !strings.Contains(got["output"].(string), "memoryMB") {
		t.Fatalf("check of a bad property: %v\n%s", got["status"], got["output"])
	}
}

func TestPages_ComponentTextIsShownAsText(t *testing.T) {
	s := apptest.NewSite(t)
	admin := s.Token(t, s.Admin)
	in := machineJSON(t, "escaped-machine")
	in["display_name"] = `<script>alert("name")</script>`
	in["description"] = `<img src=x onerror=alert(1)>`
	r := s.Call(t, "POST", "/api/v1/components", admin, in)
	apptest.WantStatus(t, r, http.StatusCreated)
	id := r.JSON(t)["id"].(string)

	b := apptest.NewBrowser(t, s.URL)
	b.SignIn(t, "root@example.com", "correct horse battery")
	for _, path := range []string{"/catalog?search=escaped", "/components/" + id, "/components/" + id + "/edit"} {
		body := string(b.Get(t, path).Body)
		if strings.Contains(body, `<script>alert("name")`) || strings.Contains(body, `<img src=x`) {
			t.Fatalf("%s renders author text as HTML", path)
		}
		if !strings.Contains(body, `&lt;script&gt;alert(`) {
			t.Fatalf("%s does not show the display name as text", path)
		}
	}
}

func TestPages_DiffComparesEachPart(t *testing.T) {
	s := apptest.NewSite(t)
	admin := s.Token(t, s.Admin)
	r := s.Call(t, "POST", "/api/v1/components", admin, machineJSON(t, "diffed-machine"))
	id := r.JSON(t)["id"].(string)
	s.Check(t, admin, id)
	apptest.WantStatus(t, s.Publish(t, admin, id, "one"), http.StatusCreated)
	schema := strings.Replace(string(machineJSON(t, "x")["input_schema"].(json.RawMessage)), `"maximum": 64, "default": 2`, `"maximum": 64, "default": 4`, 1)
	apptest.WantStatus(t, s.Call(t, "PATCH", "/api/v1/components/"+id, admin, map[string]any{"input_schema": json.RawMessage(schema)}), http.StatusOK)
	s.Check(t, admin, id)
	apptest.WantStatus(t, s.Publish(t, admin, id, "two"), http.StatusCreated)

	b := apptest.NewBrowser(t, s.URL)
	b.SignIn(t, "root@example.com", "correct horse battery")
	body := string(b.Get(t, "/components/"+id+"/diff?from=1&to=2&part=input_schema").Body)
	if !strings.Contains(body, `&#34;default&#34;: 2`) && !strings.Contains(body, `"default": 2`) {
		t.Fatalf("the inputs diff lacks v1's default: %.2000s", body)
	}
	if !strings.Contains(body, `: 4,`) {
		t.Fatal("the inputs diff lacks v2's default")
	}
	apptest.WantStatus(t, b.Get(t, "/components/"+id+"/diff?from=1&to=7"), http.StatusNotFound)
}

func TestPages_CheckSavesWhatTheEditorHolds(t *testing.T) {
	s := apptest.NewSite(t)
	admin := s.Token(t, s.Admin)
	in := machineJSON(t, "form-checked")
	r := s.Call(t, "POST", "/api/v1/components", admin, in)
	id := r.JSON(t)["id"].(string)

	b := apptest.NewBrowser(t, s.URL)
	b.SignIn(t, "root@example.com", "correct horse battery")
	b.Get(t, "/components/"+id+"/edit")
	form := url.Values{
		"_csrf": {b.CSRF}, "display_name": {"Edited"}, "language": {"yaml"},
		"code":         {strings.Replace(in["code"].(string), "memoryMb:", "memoryMB:", 1)},
		"input_schema": {string(in["input_schema"].(json.RawMessage))}, "output_schema": {string(in["output_schema"].(json.RawMessage))},
		"resolver_bindings": {"{}"},
	}
	r = b.Post(t, "/components/"+id+"/check", form, "HX-Request", "true")
	apptest.WantStatus(t, r, http.StatusAccepted)
	got := s.Call(t, "GET", "/api/v1/components/"+id, admin, nil).JSON(t)
	if got["display_name"] != "Edited" || !strings.Contains(got["code"].(string), "memoryMB") {
		t.Fatal("checking did not save what the editor held")
	}
	form.Set("code", "name: x\nruntime: yaml\nresorces: {}\n")
	r = b.Post(t, "/components/"+id+"/check", form, "HX-Request", "true")
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.Body), "Not checked") || !strings.Contains(string(r.Body), "did you mean") {
		t.Fatalf("a draft with problems is checked or not explained: %s", r.Body)
	}
}

func TestAPI_ComponentBadNumbersAndOwners(t *testing.T) {
	s := apptest.NewSite(t)
	admin := s.Token(t, s.Admin)
	in := machineJSON(t, "owned")
	in["tenant_id"] = "00000000-0000-0000-0000-000000000009"
	r := s.Call(t, "POST", "/api/v1/components", admin, in)
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.Body), `"field":"tenant_id"`) {
		t.Fatalf("unknown tenant: %s", r.Body)
	}
	apptest.WantStatus(t, s.Call(t, "GET", "/api/v1/components?page=2147483647", admin, nil), http.StatusUnprocessableEntity)
	id := s.Call(t, "POST", "/api/v1/components", admin, machineJSON(t, "numbered")).JSON(t)["id"].(string)
	s.Check(t, admin, id)
	apptest.WantStatus(t, s.Publish(t, admin, id, "one"), http.StatusCreated)
	apptest.WantStatus(t, s.Call(t, "GET", "/api/v1/components/"+id+"/versions/4294967297", admin, nil), http.StatusNotFound)
}

func TestAPI_PublishRefusesADraftChangedSinceItWasReviewed(t *testing.T) {
	s := apptest.NewSite(t)
	admin := s.Token(t, s.Admin)
	r := s.Call(t, "POST", "/api/v1/components", admin, machineJSON(t, "reviewed-machine"))
	apptest.WantStatus(t, r, http.StatusCreated)
	id := r.JSON(t)["id"].(string)
	if rev := r.JSON(t)["revision"]; rev != 1.0 {
		t.Fatalf("a new draft is at revision %v, want 1", rev)
	}
	s.Check(t, admin, id)
	// Each change of the draft is a revision; a save that changes nothing is not.
	for _, want := range []float64{2, 2} {
		r = s.Call(t, "PATCH", "/api/v1/components/"+id, admin, map[string]any{"description": "Reviewed"})
		apptest.WantStatus(t, r, http.StatusOK)
		if rev := r.JSON(t)["revision"]; rev != want {
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
			r := s.Call(t, "POST", "/api/v1/components/"+id+"/publish", admin, c.body)
			apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
			apptest.Mentions(t, r, `"field":"`+c.field+`","rule":"`+c.rule+`"`)
			apptest.Mentions(t, r, c.wantInMessage)
			if n := s.VersionCount(t, admin, id); n != 0 {
				t.Fatalf("a refused publish published %d versions", n)
			}
		})
	}
	r = s.Call(t, "POST", "/api/v1/components/"+id+"/publish", admin, map[string]any{"changelog": "one", "revision": 2})
	apptest.WantStatus(t, r, http.StatusCreated)
	if r.JSON(t)["version"] != 1.0 {
		t.Fatalf("published %s", r.Body)
	}
}

var revisionField = regexp.MustCompile(`name="revision" value="(\d+)"`)

func TestPages_PublishFormRefusesADraftChangedSinceThePageShowedIt(t *testing.T) {
	s := apptest.NewSite(t)
	admin := s.Token(t, s.Admin)
	id := s.Call(t, "POST", "/api/v1/components", admin, machineJSON(t, "form-reviewed")).JSON(t)["id"].(string)
	s.Check(t, admin, id)
	b := apptest.NewBrowser(t, s.URL)
	b.SignIn(t, "root@example.com", "correct horse battery")
	page := b.Get(t, "/components/"+id+"/edit")
	if m := revisionField.FindSubmatch(page.Body); m == nil || string(m[1]) != "1" || !strings.Contains(string(page.Body), `data-testid="revision">1<`) {
		t.Fatalf("the editor does not show and send revision 1: %.4000s", page.Body)
	}
	// Someone else changes the draft while the page is open.
	apptest.WantStatus(t, s.Call(t, "PATCH", "/api/v1/components/"+id, admin, map[string]any{"display_name": "Changed meanwhile"}), http.StatusOK)
	publish := url.Values{"_csrf": {b.CSRF}, "changelog": {"one"}, "revision": {"1"}}
	r := b.Post(t, "/components/"+id+"/publish", publish)
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	apptest.Mentions(t, r, "the draft changed after you opened it")
	apptest.Mentions(t, r, "the draft is at revision 2; you reviewed revision 1: review the changes and publish again")
	// The editor shows the draft as it is now, and its form sends that revision.
	if m := revisionField.FindSubmatch(r.Body); m == nil || string(m[1]) != "2" || !strings.Contains(string(r.Body), "Changed meanwhile") {
		t.Fatalf("the refusal does not show the current draft at revision 2: %.4000s", r.Body)
	}
	if n := s.VersionCount(t, admin, id); n != 0 {
		t.Fatalf("a stale publish published %d versions", n)
	}
	// A save from the editor by htmx tells the page the revision it now shows.
	in := machineJSON(t, "x")
	saved := b.Post(t, "/components/"+id+"/draft", url.Values{"_csrf": {b.CSRF}, "display_name": {"Saved here"}, "description": {""},
		"language": {"yaml"}, "code": {in["code"].(string)}, "input_schema": {string(in["input_schema"].(json.RawMessage))},
		"output_schema": {string(in["output_schema"].(json.RawMessage))}, "resolver_bindings": {"{}"}}, "HX-Request", "true")
	apptest.WantStatus(t, saved, http.StatusOK)
	if m := revisionField.FindSubmatch(saved.Body); m == nil || string(m[1]) != "3" || !strings.Contains(string(saved.Body), `hx-swap-oob="true"`) {
		t.Fatalf("the save does not hand the page revision 3: %s", saved.Body)
	}
	publish.Set("revision", "3")
	apptest.WantStatus(t, b.Post(t, "/components/"+id+"/publish", publish), http.StatusSeeOther)
	if n := s.VersionCount(t, admin, id); n != 1 {
		t.Fatalf("%d versions after publishing the current draft", n)
	}
}

func TestAPI_CatalogCountsTheViewersDeploymentsOnly(t *testing.T) {
	s := apptest.NewSite(t)
	userB := s.Member(t, "user-b@example.com", s.B.ID, access.User)
	tokens := map[string]string{"user A": s.Token(t, s.UserA), "reader A": s.Token(t, s.ReaderA), "user B": s.Token(t, userB),
		"admin B": s.Token(t, s.AdminB), "provider admin": s.Token(t, s.Admin)}
	// Tenant A runs one machine of the shared component, tenant B two.
	for _, d := range []struct {
		tenant uuid.UUID
		admin  access.Principal
		by     string
		names  []string
	}{{s.A.ID, s.AdminA, "user A", []string{"a-1"}}, {s.B.ID, s.AdminB, "user B", []string{"b-1", "b-2"}}} {
		env, err := environment.NewService(s.Pool).Create(t.Context(), d.admin, d.tenant, "dev")
		apptest.Must(t, err)
		for _, name := range d.names {
			r := s.Call(t, "POST", "/api/v1/deployments", tokens[d.by], map[string]any{"component_id": s.Shared.ID, "environment_id": env.ID,
				"name": name, "parameters": map[string]any{"name": name}})
			apptest.WantStatus(t, r, http.StatusAccepted)
			s.WaitOperation(t, tokens[d.by], r.JSON(t)["operation"].(map[string]any)["id"].(string))
		}
	}
	for viewer, want := range map[string]float64{"user A": 1, "reader A": 1, "user B": 2, "admin B": 2, "provider admin": 3} {
		t.Run(viewer, func(t *testing.T) {
			r := s.Call(t, "GET", "/api/v1/components?search=shared-machine", tokens[viewer], nil)
			apptest.WantStatus(t, r, http.StatusOK)
			list := r.JSON(t)["components"].([]any)
			if len(list) != 1 || list[0].(map[string]any)["deployments"] != want {
				t.Fatalf("the catalog counts %v deployments for %s, want %v: %s", list[0].(map[string]any)["deployments"], viewer, want, r.Body)
			}
		})
	}
	b := apptest.NewBrowser(t, s.URL)
	b.SignIn(t, "user-a@example.com", "long enough password")
	if page := string(b.Get(t, "/catalog?search=shared-machine").Body); !strings.Contains(page, `data-testid="deployments">1 deployment<`) {
		t.Fatalf("the catalog page counts others' deployments for user A: %.4000s", page)
	}
}
