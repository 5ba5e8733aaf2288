package governance

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"nimbus/app/kernel/problem"
	"nimbus/app/platform/web"
)

func f(v float64) *float64 { return &v }
func n(v int) *int         { return &v }

func TestGovernanceIntersect_NarrowerLimitWinsAndSaysWhoSetIt(t *testing.T) {
	none := Intersect(nil, nil)
	if !none.IsAllowed || len(none.Parameters) != 0 || none.MaxInstances != nil {
		t.Fatalf("with no rules: %+v, want allowed without limits", none)
	}

	provider := &Rule{IsAllowed: true, MaxInstances: n(5), Constraints: map[string]Constraint{
		"cores":  {Minimum: f(2), Maximum: f(8)},
		"memory": {Maximum: f(4096)},
		"image":  {Allowed: []any{"debian-12", "ubuntu-24.04", "alma-9"}},
		"zone":   {Allowed: []any{"a", "b"}},
		"size":   {Allowed: []any{"s"}},
		"name":   {Pattern: "^web-"},
	}}
	tenant := &Rule{IsAllowed: true, MaxInstances: n(2), Constraints: map[string]Constraint{
		"cores":  {Minimum: f(1), Maximum: f(4)},
		"memory": {Maximum: f(4096)},
		"image":  {Allowed: []any{"debian-12"}},
		"zone":   {Allowed: []any{"b", "c"}},
		"size":   {Allowed: []any{"s", "m"}},
		"name":   {Pattern: "-prod$"},
	}}
	e := Intersect(provider, tenant)
	check := func(what string, got, want any) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %+v, want %+v", what, got, want)
		}
	}
	check("max instances", e.MaxInstances, &Count{Value: 2, SetBy: Tenant})
	check("cores minimum", e.Parameters["cores"].Minimum, &Bound{Value: 2, SetBy: Provider})
	check("cores maximum", e.Parameters["cores"].Maximum, &Bound{Value: 4, SetBy: Tenant})
	check("memory maximum, a tie", e.Parameters["memory"].Maximum, &Bound{Value: 4096, SetBy: Provider})
	check("image", e.Parameters["image"].Allowed, &Choice{Values: []any{"debian-12"}, SetBy: Tenant})
	check("zone", e.Parameters["zone"].Allowed, &Choice{Values: []any{"b"}, SetBy: Both})
	check("size", e.Parameters["size"].Allowed, &Choice{Values: []any{"s"}, SetBy: Provider})
	check("name", e.Parameters["name"].Patterns, []Match{{"^web-", Provider}, {"-prod$", Tenant}})
	if !e.IsAllowed {
		t.Error("denied although both allow")
	}

	deniedBy := func(p, t *Rule) string { return Intersect(p, t).DeniedBy }
	if got := deniedBy(&Rule{IsAllowed: false}, &Rule{IsAllowed: false}); got != Provider {
		t.Errorf("both deny: denied by %q, want the provider", got)
	}
	if got := deniedBy(&Rule{IsAllowed: true}, &Rule{IsAllowed: false}); got != Tenant {
		t.Errorf("the tenant denies: denied by %q", got)
	}
	if got := deniedBy(nil, &Rule{IsAllowed: false}); got != Tenant {
		t.Errorf("only the tenant has a rule and denies: denied by %q", got)
	}
}

func TestGovernanceCheck_RefusalNamesParameterRuleAndWhoSetIt(t *testing.T) {
	e := Intersect(
		&Rule{IsAllowed: true, Constraints: map[string]Constraint{
			"cores": {Maximum: f(4)},
			"image": {Allowed: []any{"debian-12", "ubuntu-24.04"}},
			"name":  {Pattern: "^web-"},
		}},
		&Rule{IsAllowed: true, Constraints: map[string]Constraint{"memory": {Minimum: f(1024)}}},
	)
	err := e.Check(map[string]any{"cores": float64(8), "image": "centos-7", "name": "db-1", "memory": 512, "other": "anything"})
	var v *problem.ValidationError
	if !errors.As(err, &v) {
		t.Fatalf("got %v, want a validation error", err)
	}
	want := []problem.FieldError{
		{Field: "parameters.cores", Rule: "maximum", Message: "8 is above the maximum of 4 set by the provider for this tenant"},
		{Field: "parameters.image", Rule: "allowed", Message: `"centos-7" is not one of the allowed values ("debian-12", "ubuntu-24.04") set by the provider for this tenant`},
		{Field: "parameters.memory", Rule: "minimum", Message: "512 is below the minimum of 1024 set by this tenant's admins"},
		{Field: "parameters.name", Rule: "pattern", Message: `"db-1" does not match the pattern ^web- set by the provider for this tenant`},
	}
	if !reflect.DeepEqual(v.Fields, want) {
		t.Fatalf("got\n%+v\nwant\n%+v", v.Fields, want)
	}

	if err := e.Check(map[string]any{"cores": 4, "image": "debian-12", "name": "web-1", "memory": float64(1024)}); err != nil {
		t.Fatalf("values within every limit refused: %v", err)
	}
	if err := e.Check(map[string]any{}); err != nil {
		t.Fatalf("absent parameters refused: %v", err)
	}
	if err := e.Check(map[string]any{"cores": "eight"}); problem.FieldOf(err) != "parameters.cores" {
		t.Fatalf("a bounded parameter given as text: %v", err)
	}
}

