package landingzone

import (
	"testing"

	"nimbus/app/domain/component"
	"nimbus/app/kernel/problem"
)

func TestNeeded_OnlyARequiredInputWithoutDefaultNeedsAResolver(t *testing.T) {
	s := component.ParseSchema("input_schema", []byte(`{"type": "object", "required": ["name", "size"],
		"properties": {"name": {"type": "string"}, "size": {"type": "integer", "default": 2}, "ip": {"type": "string"}}}`),
		&problem.ValidationError{})
	for input, want := range map[string]bool{"name": true, "size": false, "ip": false, "missing": false} {
		if got := needed(s, input); got != want {
			t.Errorf("needed(%s) = %v, want %v", input, got, want)
		}
	}
}
