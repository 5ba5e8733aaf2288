package governance

import (
	"reflect"
	"testing"

	"nimbus/app/kernel/problem"
)

func TestGovernanceChangeFromForm_ReadsValuesAsTheInputsTypes(t *testing.T) {
	params := []Param{{Name: "cores", Type: "integer", Bounded: true, Listed: true}, {Name: "image", Type: "string", Listed: true, Patterned: true},
		{Name: "fast", Type: "boolean", Listed: true}, {Name: "memory", Type: "integer", Bounded: true}}
	ch, err := changeFromForm("tenant", map[string]string{
		"is_allowed": "false", "max_instances": " 3 ",
		"parameter_constraints.cores.maximum": "4", "parameter_constraints.cores.allowed": "2, 4",
		"parameter_constraints.image.allowed": "debian-12, ubuntu-24.04", "parameter_constraints.image.pattern": "^d",
		"parameter_constraints.fast.allowed": "false", "parameter_constraints.memory.minimum": "",
	}, params)
	if err != nil {
		t.Fatal(err)
	}
	want := Change{Scope: "tenant", IsAllowed: ptr(false), MaxInstances: ptr(3), ParameterConstraints: map[string]Constraint{
		"cores": {Maximum: ptr(4.0), Allowed: []any{2.0, 4.0}},
		"image": {Allowed: []any{"debian-12", "ubuntu-24.04"}, Pattern: "^d"},
		"fast":  {Allowed: []any{false}},
	}}
	if !reflect.DeepEqual(ch, want) {
		t.Fatalf("got %+v\nwant %+v", ch, want)
	}

	_, err = changeFromForm("tenant", map[string]string{"is_allowed": "maybe", "max_instances": "two",
		"parameter_constraints.cores.maximum": "NaN", "parameter_constraints.memory.minimum": "Inf",
		"parameter_constraints.cores.allowed": "2, four", "parameter_constraints.fast.allowed": "yes please"}, params)
	got := map[string]bool{}
	if v, ok := err.(*problem.ValidationError); ok {
		for _, f := range v.Fields {
			got[f.Field] = true
		}
	}
	for _, field := range []string{"is_allowed", "max_instances", "parameter_constraints.cores.maximum", "parameter_constraints.memory.minimum",
		"parameter_constraints.cores.allowed", "parameter_constraints.fast.allowed"} {
		if !got[field] {
			t.Errorf("%s not refused (%v)", field, err)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func TestGovernanceAllowedList_QuotesKeepCommas(t *testing.T) {
	params := []Param{{Name: "tags", Type: "string", Listed: true}}
	ch, err := changeFromForm("tenant", map[string]string{"is_allowed": "true",
		"parameter_constraints.tags.allowed": `plain, "a, b", "say ""hi"""`}, params)
	if err != nil {
		t.Fatal(err)
	}
	want := []any{"plain", "a, b", `say "hi"`}
	if got := ch.ParameterConstraints["tags"].Allowed; !reflect.DeepEqual(got, want) {
		t.Fatalf("read %q, want %q", got, want)
	}
	// What the form shows of a saved rule reads back as the same values.
	shown := formValues(&Rule{IsAllowed: true, Constraints: map[string]Constraint{"tags": {Allowed: want}}})["parameter_constraints.tags.allowed"]
	again, err := changeFromForm("tenant", map[string]string{"is_allowed": "true", "parameter_constraints.tags.allowed": shown}, params)
	if err != nil || !reflect.DeepEqual(again.ParameterConstraints["tags"].Allowed, want) {
		t.Fatalf("shown as %s, read back as %v (%v)", shown, again.ParameterConstraints["tags"].Allowed, err)
	}
	_, err = changeFromForm("tenant", map[string]string{"is_allowed": "true", "parameter_constraints.tags.allowed": `"open`}, params)
	if problem.FieldOf(err) != "parameter_constraints.tags.allowed" {
		t.Fatalf("an unclosed quote: %v", err)
	}
}