func TestGovernanceCheck_DeniedComponentIsForbiddenWithTheReason(t *testing.T) {
	err := Intersect(&Rule{IsAllowed: true}, &Rule{IsAllowed: false}).Check(nil)
	var d *problem.Denied
	if !errors.As(err, &d) || !errors.Is(err, problem.ErrForbidden) {
		t.Fatalf("got %v, want a Denied that is also ErrForbidden", err)
	}
	if !strings.Contains(d.Message, "this tenant's admins") {
		t.Fatalf("the refusal does not say who denied it: %q", d.Message)
	}

	// The API answers 403 with the reason, not the generic "no permission".
	e := echo.New()
	e.HTTPErrorHandler = web.ErrorHandler(slog.New(slog.DiscardHandler))
	e.POST("/api/v1/deployments", func(echo.Context) error { return fmt.Errorf("deploy: %w", err) })
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/api/v1/deployments", nil))
	if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "denied by this tenant") {
		t.Fatalf("answered %d %s", rec.Code, rec.Body)
	}
}

func TestGovernanceCheckInstances_RefusesAtTheLimit(t *testing.T) {
	e := Intersect(&Rule{IsAllowed: true, MaxInstances: n(2)}, nil)
	if err := e.checkInstances(1); err != nil {
		t.Fatalf("the second instance refused: %v", err)
	}
	err := e.checkInstances(2)
	var v *problem.ValidationError
	if !errors.As(err, &v) || v.Fields[0].Field != "max_instances" || !strings.Contains(v.Fields[0].Message, "at most 2") ||
		!strings.Contains(v.Fields[0].Message, "the provider") {
		t.Fatalf("the third instance: %v", err)
	}
	if err := Intersect(nil, nil).checkInstances(1000); err != nil {
		t.Fatalf("no limit, yet refused: %v", err)
	}
}

// machine is the input schema of the simulated-cloud machine used in tests.
var machine = schema{Properties: map[string]input{
	"name":   {Type: "string", Pattern: "^[a-z][a-z0-9-]*$", MaxLength: n(63)},
	"cores":  {Type: "integer", Minimum: f(1), Maximum: f(64)},
	"ratio":  {Type: "number"},
	"image":  {Type: "string"},
	"tier":   {Type: "string", Enum: []any{"small", "large"}},
	"tags":   {Type: "array"},
	"fast":   {Type: "boolean"},
	"labels": {Type: "object", AdditionalProperties: json.RawMessage(`{"type": "string"}`)},
}}

// refusal is what a refused rule must say: the field and rule exactly, and words of the message.
type refusal struct {
	field, rule string
	says        []string
}

func wantRefusal(t *testing.T, err error, want refusal) {
	t.Helper()
	var v *problem.ValidationError
	if !errors.As(err, &v) {
		t.Fatalf("got %v, want a refusal of %s", err, want.field)
	}
	for _, fe := range v.Fields {
		if fe.Field == want.field && fe.Rule == want.rule {
			for _, s := range want.says {
				if !strings.Contains(fe.Message, s) {
					t.Fatalf("%s (%s): %q does not say %q", fe.Field, fe.Rule, fe.Message, s)
				}
			}
			return
		}
	}
	t.Fatalf("got %v, want %s refused by rule %s", v.Fields, want.field, want.rule)
}

