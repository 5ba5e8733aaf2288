package pulumix

import (
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
func (p *plan) note(m apitype.StepEventMetadata) {
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
		r.Inputs, _ = masked(m.New.Inputs).(map[string]any)
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
