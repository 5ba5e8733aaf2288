package stack

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"nimbus/app/domain/component"
)

func TestCompile_TypesAndNames(t *testing.T) {
	scope := Scope{}
	scope.AddSchema("params", &component.Schema{Properties: map[string]*component.Property{
		"cores": {Type: "integer"}, "name": {Type: "string"}, "tags": {Type: "array", Items: &component.Property{Type: "string"}},
		"ratio": {Type: "number"},
	}})
	scope.AddSchema("slots.net.outputs", &component.Schema{Properties: map[string]*component.Property{"subnet_id": {Type: "string"}}})
	for _, c := range []struct {
		expr, want, err string
		in              map[string]any
		out             any
	}{
		{expr: `params.cores * 2`, want: "integer", in: map[string]any{"params.cores": 2.0}, out: 4.0},
		{expr: `params.cores * 2`, want: "number", in: map[string]any{"params.cores": 3.0}, out: 6.0},
		// A number that happens to be whole is still a number to CEL.
		{expr: `params.ratio * 1.5`, want: "number", in: map[string]any{"params.ratio": 2.0}, out: 3.0},
		{expr: `params.name + "-" + slots.net.outputs.subnet_id`, want: "string",
			in: map[string]any{"params.name": "web", "slots.net.outputs.subnet_id": "s-1"}, out: "web-s-1"},
		{expr: `params.tags + ["x"]`, want: "array", in: map[string]any{"params.tags": []any{"a"}}, out: []any{"a", "x"}},
		{expr: `params.cores`, want: "string", err: "gives an integer, and this input takes a string"},
		{expr: `params.memory`, want: "integer", err: "params.memory not known here"},
		{expr: `slots.db.outputs.host`, want: "string", err: "slots.db.outputs.host not known here"},
		{expr: `params.cores +`, want: "integer", err: "Syntax error"},
		{expr: ` `, want: "integer", err: "empty"},
	} {
		e, err := Compile(c.expr, scope, &component.Property{Type: c.want})
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want one saying %q", c.expr, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.expr, err)
		}
		got, err := e.Eval(context.Background(), c.in)
		if err != nil {
			t.Fatalf("%s: eval: %v", c.expr, err)
		}
		if !reflect.DeepEqual(got, c.out) {
			t.Errorf("%s = %#v, want %#v", c.expr, got, c.out)
		}
	}
}

func TestEval_BoundsWork(t *testing.T) {
	scope := Scope{}
	scope.AddSchema("params", &component.Schema{Properties: map[string]*component.Property{"n": {Type: "integer"}}})
	e, err := Compile(`[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10].all(c, [1,2,3,4,5,6,7,8,9,10].all(d, [1,2,3,4,5,6,7,8,9,10].all(e, a+b+c+d+e > params.n)))))`, scope, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Eval(context.Background(), map[string]any{"params.n": 0.0}); err == nil || !strings.Contains(err.Error(), "cost") {
		t.Fatalf("an expression doing 100000 steps evaluated: %v", err)
	}
}

func TestSlotsIn(t *testing.T) {
	got := SlotsIn(`slots.net.outputs.id + slots.db.outputs.host + "slots.fake" + slots.net.outputs.x`)
	if !reflect.DeepEqual(got, []string{"net", "db"}) {
		t.Fatalf("SlotsIn = %v", got)
	}
}

// A map of strings is a map(string, string) to CEL: read, built and handed on as a map.
func TestCompile_AMapOfStrings(t *testing.T) {
	labels := &component.Property{Type: "object", AdditionalProperties: &component.Property{Type: "string"}}
	scope := Scope{}
	scope.AddSchema("params", &component.Schema{Properties: map[string]*component.Property{
		"labels": labels, "name": {Type: "string"}, "cores": {Type: "integer"},
	}})
	in := map[string]any{"params.labels": map[string]any{"team": "blue"}, "params.name": "web", "params.cores": 2.0}
	for _, c := range []struct {
		expr string
		want *component.Property
		out  any
		err  string
	}{
		{expr: `params.labels`, want: labels, out: map[string]any{"team": "blue"}},
		{expr: `{"app": params.name, "team": params.labels["team"]}`, want: labels, out: map[string]any{"app": "web", "team": "blue"}},
		{expr: `params.labels.team + "-" + params.name`, want: &component.Property{Type: "string"}, out: "blue-web"},
		{expr: `{"cores": params.cores}`, want: labels, err: "gives an object, and this input takes a map of strings"},
		{expr: `params.labels`, want: &component.Property{Type: "string"}, err: "gives a map of strings, and this input takes a string"},
	} {
		e, err := Compile(c.expr, scope, c.want)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want one saying %q", c.expr, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.expr, err)
		}
		got, err := e.Eval(context.Background(), in)
		if err != nil {
			t.Fatalf("%s: eval: %v", c.expr, err)
		}
		if !reflect.DeepEqual(got, c.out) {
			t.Errorf("%s = %#v, want %#v", c.expr, got, c.out)
		}
	}
	if sameType(labels, &component.Property{Type: "object", Properties: map[string]*component.Property{"a": {Type: "string"}}}) {
		t.Error("an object of named properties is wired where a map of strings is taken")
	}
}
