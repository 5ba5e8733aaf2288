package governance_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/kernel/problem"
)

func TestGovernanceAPI_ProviderCeilingTenantNarrowsNeverWidens(t *testing.T) {
	s := apptest.NewSite(t)
	admin, adminA, userA, readerA, adminB := s.Token(t, s.Admin), s.Token(t, s.AdminA), s.Token(t, s.UserA), s.Token(t, s.ReaderA), s.Token(t, s.AdminB)
	path := "/api/v1/tenants/" + s.A.ID.String() + "/governance/" + s.Shared.ID.String()

	r := s.Call(t, "GET", path, readerA, nil)
	apptest.WantStatus(t, r, http.StatusOK)
	if got := r.JSON(t); got["provider"] != nil || got["tenant"] != nil || got["effective"].(map[string]any)["is_allowed"] != true {
		t.Fatalf("before any rule: %s", r.Body)
	}

	r = s.Call(t, "PUT", path, admin, map[string]any{"is_allowed": true, "max_instances": 2,
		"parameter_constraints": map[string]any{"cores": map[string]any{"maximum": 4}, "image": map[string]any{"allowed": []string{"debian-12", "ubuntu-24.04"}}}})
	apptest.WantStatus(t, r, http.StatusOK)
	if got := r.JSON(t); got["provider"] == nil || got["tenant"] != nil {
		t.Fatalf("a provider admin's rule without a scope is the provider's: %s", r.Body)
	}

	refusals := []struct {
		name        string
		body        any
		field, rule string
		says        string
	}{
		{"a maximum above the provider's", map[string]any{"is_allowed": true, "parameter_constraints": map[string]any{"cores": map[string]any{"maximum": 8}}},
			"parameter_constraints.cores.maximum", "ceiling", "8 is above the provider's maximum of 4"},
		{"a value the provider does not allow", map[string]any{"is_allowed": true, "parameter_constraints": map[string]any{"image": map[string]any{"allowed": []string{"centos-7"}}}},
			"parameter_constraints.image.allowed", "ceiling", `"debian-12", "ubuntu-24.04"`},
		{"more instances than the provider's", map[string]any{"is_allowed": true, "max_instances": 3},
			"max_instances", "ceiling", "provider's limit of 2"},
		{"an input the component lacks", map[string]any{"is_allowed": true, "parameter_constraints": map[string]any{"gpus": map[string]any{"maximum": 1}}},
			"parameter_constraints.gpus", "unknown", "not an input"},
		{"a minimum above the maximum", map[string]any{"is_allowed": true, "parameter_constraints": map[string]any{"cores": map[string]any{"minimum": 3, "maximum": 2}}},
			"parameter_constraints.cores", "range", "minimum 3 is above the maximum 2"},
		{"a pattern that does not compile", map[string]any{"is_allowed": true, "parameter_constraints": map[string]any{"name": map[string]any{"pattern": "(["}}},
			"parameter_constraints.name.pattern", "pattern", "not a valid regular expression"},
		{"no is_allowed", map[string]any{"max_instances": 1}, "is_allowed", "required", "true"},
		{"an unknown scope", map[string]any{"scope": "global", "is_allowed": true}, "scope", "one_of", "provider or tenant"},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			r := s.Call(t, "PUT", path, adminA, tc.body)
			apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
			var body struct{ Errors []problem.FieldError }
			if err := json.Unmarshal(r.Body, &body); err != nil || len(body.Errors) == 0 {
				t.Fatalf("no field errors: %s", r.Body)
			}
			e := body.Errors[0]
			if e.Field != tc.field || e.Rule != tc.rule || !strings.Contains(e.Message, tc.says) {
				t.Fatalf("got %+v, want %s (%s) saying %q", e, tc.field, tc.rule, tc.says)
			}
		})
	}
	for name, body := range map[string]string{
		"an unknown field":          `{"is_allowed": true, "colour": "red"}`,
		"an unknown constraint key": `{"is_allowed": true, "parameter_constraints": {"cores": {"max": 4}}}`,
		"a maximum as text":         `{"is_allowed": true, "parameter_constraints": {"cores": {"maximum": "4"}}}`,
		"not JSON":                  `{"is_allowed": tru`,
	} {
		t.Run(name, func(t *testing.T) { apptest.WantStatus(t, s.Call(t, "PUT", path, adminA, body), http.StatusBadRequest) })
	}
	apptest.WantStatus(t, s.Call(t, "PUT", path, userA, map[string]any{"is_allowed": true}), http.StatusForbidden)
	apptest.WantStatus(t, s.Call(t, "PUT", path, adminA, map[string]any{"scope": "provider", "is_allowed": true}), http.StatusForbidden)
	apptest.WantStatus(t, s.Call(t, "PUT", path, adminB, map[string]any{"is_allowed": true}), http.StatusNotFound)
	apptest.WantStatus(t, s.Call(t, "GET", path, adminB, nil), http.StatusNotFound)
	apptest.WantStatus(t, s.Call(t, "GET", "/api/v1/tenants/"+s.A.ID.String()+"/governance/"+s.OfA.ID.String(), adminA, nil), http.StatusNotFound)
	apptest.WantStatus(t, s.Call(t, "GET", "/api/v1/tenants/"+s.A.ID.String()+"/governance/not-an-id", adminA, nil), http.StatusNotFound)

	r = s.Call(t, "GET", path, readerA, nil)
	if strings.Contains(string(r.Body), `"tenant":{`) {
		t.Fatalf("a refused rule was saved: %s", r.Body)
	}

	r = s.Call(t, "PUT", path, adminA, map[string]any{"is_allowed": true, "max_instances": 1,
		"parameter_constraints": map[string]any{"cores": map[string]any{"maximum": 2}}})
	apptest.WantStatus(t, r, http.StatusOK)
	var v struct {
		Provider, Tenant *struct {
			MaxInstances *int `json:"max_instances"`
		}
		Effective struct {
			Parameters map[string]struct {
				Maximum *struct {
					Value float64 `json:"value"`
					SetBy string  `json:"set_by"`
				} `json:"maximum"`
				Allowed *struct {
					Values []any  `json:"values"`
					SetBy  string `json:"set_by"`
				} `json:"allowed"`
			} `json:"parameters"`
			MaxInstances *struct {
				Value int    `json:"value"`
				SetBy string `json:"set_by"`
			} `json:"max_instances"`
		}
	}
	if err := json.Unmarshal(s.Call(t, "GET", path, readerA, nil).Body, &v); err != nil {
		t.Fatal(err)
	}
	cores, image := v.Effective.Parameters["cores"], v.Effective.Parameters["image"]
	if v.Provider == nil || v.Tenant == nil || cores.Maximum == nil || cores.Maximum.Value != 2 || cores.Maximum.SetBy != "tenant" ||
		image.Allowed == nil || image.Allowed.SetBy != "provider" || v.Effective.MaxInstances == nil || v.Effective.MaxInstances.SetBy != "tenant" {
		t.Fatalf("the effective rule is not the intersection with who set each part: %+v", v)
	}

	r = s.Call(t, "GET", "/api/v1/tenants/"+s.A.ID.String()+"/governance", readerA, nil)
	apptest.WantStatus(t, r, http.StatusOK)
	if !strings.Contains(string(r.Body), s.Shared.ID.String()) || strings.Contains(string(r.Body), s.OfA.ID.String()) {
		t.Fatalf("the overview lists %s", r.Body)
	}

	audit := s.Call(t, "GET", "/api/v1/audit-events?action=governance.set", adminA, nil)
	apptest.WantStatus(t, audit, http.StatusOK)
	if n := strings.Count(string(audit.Body), `"governance.set"`); n != 2 {
		t.Fatalf("%d governance.set events in tenant A's audit log, want 2: %s", n, audit.Body)
	}

	// The tenant admin removes their own rule; the provider's ceiling is left alone.
	apptest.WantStatus(t, s.Call(t, "DELETE", path+"?scope=provider", adminA, nil), http.StatusForbidden)
	apptest.WantStatus(t, s.Call(t, "DELETE", path+"?scope=all", adminA, nil), http.StatusUnprocessableEntity)
	r = s.Call(t, "DELETE", path+"?scope=tenant", adminA, nil)
	apptest.WantStatus(t, r, http.StatusOK)
	v.Provider, v.Tenant = nil, nil
	if err := json.Unmarshal(r.Body, &v); err != nil {
		t.Fatal(err)
	}
	if v.Tenant != nil || v.Provider == nil || v.Effective.MaxInstances == nil || v.Effective.MaxInstances.SetBy != "provider" {
		t.Fatalf("after removing the tenant's rule: %s", r.Body)
	}
}

