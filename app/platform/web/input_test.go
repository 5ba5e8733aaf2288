package web

import "testing"

func TestJSONNUL_NamesThePathOfTheFirstNUL(t *testing.T) {
	cases := []struct {
		name, doc string
		path      string
		inName    bool
		found     bool
	}{
		{"none", `{"name": "web", "tags": ["a", "b"]}`, "", false, false},
		{"an escaped backslash is no NUL", `{"name": "a\\u0000b"}`, "", false, false},
		{"not JSON", `{"name": "\u0000`, "", false, false},
		{"a top-level field", `{"name": "a\u0000b"}`, "name", false, true},
		{"after other values", `{"n": 1, "ok": true, "x": null, "l": [1, {"a": "b"}], "name": "\u0000"}`, "name", false, true},
		{"deep in arrays", `{"slots": [{"name": "a"}, {"inputs": {"size": "\u0000"}}]}`, "slots.1.inputs.size", false, true},
		{"in a list", `{"types": ["ok", "bad\u0000"]}`, "types.1", false, true},
		{"a key at the top", `{"a\u0000": 1}`, "", true, true},
		{"a key inside", `{"alerts": [{"labels": {"sev\u0000": "x"}}]}`, "alerts.0.labels", true, true},
		{"the document itself", `"\u0000"`, "", false, true},
		{"a key named like a later value", `{"a": "ok", "\u0000b": "c"}`, "", true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path, inName, found := jsonNUL([]byte(c.doc))
			if path != c.path || inName != c.inName || found != c.found {
				t.Fatalf("jsonNUL(%s) = %q, %v, %v; want %q, %v, %v", c.doc, path, inName, found, c.path, c.inName, c.found)
			}
		})
	}
}
