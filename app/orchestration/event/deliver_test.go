package event

import (
	"nimbus/app/kernel/outbox"
	"testing"
)

func TestTakesType(t *testing.T) {
	for _, c := range []struct {
		globs []string
		typ   string
		want  bool
	}{
		{nil, "deployment.failed", true},
		{[]string{"deployment.*"}, "deployment.failed", true},
		{[]string{"deployment.*"}, "stack.state_changed", false},
		{[]string{"stack.state_changed", "drift.*"}, "drift.detected", true},
		{[]string{"deployment"}, "deployment.failed", false},
	} {
		if got := takesType(c.globs, c.typ); got != c.want {
			t.Errorf("%v takes %s: %v, want %v", c.globs, c.typ, got, c.want)
		}
	}
}

func TestClean(t *testing.T) {
	for in, want := range map[string]string{
		"  plain  ": "plain", "nul\x00here": "nulhere", "bad\xffutf8": "bad\uFFFDutf8", "ééééé": "éé",
	} {
		max := 100
		if in == "ééééé" {
			max = 5
		}
		if got := outbox.Clean(in, max); got != want {
			t.Errorf("outbox.Clean(%q, %d) = %q, want %q", in, max, got, want)
		}
	}
}