func TestGovernancePages_EachAdminEditsTheirOwnRule(t *testing.T) {
	s := apptest.NewSite(t)
	base := "/tenants/" + s.A.ID.String() + "/governance"
	rule := base + "/" + s.Shared.ID.String()

	root := apptest.NewBrowser(t, s.URL)
	root.SignIn(t, "root@example.com", "correct horse battery")
	if page := string(root.Get(t, "/tenants/"+s.A.ID.String()).Body); !strings.Contains(page, `href="`+base+`"`) {
		t.Fatal("the tenant page does not link to its governance")
	}
	root.Get(t, rule)
	form := url.Values{"_csrf": {root.CSRF}, "scope": {"provider"}, "is_allowed": {"true"}, "max_instances": {"2"},
		"parameter_constraints.cores.maximum": {"4"}, "parameter_constraints.image.allowed": {"debian-12, ubuntu-24.04"}}
	apptest.WantStatus(t, root.Post(t, rule, form), http.StatusSeeOther)

	b := apptest.NewBrowser(t, s.URL)
	b.SignIn(t, "admin-a@example.com", "long enough password")
	page := string(b.Get(t, base).Body)
	if !strings.Contains(page, s.Shared.Name) || !strings.Contains(page, "cores: at most 4 (set by the provider for this tenant)") {
		t.Fatalf("the overview does not show the effective rule: %.3000s", page)
	}
	page = string(b.Get(t, rule).Body)
	if !strings.Contains(page, `data-testid="form-tenant"`) || strings.Contains(page, `data-testid="form-provider"`) ||
		!strings.Contains(page, `<td class="muted">at most 4</td>`) {
		t.Fatalf("the tenant admin does not get their own form with the provider's ceiling beside it: %.3000s", page)
	}
	if page := string(root.Get(t, rule).Body); !strings.Contains(page, `data-testid="form-provider"`) ||
		!strings.Contains(page, `value="debian-12, ubuntu-24.04"`) {
		t.Fatalf("the provider admin does not get the ceiling's form, filled in: %.3000s", page)
	}

	form = url.Values{"_csrf": {b.CSRF}, "scope": {"tenant"}, "is_allowed": {"true"}, "max_instances": {""},
		"parameter_constraints.cores.maximum": {"8"}, "parameter_constraints.image.allowed": {"debian-12"}}
	r := b.Post(t, rule, form)
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	if body := string(r.Body); !strings.Contains(body, `data-field-error="parameter_constraints.cores.maximum"`) ||
		!strings.Contains(body, "provider&#39;s maximum of 4") || !strings.Contains(body, `value="8"`) {
		t.Fatalf("the refusal is not beside the field, or the typed value is lost: %.4000s", body)
	}
	form.Set("parameter_constraints.cores.maximum", "two")
	r = b.Post(t, rule, form)
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.Body), `data-field-error="parameter_constraints.cores.maximum"`) {
		t.Fatalf("a maximum that is not a number: %.3000s", r.Body)
	}

	form.Set("parameter_constraints.cores.maximum", "2")
	apptest.WantStatus(t, b.Post(t, rule, form), http.StatusSeeOther)
	if page := string(b.Get(t, rule).Body); !strings.Contains(page, "cores: at most 2 (set by this tenant&#39;s admins)") {
		t.Fatalf("the saved rule does not bind: %.3000s", page)
	}
	form.Set("scope", "provider")
	apptest.WantStatus(t, b.Post(t, rule, form), http.StatusForbidden)
}
