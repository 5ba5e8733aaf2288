package component

import (
	"strings"
	"testing"

	"nimbus/app/kernel/problem"
)

const labelsSchema = `{"type": "object", "properties": {
	"labels": {"type": "object", "additionalProperties": {"type": "string"}, "default": {"tier": "web"}}}}`

func TestParseSchema_AMapOfStrings(t *testing.T) {
	v := &problem.ValidationError{}
	s := ParseSchema("input_schema", []byte(labelsSchema), v)
	if v.Err() != nil || !s.Properties["labels"].IsMap() {
		t.Fatalf("a map of strings: %v", v.Err())
	}
	for _, c := range []struct{ name, prop, want string }{
		{"values of another type", `{"type": "object", "additionalProperties": {"type": "integer"}}`, `must be {"type": "string"}`},
		{"constraints on values", `{"type": "object", "additionalProperties": {"type": "string", "maxLength": 3}}`, `must be {"type": "string"}`},
		{"properties beside", `{"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}}`, "not both"},
		{"a bare true", `{"type": "object", "additionalProperties": true}`, `"additionalProperties" must be an object`},
		{"a default that is not a map of strings", `{"type": "object", "additionalProperties": {"type": "string"}, "default": {"n": 1}}`, `the default`},
		{"a map in a list", `{"type": "array", "items": {"type": "object", "additionalProperties": {"type": "string"}}}`, "items"},
		{"reserved keys on a string", `{"type": "string", "x-reserved-keys": ["a"]}`, "only to a map"},
		{"length rules on the map", `{"type": "object", "additionalProperties": {"type": "string"}, "maxLength": 3}`, "apply only to strings"},
	} {
		v := &problem.ValidationError{}
		ParseSchema("input_schema", []byte(`{"type": "object", "properties": {"labels": `+c.prop+`}}`), v)
		if v.Err() == nil || !strings.Contains(v.Err().Error(), c.want) {
			t.Errorf("%s: %v, want a problem saying %q", c.name, v.Err(), c.want)
		}
	}
}

func TestSchemaApply_AMapOfStringsNamesEachBadEntry(t *testing.T) {
	s := ParseSchema("input_schema", []byte(labelsSchema), &problem.ValidationError{})
	v := &problem.ValidationError{}
	got := s.Apply("parameters", map[string]any{}, v)
	if v.Err() != nil || got["labels"].(map[string]any)["tier"] != "web" {
		t.Fatalf("the default: %v, %v", got, v.Err())
	}
	got = s.Apply("parameters", map[string]any{"labels": map[string]any{"team": "blue", "app.kubernetes.io/part-of": "shop"}}, v)
	if v.Err() != nil || len(got["labels"].(map[string]any)) != 2 {
		t.Fatalf("a map given: %v, %v", got, v.Err())
	}

	tooMany := map[string]any{}
	for i := range MaxMapEntries + 1 {
		tooMany[strings.Repeat("k", i+1)] = "v"
	}
	for _, c := range []struct {
		name  string
		value any
		want  map[string]string // field: part of the message
	}{
		{"not a map", []any{"a"}, map[string]string{"parameters.labels": "is not an object"}},
		{"values not strings", map[string]any{"team": 5.0, "on": true, "ok": "yes"},
			map[string]string{"parameters.labels.team": "5 is not a string", "parameters.labels.on": "true is not a string"}},
		{"an empty key", map[string]any{"": "x"}, map[string]string{"parameters.labels": "empty key"}},
		{"a long key", map[string]any{strings.Repeat("k", MaxMapKeyLen+1): "x"}, map[string]string{"parameters.labels." + strings.Repeat("k", MaxMapKeyLen+1): "key is longer"}},
		{"a long value", map[string]any{"team": strings.Repeat("v", MaxMapValueLen+1)}, map[string]string{"parameters.labels.team": "longer than"}},
		{"too many entries", tooMany, map[string]string{"parameters.labels": "at most 64"}},
	} {
		v := &problem.ValidationError{}
		s.Apply("parameters", map[string]any{"labels": c.value}, v)
		if len(v.Fields) != len(c.want) {
			t.Errorf("%s: %+v, want %v", c.name, v.Fields, c.want)
			continue
		}
		for _, f := range v.Fields {
			if !strings.Contains(f.Message, c.want[f.Field]) || c.want[f.Field] == "" {
				t.Errorf("%s: %s: %q, want %q", c.name, f.Field, f.Message, c.want[f.Field])
			}
		}
	}
	if msg := s.Check("labels", map[string]any{"team": 1.0}); !strings.Contains(msg, `"team"`) {
		t.Errorf("Check names the key: %q", msg)
	}
}

func TestSchemaApply_AMapRefusesTheKeysItsProgramSets(t *testing.T) {
	s := ParseSchema("input_schema", []byte(`{"type": "object", "properties": {"labels": {"type": "object",
		"additionalProperties": {"type": "string"}, "x-reserved-keys": ["app.kubernetes.io/managed-by", "pod-security.kubernetes.io/"]}}}`), &problem.ValidationError{})
	v := &problem.ValidationError{}
	s.Apply("parameters", map[string]any{"labels": map[string]any{
		"app.kubernetes.io/managed-by": "me", "pod-security.kubernetes.io/enforce": "privileged", "app.kubernetes.io/name": "shop"}}, v)
	want := map[string]bool{"parameters.labels.app.kubernetes.io/managed-by": true, "parameters.labels.pod-security.kubernetes.io/enforce": true}
	for _, f := range v.Fields {
		if !want[f.Field] || !strings.Contains(f.Message, "sets itself") {
			t.Errorf("%s: %s", f.Field, f.Message)
		}
		delete(want, f.Field)
	}
	if len(want) > 0 {
		t.Fatalf("not refused: %v", want)
	}
}

func TestParseSchema_ARefersTo(t *testing.T) {
	good := `{"type": "object", "properties": {"network_id": {"type": "string", "x-refers-to": {"semantic_type": "VirtualNetwork", "output": "network_id"}}}}`
	v := &problem.ValidationError{}
	s := ParseSchema("input_schema", []byte(good), v)
	if v.Err() != nil || *s.Properties["network_id"].RefersTo != (Reference{SemanticType: "VirtualNetwork", Output: "network_id"}) {
		t.Fatalf("a reference: %v", v.Err())
	}
	for _, c := range []struct{ name, prop, want string }{
		{"on a number", `{"type": "integer", "x-refers-to": {"semantic_type": "VirtualNetwork", "output": "network_id"}}`, "only to an input of type string"},
		{"without a type", `{"type": "string", "x-refers-to": {"output": "network_id"}}`, "x-refers-to must be"},
		{"an output that is no name", `{"type": "string", "x-refers-to": {"semantic_type": "VirtualNetwork", "output": "a b"}}`, "x-refers-to must be"},
		{"an unknown key", `{"type": "string", "x-refers-to": {"semantic_type": "VirtualNetwork", "output": "id", "slot": "x"}}`, "unknown keyword"},
	} {
		v := &problem.ValidationError{}
		ParseSchema("input_schema", []byte(`{"type": "object", "properties": {"net": `+c.prop+`}}`), v)
		if v.Err() == nil || !strings.Contains(v.Err().Error(), c.want) {
			t.Errorf("%s: %v, want a problem saying %q", c.name, v.Err(), c.want)
		}
	}
}