func TestGovernanceValidate_ConstraintMustNarrowTheSchemaAndAgreeWithItself(t *testing.T) {
	cases := map[string]struct {
		c    map[string]Constraint
		max  *int
		want refusal
	}{
		"an input the schema lacks": {c: map[string]Constraint{"gpus": {Maximum: f(1)}}, want: refusal{"parameter_constraints.gpus", "unknown", []string{"gpus is not an input"}}},
		"minimum above maximum":     {c: map[string]Constraint{"cores": {Minimum: f(8), Maximum: f(4)}}, want: refusal{"parameter_constraints.cores", "range", []string{"minimum 8 is above the maximum 4"}}},
		"minimum below the schema's": {c: map[string]Constraint{"cores": {Minimum: f(0)}},
			want: refusal{"parameter_constraints.cores.minimum", "schema", []string{"wider than the schema allows", "minimum of 1"}}},
		"maximum above the schema's": {c: map[string]Constraint{"cores": {Maximum: f(128)}},
			want: refusal{"parameter_constraints.cores.maximum", "schema", []string{"wider than the schema allows", "maximum of 64"}}},
		"minimum above the schema's maximum": {c: map[string]Constraint{"cores": {Minimum: f(65)}},
			want: refusal{"parameter_constraints.cores.minimum", "schema", []string{"no value could pass"}}},
		"a fraction for an integer": {c: map[string]Constraint{"cores": {Maximum: f(2.5)}}, want: refusal{"parameter_constraints.cores.maximum", "integer", []string{"whole number"}}},
		"bounds on text":            {c: map[string]Constraint{"image": {Maximum: f(3)}}, want: refusal{"parameter_constraints.image", "type", []string{"integer and number", "a string"}}},
		"a pattern on a number":     {c: map[string]Constraint{"cores": {Pattern: "^1"}}, want: refusal{"parameter_constraints.cores.pattern", "type", []string{"only to string"}}},
		"a pattern that does not compile": {c: map[string]Constraint{"name": {Pattern: "^web-("}},
			want: refusal{"parameter_constraints.name.pattern", "pattern", []string{"not a valid regular expression"}}},
		"a value outside the enum":   {c: map[string]Constraint{"tier": {Allowed: []any{"small", "huge"}}}, want: refusal{"parameter_constraints.tier.allowed", "schema", []string{`"huge"`, `"small", "large"`, "schema's values"}}},
		"a value of the wrong type":  {c: map[string]Constraint{"cores": {Allowed: []any{"four"}}}, want: refusal{"parameter_constraints.cores.allowed", "schema", []string{`"four" is not a number`}}},
		"a value the schema refuses": {c: map[string]Constraint{"name": {Allowed: []any{"Web"}}}, want: refusal{"parameter_constraints.name.allowed", "schema", []string{"pattern"}}},
		"a value beyond its own maximum": {c: map[string]Constraint{"cores": {Maximum: f(4), Allowed: []any{2, 8}}},
			want: refusal{"parameter_constraints.cores.allowed", "range", []string{"8 is above the maximum 4"}}},
		"objects as allowed values": {c: map[string]Constraint{"image": {Allowed: []any{map[string]any{"a": 1.0}, map[string]any{"a": 1.0}}}},
			want: refusal{"parameter_constraints.image.allowed", "schema", []string{"is not text"}}},
		"an empty list":               {c: map[string]Constraint{"image": {Allowed: []any{}}}, want: refusal{"parameter_constraints.image.allowed", "required", []string{"deny it instead"}}},
		"allowed values for an array": {c: map[string]Constraint{"tags": {Allowed: []any{"x"}}}, want: refusal{"parameter_constraints.tags.allowed", "type", []string{"an array"}}},
		"allowed values for a map": {c: map[string]Constraint{"labels": {Allowed: []any{"x"}}},
			want: refusal{"parameter_constraints.labels.allowed", "type", []string{"labels is a map of strings"}}},
		"a pattern on a map": {c: map[string]Constraint{"labels": {Pattern: "^a"}},
			want: refusal{"parameter_constraints.labels.pattern", "type", []string{"only to string inputs, and labels is a map of strings"}}},
		"bounds on a map": {c: map[string]Constraint{"labels": {Maximum: f(3)}},
			want: refusal{"parameter_constraints.labels", "type", []string{"labels is a map of strings"}}},
		"a negative instance limit": {max: n(-1), want: refusal{"max_instances", "minimum", []string{"0 or more"}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := validate(Provider, Rule{IsAllowed: true, Constraints: tc.c, MaxInstances: tc.max}, machine, nil)
			wantRefusal(t, err, tc.want)
		})
	}
}

