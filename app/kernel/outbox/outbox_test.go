package outbox

import (
	"reflect"
	"testing"
)

func TestRedacted_SecretLookingKeysAtAnyDepthAreHidden(t *testing.T) {
	in := map[string]any{
		"name":   "web-1",
		"labels": map[string]any{"API_Key": "k", "team": "a\x00b"},
		"items":  []any{map[string]any{"password": "p", "n": 1.0}},
	}
	want := map[string]any{
		"name":   "web-1",
		"labels": map[string]any{"API_Key": "[redacted]", "team": "ab"},
		"items":  []any{map[string]any{"password": "[redacted]", "n": 1.0}},
	}
	if got := Redacted(in); !reflect.DeepEqual(got, want) {
		t.Fatalf("Redacted = %#v, want %#v", got, want)
	}
}

func TestClean_CutsBetweenCharacters(t *testing.T) {
	if got := Clean(" héllo ", 2); got != "h" {
		t.Fatalf("Clean cut inside a character: %q", got)
	}
	if got := Clean("a\xffb", 10); got != "a\uFFFDb" {
		t.Fatalf("Clean kept invalid UTF-8: %q", got)
	}
}
