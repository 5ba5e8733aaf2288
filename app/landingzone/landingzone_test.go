package landingzone

import (
	"errors"
	"strings"
	"testing"

	"nimbus/app/component"
	"nimbus/app/problem"
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

func TestAbout_NamesTheComponentInEveryRefusal(t *testing.T) {
	v := &problem.ValidationError{}
	v.Add("parameters.cores", "maximum", "8 is above the maximum of 4")
	err := about("mandatory component web (machine)", v)
	if problem.FieldOf(err) != "parameters.cores" || !strings.Contains(err.Error(), "mandatory component web (machine): 8 is above") {
		t.Fatalf("a validation error: %v", err)
	}
	err = about("mandatory component web (machine)", &problem.Denied{Message: "denied by the provider"})
	var denied *problem.Denied
	if !errors.As(err, &denied) || !errors.Is(err, problem.ErrForbidden) || denied.Message != "mandatory component web (machine): denied by the provider" {
		t.Fatalf("a denial: %v", err)
	}
}
