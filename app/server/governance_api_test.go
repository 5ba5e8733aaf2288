package server_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"nimbus/app/problem"
)

func TestGovernanceAPI_ProviderCeilingTenantNarrowsNeverWidens(t *testing.T) {
	s := newSite(t)
	admin, adminA, userA, readerA, adminB := s.token(t, s.admin), s.token(t, s.adminA), s.token(t, s.userA), s.token(t, s.readerA), s.token(t, s.adminB)
	path := "/api/v1/tenants/" + s.a.ID.String() + "/governance/" + s.shared.ID.String()

	r := s.call(t, "GET", path, readerA, nil)
	wantStatus(t, r, http.StatusOK)
	if got := r.json(t); got["provider"] != nil || got["tenant"] != nil || got["effective"].(map[string]any)["is_allowed"] != true {
		t.Fatalf("before any rule: %s", r.body)
	}

	r = s.call(t, "PUT", path, admin, map[string]any{"is_allowed": true, "max_instances": 2,
		"parameter_constraints": map[string]any{"cores": map[string]any{"maximum": 4}, "image": map[string]any{"allowed": []string{"debian-12", "ubuntu-24.04"}}}})
	wantStatus(t, r, http.StatusOK)
	if got := r.json(t); got["provider"] == nil || got["tenant"] != nil {
		t.Fatalf("a provider admin's rule without a scope is the provider's: %s", r.body)
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
			r := s.call(t, "PUT", path, adminA, tc.body)
			wantStatus(t, r, http.StatusUnprocessableEntity)
			var body struct{ Errors []problem.FieldError }
			if err := json.Unmarshal(r.body, &body); err != nil || len(body.Errors) == 0 {
				t.Fatalf("no field errors: %s", r.body)
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
		t.Run(name, func(t *testing.T) { wantStatus(t, s.call(t, "PUT", path, adminA, body), http.StatusBadRequest) })
	}
	wantStatus(t, s.call(t, "PUT", path, userA, map[string]any{"is_allowed": true}), http.StatusForbidden)
	wantStatus(t, s.call(t, "PUT", path, adminA, map[string]any{"scope": "provider", "is_allowed": true}), http.StatusForbidden)
	wantStatus(t, s.call(t, "PUT", path, adminB, map[string]any{"is_allowed": true}), http.StatusNotFound)
	wantStatus(t, s.call(t, "GET", path, adminB, nil), http.StatusNotFound)
	wantStatus(t, s.call(t, "GET", "/api/v1/tenants/"+s.a.ID.String()+"/governance/"+s.ofA.ID.String(), adminA, nil), http.StatusNotFound)
	wantStatus(t, s.call(t, "GET", "/api/v1/tenants/"+s.a.ID.String()+"/governance/not-an-id", adminA, nil), http.StatusNotFound)

	r = s.call(t, "GET", path, readerA, nil)
	if strings.Contains(string(r.body), `"tenant":{`) {
		t.Fatalf("a refused rule was saved: %s", r.body)
	}

	r = s.call(t, "PUT", path, adminA, map[string]any{"is_allowed": true, "max_instances": 1,
		"parameter_constraints": map[string]any{"cores": map[string]any{"maximum": 2}}})
	wantStatus(t, r, http.StatusOK)
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
	if err := json.Unmarshal(s.call(t, "GET", path, readerA, nil).body, &v); err != nil {
		t.Fatal(err)
	}
	cores, image := v.Effective.Parameters["cores"], v.Effective.Parameters["image"]
	if v.Provider == nil || v.Tenant == nil || cores.Maximum == nil || cores.Maximum.Value != 2 || cores.Maximum.SetBy != "tenant" ||
		image.Allowed == nil || image.Allowed.SetBy != "provider" || v.Effective.MaxInstances == nil || v.Effective.MaxInstances.SetBy != "tenant" {
		t.Fatalf("the effective rule is not the intersection with who set each part: %+v", v)
	}

	r = s.call(t, "GET", "/api/v1/tenants/"+s.a.ID.String()+"/governance", readerA, nil)
	wantStatus(t, r, http.StatusOK)
	if !strings.Contains(string(r.body), s.shared.ID.String()) || strings.Contains(string(r.body), s.ofA.ID.String()) {
		t.Fatalf("the overview lists %s", r.body)
	}

	audit := s.call(t, "GET", "/api/v1/audit-events?action=governance.set", adminA, nil)
	wantStatus(t, audit, http.StatusOK)
	if n := strings.Count(string(audit.body), `"governance.set"`); n != 2 {
		t.Fatalf("%d governance.set events in tenant A's audit log, want 2: %s", n, audit.body)
	}

	// The tenant admin removes their own rule; the provider's ceiling is left alone.
	wantStatus(t, s.call(t, "DELETE", path+"?scope=provider", adminA, nil), http.StatusForbidden)
	wantStatus(t, s.call(t, "DELETE", path+"?scope=all", adminA, nil), http.StatusUnprocessableEntity)
	r = s.call(t, "DELETE", path+"?scope=tenant", adminA, nil)
	wantStatus(t, r, http.StatusOK)
	v.Provider, v.Tenant = nil, nil
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatal(err)
	}
	if v.Tenant != nil || v.Provider == nil || v.Effective.MaxInstances == nil || v.Effective.MaxInstances.SetBy != "provider" {
		t.Fatalf("after removing the tenant's rule: %s", r.body)
	}
}

