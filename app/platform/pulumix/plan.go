package pulumix

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
)

// Planned is one resource of a preview's plan: what the plan does to it, and the inputs it
// will have (secrets as "[secret]").
type Planned struct {
	URN    string
	Type   string
	Name   string
	Op     string // create, update, replace, same, read or delete
	Inputs map[string]any
}

// plan gathers a preview's planned steps into one entry per resource: a replacement is planned
// as several steps (create the new one, replace, delete the old one), which make one replace.
type plan struct {
	order []string
	by    map[string]*Planned
}

// note takes one planned step.
func (p *plan) note(m apitype.StepEventMetadata, rep *strings.Replacer) {
	op, ok := planOp(m.Op)
	if !ok {
		return
	}
	if p.by == nil {
		p.by = map[string]*Planned{}
	}
	r := p.by[m.URN]
	if r == nil {
		r = &Planned{URN: m.URN, Type: m.Type, Name: nameOf(m.URN)}
		p.by[m.URN] = r
		p.order = append(p.order, m.URN)
	}
	if r.Op != "replace" {
		r.Op = op
	}
	if m.New != nil {
		r.Inputs, _ = redactValue(masked(m.New.Inputs), rep).(map[string]any)
	}
}

// planOp is what a planned step does to its resource, in the few words policies use; a
// refresh reads the resource before the plan and plans nothing.
func planOp(op apitype.OpType) (string, bool) {
	switch op {
	case apitype.OpRefresh:
		return "", false
	case apitype.OpReplace, apitype.OpCreateReplacement, apitype.OpDeleteReplaced, apitype.OpDiscardReplaced,
		apitype.OpReadReplacement, apitype.OpImportReplacement:
		return "replace", true
	case apitype.OpImport:
		return "create", true
	case apitype.OpReadDiscard, apitype.OpRemovePendingReplace:
		return "delete", true
	}
	return string(op), true
}

// resources is the plan in the engine's order.
func (p *plan) resources() []Planned {
	out := make([]Planned, 0, len(p.order))
	for _, urn := range p.order {
		out = append(out, *p.by[urn])
	}
	return out
}

// unknown is how a plan writes a value the preview could not know.
const unknown = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"

// looseStackOutputs marks the stack's outputs in an update plan as values the preview could not
// know. A provider that previews through a dry run of its API (Kubernetes' server-side dry run)
// plans values such as an object's uid that the real change gives otherwise; the engine holds
// the stack's outputs to the plan too, and fails such an update — after making every resource,
// and without a word. The outputs are what the program reports: every resource stays held to
// the plan.
func looseStackOutputs(plan []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(plan))
	dec.UseNumber() // numbers kept as written
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("read the plan: %w", err)
	}
	resources, _ := doc["resourcePlans"].(map[string]any)
	for _, r := range resources {
		goal, _ := r.(map[string]any)["goal"].(map[string]any)
		if goal == nil || goal["type"] != "pulumi:pulumi:Stack" {
			continue
		}
		diff, _ := goal["outputDiff"].(map[string]any)
		for _, kind := range []string{"adds", "updates"} {
			values, _ := diff[kind].(map[string]any)
			for k := range values {
				values[k] = unknown
			}
		}
	}
	return json.Marshal(doc)
}
