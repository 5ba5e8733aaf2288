package provision

import (
	"errors"
	"testing"

	"nimbus/app/kernel/problem"
)

func TestNamespaceFor_ATenantsNameMadeANamespaceName(t *testing.T) {
	for name, want := range map[string]string{
		"Acme":                         "acme",
		"Globex Corp.":                 "globex-corp",
		"  --Initech!! ":               "initech",
		"42 Wallaby Way":               "wallaby-way",
		"Ünïcode & Sons":               "n-code-sons",
		"A very long tenant name here": "a-very-long-tenant",
		"!!!":                          "",
	} {
		got := NamespaceFor(name)
		if got != want {
			t.Errorf("NamespaceFor(%q) = %q, want %q", name, got, want)
		}
		if got != "" && !namespaceName.MatchString(got) {
			t.Errorf("NamespaceFor(%q) = %q, which is no namespace name", name, got)
		}
	}
}

func TestAsked_TheFactoryInstancesRefusalsNameTheRequestsFields(t *testing.T) {
	v := &problem.ValidationError{}
	v.Add("name", "unique", "taken")
	v.Add("parameters.tier", "enum", "must be one of small, medium, large")
	v.Add("version", "exists", "no published version")
	var got *problem.ValidationError
	if !errors.As(asked(v), &got) || len(got.Fields) != 3 {
		t.Fatalf("asked(%v) = %v", v, got)
	}
	for i, want := range []string{"namespace", "tier", "version"} {
		if got.Fields[i].Field != want {
			t.Errorf("field %d is %s, want %s", i, got.Fields[i].Field, want)
		}
	}
	if got.Fields[0].Message == "taken" {
		t.Error("a taken instance name is not said as a taken namespace")
	}
	if plain := errors.New("boom"); asked(plain) != plain {
		t.Error("an error that is no refusal is not passed on")
	}
}

func TestReserved_TheClustersOwnNamespaces(t *testing.T) {
	for ns, want := range map[string]bool{"default": true, "kube-system": true, "kube-public": true, "nimbus-system": true,
		"acme": false, "kubernetes": false, "defaults": false} {
		if reserved(ns) != want {
			t.Errorf("reserved(%q) = %v", ns, !want)
		}
	}
}