func TestGovernancePages_EachAdminEditsTheirOwnRule(t *testing.T) {
	s := newSite(t)
	base := "/tenants/" + s.a.ID.String() + "/governance"
	rule := base + "/" + s.shared.ID.String()

	root := newBrowser(t, s.url)
	root.signIn(t, "root@example.com", "correct horse battery")
	if page := string(root.get(t, "/tenants/"+s.a.ID.String()).body); !strings.Contains(page, `href="`+base+`"`) {
		t.Fatal("the tenant page does not link to its governance")
	}
	root.get(t, rule)
	form := url.Values{"_csrf": {root.csrf}, "scope": {"provider"}, "is_allowed": {"true"}, "max_instances": {"2"},
		"parameter_constraints.cores.maximum": {"4"}, "parameter_constraints.image.allowed": {"debian-12, ubuntu-24.04"}}
	wantStatus(t, root.post(t, rule, form), http.StatusSeeOther)

	b := newBrowser(t, s.url)
	b.signIn(t, "admin-a@example.com", "long enough password")
	page := string(b.get(t, base).body)
	if !strings.Contains(page, s.shared.Name) || !strings.Contains(page, "cores: at most 4 (set by the provider for this tenant)") {
		t.Fatalf("the overview does not show the effective rule: %.3000s", page)
	}
	page = string(b.get(t, rule).body)
	if !strings.Contains(page, `data-testid="form-tenant"`) || strings.Contains(page, `data-testid="form-provider"`) ||
		!strings.Contains(page, `<td class="muted">at most 4</td>`) {
		t.Fatalf("the tenant admin does not get their own form with the provider's ceiling beside it: %.3000s", page)
	}
	if page := string(root.get(t, rule).body); !strings.Contains(page, `data-testid="form-provider"`) ||
		!strings.Contains(page, `value="debian-12, ubuntu-24.04"`) {
		t.Fatalf("the provider admin does not get the ceiling's form, filled in: %.3000s", page)
	}

	form = url.Values{"_csrf": {b.csrf}, "scope": {"tenant"}, "is_allowed": {"true"}, "max_instances": {""},
		"parameter_constraints.cores.maximum": {"8"}, "parameter_constraints.image.allowed": {"debian-12"}}
	r := b.post(t, rule, form)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if body := string(r.body); !strings.Contains(body, `data-field-error="parameter_constraints.cores.maximum"`) ||
		!strings.Contains(body, "provider&#39;s maximum of 4") || !strings.Contains(body, `value="8"`) {
		t.Fatalf("the refusal is not beside the field, or the typed value is lost: %.4000s", body)
	}
	form.Set("parameter_constraints.cores.maximum", "two")
	r = b.post(t, rule, form)
	wantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.body), `data-field-error="parameter_constraints.cores.maximum"`) {
		t.Fatalf("a maximum that is not a number: %.3000s", r.body)
	}

	form.Set("parameter_constraints.cores.maximum", "2")
	wantStatus(t, b.post(t, rule, form), http.StatusSeeOther)
	if page := string(b.get(t, rule).body); !strings.Contains(page, "cores: at most 2 (set by this tenant&#39;s admins)") {
		t.Fatalf("the saved rule does not bind: %.3000s", page)
	}
	form.Set("scope", "provider")
	wantStatus(t, b.post(t, rule, form), http.StatusForbidden)
}
