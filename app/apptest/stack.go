package apptest

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/uuid"

	"nimbus/app/domain/component"
	"nimbus/app/domain/stack"
	"nimbus/app/kernel/problem"
)

// StackDraft is a definition that passes every check: two slots of the machine component at
// version, the web one wired to the db one's output, to a parameter and to an expression; a
// lifecycle and two day-2 operations.
func StackDraft(machine uuid.UUID, version int) stack.Definition {
	return stack.Definition{
		Parameters: json.RawMessage(`{"type":"object","properties":{"size":{"type":"integer","default":2},"label":{"type":"string","default":"shop"}}}`),
		Slots: []stack.Slot{
			{Name: "db", Component: machine, Version: version, Inputs: map[string]stack.Wiring{"name": {Kind: stack.Literal, Value: "db"}}},
			{Name: "web", Component: machine, Version: version, Inputs: map[string]stack.Wiring{
				"name":       {Kind: stack.Expression, Expr: `"web-" + params.label`},
				"cores":      {Kind: stack.Param, Param: "size"},
				"ip_address": {Kind: stack.Output, Slot: "db", Output: "ip_address"},
			}},
		},
		Machine: stack.Machine{
			States: []stack.State{{Name: "provisioning", Initial: true}, {Name: "running"}, {Name: "stopped"}, {Name: "retired", Terminal: true}},
			Transitions: []stack.Transition{
				{From: "provisioning", To: "running", Trigger: "ready"},
				{From: "running", To: "stopped", Trigger: "stop", Timeout: "1h", OnTimeout: "start",
					Action: []stack.Action{{Slot: "web", Do: stack.Refresh}}},
				{From: "stopped", To: "running", Trigger: "start"},
				{From: "running", To: "retired", Trigger: "retire"},
			},
		},
		Operations: []stack.Operation{
			{Name: "resize", InputSchema: json.RawMessage(`{"type":"object","properties":{"cores":{"type":"integer"}}}`),
				RequiredStates: []string{"running"},
				Actions:        []stack.Action{{Slot: "web", Do: stack.Update, Inputs: map[string]string{"cores": "inputs.cores * 2"}}}},
			{Name: "restart", RequiredStates: []string{"running"}, Actions: []stack.Action{{Slot: "web", Do: stack.Redeploy}},
				TriggersTransition: "stop"},
		},
	}
}

// RawDraft is a stack definition as the API takes a draft.
func RawDraft(t *testing.T, d stack.Definition) json.RawMessage {
	t.Helper()
	raw, err := json.Marshal(d)
	Must(t, err)
	return raw
}

// SharedStack is a provider stack of the shared machine, published once.
func (w *World) SharedStack(t *testing.T) stack.Stack {
	return Fixture(w, "sharedStack", func() stack.Stack {
		ctx := context.Background()
		st, err := w.Stacks.Create(ctx, w.Admin, stack.New{Provider: "simcloud", Name: "shop", Draft: RawDraft(t, StackDraft(w.Shared.ID, 1))})
		Must(t, err)
		_, err = w.Stacks.Publish(ctx, w.Admin, st.ID, "first")
		Must(t, err)
		st, err = w.Stacks.Get(ctx, w.Admin, st.ID)
		Must(t, err)
		return st
	})
}

// stackOfA is tenant A's own stack of the shared machine, a draft.
func (w *World) stackOfA(t *testing.T) stack.Stack {
	return Fixture(w, "stackOfA", func() stack.Stack {
		st, err := w.Stacks.Create(context.Background(), w.AdminA, stack.New{TenantID: &w.A.ID, Provider: "simcloud", Name: "a-shop",
			Draft: RawDraft(t, StackDraft(w.Shared.ID, 1))})
		Must(t, err)
		return st
	})
}

// PublishedStackOfA is tenant A's own stack, published once.
func (w *World) PublishedStackOfA(t *testing.T) stack.Stack {
	return Fixture(w, "publishedStackOfA", func() stack.Stack {
		st := w.stackOfA(t)
		_, err := w.Stacks.Publish(context.Background(), w.AdminA, st.ID, "first")
		Must(t, err)
		return st
	})
}

// StackParts are the components the stack tests pin: the shared machine (version 1), one
// whose version 1 is archived (2 is not), one that leaves its name to a resolver, and tenant
// A's own, published.
type StackParts struct {
	Machine, Archived, Bound, OfA uuid.UUID
}

// StackParts publishes the components the stack tests pin.
func (s *Site) StackParts(t *testing.T) StackParts {
	t.Helper()
	ctx := context.Background()
	publish := func(c component.Component) {
		t.Helper()
		_, err := s.Components.Publish(ctx, s.Admin, c.ID, c.Revision, "a version")
		Must(t, err)
	}
	old, err := s.Components.Create(ctx, s.Admin, Machine(t, "old-machine", nil))
	Must(t, err)
	publish(old)
	publish(old)
	Must(t, s.Components.ArchiveVersion(ctx, s.Admin, old.ID, 1))
	in := Machine(t, "named-machine", nil)
	in.ResolverBindings = json.RawMessage(`{"name":"naming"}`)
	bound, err := s.Components.Create(ctx, s.Admin, in)
	Must(t, err)
	publish(bound)
	publish(s.OfA)
	return StackParts{Machine: s.Shared.ID, Archived: old.ID, Bound: bound.ID, OfA: s.OfA.ID}
}

// Problems are the problems a reply lists, under "problems" (a saved draft) or "errors" (a
// refusal).
func Problems(t *testing.T, r Reply) []problem.FieldError {
	t.Helper()
	var body struct {
		Problems []problem.FieldError `json:"problems"`
		Errors   []problem.FieldError `json:"errors"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatalf("reply is not JSON (%d): %s", r.Status, r.Body)
	}
	return append(body.Problems, body.Errors...)
}

// HasProblem says whether list holds a problem with field and rule.
func HasProblem(list []problem.FieldError, field, rule string) bool {
	return slices.ContainsFunc(list, func(f problem.FieldError) bool { return f.Field == field && f.Rule == rule })
}

// Issue30 is the pattern a tenant wired over a 100 KB parameter: three thousand steps of RE2's
// program, seconds a match, and every view of the plan matched it again.
const Issue30 = "[a-z]{1000}[a-z]{1000}[a-z]{1000}x"

// Matching is a tenant's stack whose network is named after whether its parameter s matches
// pattern (a CEL string: a literal, or params.p).
func Matching(t *testing.T, s *Site, pattern string) stack.Definition {
	ids := BuiltinIDs(t, s)
	return stack.Definition{
		Parameters: json.RawMessage(`{"type":"object","required":["s"],"properties":{"s":{"type":"string"},"p":{"type":"string"}}}`),
		Slots: []stack.Slot{{Name: "net", Component: uuid.MustParse(ids["simcloud-network"]), Version: 1, Inputs: map[string]stack.Wiring{
			"name": {Kind: stack.Expression, Expr: `params.s.matches(` + pattern + `) ? "matched-net" : "other-net"`},
			"cidr": {Kind: stack.Literal, Value: "10.30.0.0/16"},
		}}},
		Machine: stack.Machine{States: []stack.State{{Name: "up", Initial: true}}},
	}
}
