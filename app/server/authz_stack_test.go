package server_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"

	"nimbus/app/access"
	"nimbus/app/problem"
	"nimbus/app/stack"
)

// stacks is the stack definition service of the world.
func (w *world) stacks() *stack.Service {
	return fixture(w, "stacks", func() *stack.Service { return stack.NewService(w.pool) })
}

// stackDraft is a definition that passes every check: two slots of the machine component at
// version, the web one wired to the db one's output, to a parameter and to an expression; a
// lifecycle and two day-2 operations.
func stackDraft(machine uuid.UUID, version int) stack.Definition {
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

func rawDraft(t *testing.T, d stack.Definition) json.RawMessage {
	t.Helper()
	raw, err := json.Marshal(d)
	must(t, err)
	return raw
}

// sharedStack is a provider stack of the shared machine, published once.
func (w *world) sharedStack(t *testing.T) stack.Stack {
	return fixture(w, "sharedStack", func() stack.Stack {
		ctx := context.Background()
		st, err := w.stacks().Create(ctx, w.admin, stack.New{Provider: "simcloud", Name: "shop", Draft: rawDraft(t, stackDraft(w.shared.ID, 1))})
		must(t, err)
		_, err = w.stacks().Publish(ctx, w.admin, st.ID, "first")
		must(t, err)
		st, err = w.stacks().Get(ctx, w.admin, st.ID)
		must(t, err)
		return st
	})
}

// stackOfA is tenant A's own stack of the shared machine, a draft.
func (w *world) stackOfA(t *testing.T) stack.Stack {
	return fixture(w, "stackOfA", func() stack.Stack {
		st, err := w.stacks().Create(context.Background(), w.adminA, stack.New{TenantID: &w.a.ID, Provider: "simcloud", Name: "a-shop",
			Draft: rawDraft(t, stackDraft(w.shared.ID, 1))})
		must(t, err)
		return st
	})
}

// publishedStackOfA is tenant A's own stack, published once.
func (w *world) publishedStackOfA(t *testing.T) stack.Stack {
	return fixture(w, "publishedStackOfA", func() stack.Stack {
		st := w.stackOfA(t)
		_, err := w.stacks().Publish(context.Background(), w.adminA, st.ID, "first")
		must(t, err)
		return st
	})
}

var stackCases = map[string]authzCase{
	"stack.Service.Create": {
		refused: []refusal{{adminB, invalid("tenant_id")}, {userA, problem.ErrForbidden}},
		served:  []actor{adminA, providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			_, err := w.stacks().Create(context.Background(), p, stack.New{TenantID: &w.a.ID, Provider: "simcloud",
				Name: "made-by-" + p.UserID.String()[:8], Draft: rawDraft(t, stackDraft(w.shared.ID, 1))})
			return err
		},
		then: func(t *testing.T, w *world) {
			// A provider stack is the provider admins' alone.
			_, err := w.stacks().Create(context.Background(), w.adminA, stack.New{Provider: "simcloud", Name: "not-mine"})
			wantErr(t, err, problem.ErrForbidden)
		},
	},
	"stack.Service.Get": {
		refused: []refusal{{adminB, problem.ErrNotFound}, {stranger, problem.ErrNotFound}},
		served:  []actor{adminA, readerA, providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			_, err := w.stacks().Get(context.Background(), p, w.publishedStackOfA(t).ID)
			return err
		},
		then: func(t *testing.T, w *world) {
			// Those who may not edit see neither an unpublished stack nor any draft.
			other, err := w.stacks().Create(context.Background(), w.adminA, stack.New{TenantID: &w.a.ID, Provider: "simcloud", Name: "unpublished"})
			must(t, err)
			_, err = w.stacks().Get(context.Background(), w.readerA, other.ID)
			wantErr(t, err, problem.ErrNotFound)
			got, err := w.stacks().Get(context.Background(), w.readerA, w.sharedStack(t).ID)
			must(t, err)
			if got.Draft != nil {
				t.Fatal("a reader sees the provider stack's draft")
			}
		},
	},
	"stack.Service.List": {
		refused: []refusal{{adminB, errHidden}, {stranger, errHidden}},
		served:  []actor{readerA, providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			mine := w.publishedStackOfA(t)
			got, err := w.stacks().List(context.Background(), p, stack.Filter{})
			for _, st := range got {
				if st.TenantID != nil && !p.Member(*st.TenantID) {
					t.Errorf("%s lists stack %s of another tenant", p.Email, st.Name)
				}
			}
			return shown(got, err, func(st stack.Stack) bool { return st.ID == mine.ID })
		},
		then: func(t *testing.T, w *world) {
			shared := w.sharedStack(t)
			got, err := w.stacks().List(context.Background(), w.adminB, stack.Filter{Scope: "provider"})
			must(t, shown(got, err, func(st stack.Stack) bool { return st.ID == shared.ID }))
		},
	},
	"stack.Service.UpdateDraft": {
		refused: []refusal{{adminB, problem.ErrNotFound}, {userA, problem.ErrForbidden}},
		served:  []actor{adminA, providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			_, err := w.stacks().UpdateDraft(context.Background(), p, w.publishedStackOfA(t).ID, stack.Draft{DisplayName: "Shop",
				Draft: rawDraft(t, stackDraft(w.shared.ID, 1))})
			return err
		},
		then: func(t *testing.T, w *world) {
			_, err := w.stacks().UpdateDraft(context.Background(), w.adminA, w.sharedStack(t).ID, stack.Draft{Draft: rawDraft(t, stackDraft(w.shared.ID, 1))})
			wantErr(t, err, problem.ErrForbidden)
		},
	},
	"stack.Service.Delete": {
		refused: []refusal{{adminB, problem.ErrNotFound}, {userA, problem.ErrForbidden}},
		served:  []actor{adminA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			return w.stacks().Delete(context.Background(), p, w.publishedStackOfA(t).ID)
		},
		then: func(t *testing.T, w *world) {
			wantErr(t, w.stacks().Delete(context.Background(), w.adminA, w.sharedStack(t).ID), problem.ErrForbidden)
		},
	},
	"stack.Service.Publish": {
		refused: []refusal{{adminB, problem.ErrNotFound}, {userA, problem.ErrForbidden}},
		served:  []actor{adminA, providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			_, err := w.stacks().Publish(context.Background(), p, w.publishedStackOfA(t).ID, "by "+p.Email)
			return err
		},
		then: func(t *testing.T, w *world) {
			// A provider stack is published by provider admins alone.
			_, err := w.stacks().Publish(context.Background(), w.adminA, w.sharedStack(t).ID, "mine now")
			wantErr(t, err, problem.ErrForbidden)
		},
	},
	"stack.Service.Versions": {
		refused: []refusal{{adminB, problem.ErrNotFound}},
		served:  []actor{readerA, providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			got, err := w.stacks().Versions(context.Background(), p, w.publishedStackOfA(t).ID)
			return shown(got, err, func(v stack.Version) bool { return v.Version == 1 })
		},
	},
	"stack.Service.Version": {
		refused: []refusal{{adminB, problem.ErrNotFound}},
		served:  []actor{readerA, providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			v, err := w.stacks().Version(context.Background(), p, w.publishedStackOfA(t).ID, 1)
			if err == nil && len(v.Definition.Operations) != 2 {
				t.Errorf("version 1 has operations %+v", v.Definition.Operations)
			}
			return err
		},
	},
	"stack.Service.Archive": {
		refused: []refusal{{adminB, problem.ErrNotFound}, {userA, problem.ErrForbidden}},
		served:  []actor{adminA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			return w.stacks().Archive(context.Background(), p, w.publishedStackOfA(t).ID, 1)
		},
		then: func(t *testing.T, w *world) {
			wantErr(t, w.stacks().Archive(context.Background(), w.adminA, w.sharedStack(t).ID, 1), problem.ErrForbidden)
		},
	},
	"stack.Service.Diff": {
		refused: []refusal{{adminB, problem.ErrNotFound}},
		served:  []actor{readerA, providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			_, err := w.stacks().Diff(context.Background(), p, w.publishedStackOfA(t).ID, stack.Compare{From: 1, To: 1})
			return err
		},
	},
	"stack.Service.Fork": {
		refused: []refusal{{adminB, invalid("tenant_id")}, {userA, problem.ErrForbidden}, {stranger, invalid("tenant_id")}},
		served:  []actor{adminA, providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			_, err := w.stacks().Fork(context.Background(), p, w.sharedStack(t).ID, stack.ForkRequest{TenantID: w.a.ID,
				Name: "fork-by-" + p.UserID.String()[:8]})
			return err
		},
		then: func(t *testing.T, w *world) {
			// B's admin may fork into B, but not a stack of A's.
			_, err := w.stacks().Fork(context.Background(), w.adminB, w.publishedStackOfA(t).ID, stack.ForkRequest{TenantID: w.b.ID, Name: "stolen"})
			wantErr(t, err, problem.ErrNotFound)
		},
	},
}
