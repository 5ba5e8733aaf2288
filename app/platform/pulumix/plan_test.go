package pulumix

import (
	"encoding/json"
	"reflect"
	"strings"
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
		p.note(m, strings.NewReplacer())
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

func TestLooseStackOutputs_OnlyTheStacksOutputsAreLeftOpen(t *testing.T) {
	plan := []byte(`{"manifest":{"magic":"m"},"resourcePlans":{
		"urn::stack":{"goal":{"type":"pulumi:pulumi:Stack","outputDiff":{"adds":{"uid":"648bbf03"},"updates":{"n":12345678901234567890}}}},
		"urn::ns":{"goal":{"type":"kubernetes:core/v1:Namespace","adds":{"metadata":{"name":"a"}},"outputDiff":{"adds":{"uid":"648bbf03"}}}}}}`)
	got, err := looseStackOutputs(plan)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Manifest      map[string]string `json:"manifest"`
		ResourcePlans map[string]struct {
			Goal struct {
				Adds       map[string]any `json:"adds"`
				OutputDiff struct {
					Adds    map[string]any `json:"adds"`
					Updates map[string]any `json:"updates"`
				} `json:"outputDiff"`
			} `json:"goal"`
		} `json:"resourcePlans"`
	}
	if err := json.Unmarshal(got, &doc); err != nil {
		t.Fatal(err)
	}
	stack, ns := doc.ResourcePlans["urn::stack"].Goal, doc.ResourcePlans["urn::ns"].Goal
	if stack.OutputDiff.Adds["uid"] != unknown || stack.OutputDiff.Updates["n"] != unknown {
		t.Errorf("the stack's outputs are still held: %+v", stack.OutputDiff)
	}
	if ns.OutputDiff.Adds["uid"] != "648bbf03" || ns.Adds["metadata"].(map[string]any)["name"] != "a" || doc.Manifest["magic"] != "m" {
		t.Errorf("the rest of the plan changed: %s", got)
	}
}