func TestGovernanceValidate_KeepsAGoodRuleTidy(t *testing.T) {
	got, err := validate(Provider, Rule{IsAllowed: true, MaxInstances: n(0), Constraints: map[string]Constraint{
		"cores": {Minimum: f(1), Maximum: f(64), Allowed: []any{float64(2), 4, float64(2)}},
		"image": {},
		"fast":  {Allowed: []any{false}},
		"ratio": {Minimum: f(-1.5)},
		"name":  {Pattern: "^web-"},
	}}, machine, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Constraints["image"]; ok {
		t.Error("an empty constraint was kept")
	}
	if a := got.Constraints["cores"].Allowed; len(a) != 2 {
		t.Errorf("allowed values %v keep a repeat", a)
	}
	if *got.MaxInstances != 0 {
		t.Error("a limit of 0 was lost")
	}
}

func TestGovernanceValidate_TenantMayOnlyNarrowTheProvidersCeiling(t *testing.T) {
	ceiling := &Rule{IsAllowed: true, MaxInstances: n(3), Constraints: map[string]Constraint{
		"cores": {Minimum: f(2), Maximum: f(4)},
		"image": {Allowed: []any{"debian-12", "ubuntu-24.04"}},
		"name":  {Pattern: "^web-"},
	}}
	cases := map[string]struct {
		rule    Rule
		ceiling *Rule
		want    refusal
	}{
		"a maximum above the provider's": {rule: Rule{IsAllowed: true, Constraints: map[string]Constraint{"cores": {Maximum: f(8)}}},
			want: refusal{"parameter_constraints.cores.maximum", "ceiling", []string{"8 is above the provider's maximum of 4"}}},
		"a minimum below the provider's": {rule: Rule{IsAllowed: true, Constraints: map[string]Constraint{"cores": {Minimum: f(1)}}},
			want: refusal{"parameter_constraints.cores.minimum", "ceiling", []string{"1 is below the provider's minimum of 2"}}},
		"a minimum above the provider's maximum": {rule: Rule{IsAllowed: true, Constraints: map[string]Constraint{"cores": {Minimum: f(6)}}},
			want: refusal{"parameter_constraints.cores.minimum", "ceiling", []string{"no value could pass"}}},
		"a value the provider does not allow": {rule: Rule{IsAllowed: true, Constraints: map[string]Constraint{"image": {Allowed: []any{"debian-12", "centos-7"}}}},
			want: refusal{"parameter_constraints.image.allowed", "ceiling", []string{`"centos-7"`, `provider's allowed values ("debian-12", "ubuntu-24.04")`}}},
		"a value outside the provider's bounds": {rule: Rule{IsAllowed: true, Constraints: map[string]Constraint{"cores": {Allowed: []any{4, 8}}}},
			want: refusal{"parameter_constraints.cores.allowed", "ceiling", []string{"8 is above the provider's maximum of 4"}}},
		"a value outside the provider's pattern": {rule: Rule{IsAllowed: true, Constraints: map[string]Constraint{"name": {Allowed: []any{"db-1"}}}},
			want: refusal{"parameter_constraints.name.allowed", "ceiling", []string{"provider's pattern ^web-"}}},
		"more instances than the provider's": {rule: Rule{IsAllowed: true, MaxInstances: n(5)},
			want: refusal{"max_instances", "ceiling", []string{"5 is above the provider's limit of 3"}}},
		"allowing what the provider denied": {rule: Rule{IsAllowed: true}, ceiling: &Rule{IsAllowed: false},
			want: refusal{"is_allowed", "ceiling", []string{"provider has denied"}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := ceiling
			if tc.ceiling != nil {
				c = tc.ceiling
			}
			_, err := validate(Tenant, tc.rule, machine, c)
			wantRefusal(t, err, tc.want)
			// The same rule is the provider's to set.
			if _, err := validate(Provider, tc.rule, machine, nil); err != nil {
				t.Fatalf("the provider may set it, yet: %v", err)
			}
		})
	}

	narrower := Rule{IsAllowed: true, MaxInstances: n(1), Constraints: map[string]Constraint{
		"cores": {Minimum: f(3), Maximum: f(3)},
		"image": {Allowed: []any{"ubuntu-24.04"}},
		"name":  {Pattern: "-prod$"},
	}}
	if _, err := validate(Tenant, narrower, machine, ceiling); err != nil {
		t.Fatalf("a narrower rule refused: %v", err)
	}
	if _, err := validate(Tenant, Rule{IsAllowed: false}, machine, &Rule{IsAllowed: false}); err != nil {
		t.Fatalf("denying what the provider denied refused: %v", err)
	}
	if _, err := validate(Tenant, Rule{IsAllowed: true, MaxInstances: nil}, machine, ceiling); err != nil {
		t.Fatalf("leaving out a limit the provider set is not widening it, yet: %v", err)
	}
}
