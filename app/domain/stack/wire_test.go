package stack

import (
	"reflect"
	"strings"
	"testing"

	"nimbus/app/domain/component"
	"nimbus/app/kernel/problem"
)

// A map parameter wires into a map input as a map, by name or through an expression; what is
// not a map of strings is refused where it is wired.
func TestWire_AMapOfStringsReachesTheSlotAsAMap(t *testing.T) {
	strMap := func() *component.Property {
		return &component.Property{Type: "object", AdditionalProperties: &component.Property{Type: "string"}}
	}
	schemas := Schemas{
		Params: &component.Schema{Properties: map[string]*component.Property{"labels": strMap(), "tenant": {Type: "string"},
			"settings": {Type: "object", Properties: map[string]*component.Property{"a": {Type: "string"}}}}},
		Inputs: map[string]*component.Schema{"ns": {Properties: map[string]*component.Property{"labels": strMap(), "annotations": strMap()}}},
	}
	slot := Slot{Name: "ns", Inputs: map[string]Wiring{
		"labels":      {Kind: Param, Param: "labels"},
		"annotations": {Kind: Expression, Expr: `{"nimbus.io/tenant": params.tenant, "team": params.labels.team}`},
	}}
	def := Definition{Slots: []Slot{slot}}
	for input, w := range slot.Inputs {
		v := &problem.ValidationError{}
		checkWiring(def, schemas, slot, input, w, "slots.ns.inputs."+input, v)
		if v.Err() != nil {
			t.Fatalf("%s: %v", input, v.Err())
		}
	}
	got, err := Wire(t.Context(), schemas, slot, Values(map[string]any{"labels": map[string]any{"team": "blue"}, "tenant": "acme"}, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"labels": map[string]any{"team": "blue"}, "annotations": map[string]any{"nimbus.io/tenant": "acme", "team": "blue"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("wired %v, want %v", got, want)
	}

	for _, c := range []struct {
		w    Wiring
		want string
	}{
		{Wiring{Kind: Param, Param: "settings"}, "parameter settings is an object, and this input takes a map of strings"},
		{Wiring{Kind: Param, Param: "tenant"}, "is a string, and this input takes a map of strings"},
		{Wiring{Kind: Literal, Value: map[string]any{"team": 5.0}}, `at key "team": 5 is not a string`},
		{Wiring{Kind: Expression, Expr: `{"n": 1}`}, "gives an object, and this input takes a map of strings"},
	} {
		v := &problem.ValidationError{}
		checkWiring(def, schemas, slot, "labels", c.w, "slots.ns.inputs.labels", v)
		if v.Err() == nil || !strings.Contains(v.Err().Error(), c.want) {
			t.Errorf("%+v: %v, want a problem saying %q", c.w, v.Err(), c.want)
		}
	}
}

// quota is a slot wired every way, with secret parameters and inputs, and what the parameters
// alone give of it when tier is large.
func quota() (Schemas, Slot, map[string]Known) {
	str := func(secret bool) *component.Property { return &component.Property{Type: "string", Secret: secret} }
	schemas := Schemas{
		Params: &component.Schema{Properties: map[string]*component.Property{"tier": str(false), "password": str(true)}},
		Inputs: map[string]*component.Schema{"quota": {Properties: map[string]*component.Property{
			"tier": str(false), "pods": str(false), "kind": str(false), "namespace": str(false),
			"owner": str(false), "hint": str(false), "token": str(true), "broken": str(false)}}},
		Outputs: map[string]*component.Schema{"ns": {Properties: map[string]*component.Property{"namespace": str(false)}}},
	}
	slot := Slot{Name: "quota", Inputs: map[string]Wiring{
		"tier":      {Kind: Param, Param: "tier"},
		"pods":      {Kind: Expression, Expr: `{"small": "20", "large": "80"}[params.tier]`},
		"kind":      {Kind: Literal, Value: "tier"},
		"namespace": {Kind: Output, Slot: "ns", Output: "namespace"},
		"owner":     {Kind: Expression, Expr: `slots.ns.outputs.namespace + "-" + params.tier`},
		"hint":      {Kind: Expression, Expr: `params.password + "!"`},
		"token":     {Kind: Param, Param: "tier"},
		"broken":    {Kind: Expression, Expr: `{"small": "20"}[params.tier]`},
	}}
	want := map[string]Known{
		"tier": {Value: "large", Kind: Param, Params: []string{"tier"}},
		"pods": {Value: "80", Kind: Expression, Params: []string{"tier"}},
		"kind": {Value: "tier", Kind: Literal},
	}
	return schemas, slot, want
}

// What the parameters alone give is worked out with the parameters it comes from; nothing read
// from an upstream output, a secret parameter or into a secret input is, so nothing shown or
// quoted from it is a secret.
func TestFromParams_GivesWhatTheParametersAloneWorkOut(t *testing.T) {
	schemas, slot, want := quota()
	got := FromParams(t.Context(), schemas, slot, map[string]any{"tier": "large", "password": "hunter2"})
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("known %+v, want %+v", got, want)
	}
}

// What Wire gave a slot shows as FromParams would have worked it out, secrets and outputs left
// out, from the values given rather than by evaluating anything again.
func TestFromWired_ShowsWhatWireGaveAsFromParamsWould(t *testing.T) {
	schemas, slot, want := quota()
	wired := map[string]any{"tier": "large", "pods": "80", "kind": "tier", "namespace": "ns-1", "owner": "ns-1-large",
		"hint": "hunter2!", "token": "large"}
	if got := FromWired(schemas, slot, wired); !reflect.DeepEqual(got, want) {
		t.Fatalf("known %+v, want %+v", got, want)
	}
}
