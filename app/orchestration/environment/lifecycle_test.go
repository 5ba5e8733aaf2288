package environment

import (
	"errors"
	"strings"
	"testing"

	"nimbus/app/kernel/problem"
)

func TestAbout_NamesTheComponentInEveryRefusal(t *testing.T) {
	v := &problem.ValidationError{}
	v.Add("parameters.cores", "maximum", "8 is above the maximum of 4")
	err := about("mandatory component web (machine)", v)
	if problem.FieldOf(err) != "parameters.cores" || !strings.Contains(err.Error(), "mandatory component web (machine): cores 8 is above") {
		t.Fatalf("a validation error: %v", err)
	}
	err = about("mandatory component web (machine)", &problem.Denied{Message: "denied by the provider"})
	var denied *problem.Denied
	if !errors.As(err, &denied) || !errors.Is(err, problem.ErrForbidden) || denied.Message != "mandatory component web (machine): denied by the provider" {
		t.Fatalf("a denial: %v", err)
	}
}
