package pulumix

import (
	"reflect"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
)

func TestPlan_OneEntryPerResourceWithItsNewInputsSecretsMasked(t *testing.T) {
	step := func(urn, typ string, op apitype.OpType, inputs map[string]any) apitype.StepEventMetadata {
		m := apitype.StepEventMetadata{URN: urn, Type: typ, Op: op}
		if inputs != nil {
			m.New = &apitype.StepEventStateMetadata{Inputs: inputs}
		}
		return m
	}
	secret := map[string]any{secretSig: secretMark, "plaintext": "[secret]"}
	var p plan
	for _, m := range []apitype.StepEventMetadata{
		step("urn::disk", "simcloud:index:Disk", apitype.OpRefresh, map[string]any{"size": 10.0}),
		step("urn::disk", "simcloud:index:Disk", apitype.OpSame, map[string]any{"size": 10.0}),
		step("urn::vm", "simcloud:index:Machine", apitype.OpCreateReplacement, map[string]any{"cores": 4.0, "password": secret}),
		step("urn::vm", "simcloud:index:Machine", apitype.OpReplace, map[string]any{"cores": 4.0, "password": secret}),
		step("urn::vm", "simcloud:index:Machine", apitype.OpDeleteReplaced, nil),
		step("urn::old", "simcloud:index:Disk", apitype.OpDelete, nil),
	} {
		p.note(m)
	}
	want := []Planned{
		{URN: "urn::disk", Type: "simcloud:index:Disk", Name: "disk", Op: "same", Inputs: map[string]any{"size": 10.0}},
		{URN: "urn::vm", Type: "simcloud:index:Machine", Name: "vm", Op: "replace", Inputs: map[string]any{"cores": 4.0, "password": "[secret]"}},
		{URN: "urn::old", Type: "simcloud:index:Disk", Name: "old", Op: "delete"},
	}
	if got := p.resources(); !reflect.DeepEqual(got, want) {
		t.Fatalf("planned\n%+v\nwant\n%+v", got, want)
	}
}
