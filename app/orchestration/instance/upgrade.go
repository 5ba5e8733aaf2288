package instance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"nimbus/app/domain/stack"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/graph"
	"nimbus/app/kernel/lifecycle"
	"nimbus/app/kernel/problem"
	"nimbus/app/orchestration/deploy"
	"nimbus/app/platform/audit"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// An upgrade moves an instance to a newer version of its stack: slots the new version adds are
// deployed, those whose component version changed are upgraded, those whose wiring changed are
// updated, those holding another component are destroyed and deployed anew, each in graph
// order, and the slots it drops are destroyed last. A failure starts a rollback run, which
// returns every slot to what it was in the old version, those the upgrade destroyed included
// (rollbackKind); the instance is active at its old version again, or degraded when the
// rollback fails too.

// The kinds of runs that change an instance's version.
const (
	RunUpgrade  RunKind = "upgrade"
	RunRollback RunKind = "rollback"
)

// SlotChange says what an upgrade does to one slot.
type SlotChange string

// The changes an upgrade makes to slots.
const (
	Added     SlotChange = "added"
	Removed   SlotChange = "removed"
	Upgraded  SlotChange = "upgraded"
	Updated   SlotChange = "updated"
	Untouched SlotChange = "untouched"
	// Replaced: the slot holds another component now; its deployment is destroyed, then the
	// new one deployed.
	Replaced SlotChange = "replaced"
)

// SlotPlan is what an upgrade does to one slot.
type SlotPlan struct {
	Slot   string     `json:"slot"`
	Change SlotChange `json:"change"`
	// FromVersion and ToVersion are the slot's component versions (0 where it has none).
	FromVersion int `json:"from_version"`
	ToVersion   int `json:"to_version"`
}

// UpgradePlan is what upgrading an instance to a version would do.
type UpgradePlan struct {
	From  int        `json:"from"`
	To    int        `json:"to"`
	Slots []SlotPlan `json:"slots"`
}

// plan compares two versions' slots (stack.DiffSlots): those of to in its order, then those
// only from has.
func plan(from, to stack.Definition) []SlotPlan {
	d := stack.DiffSlots(from, to)
	change := map[string]SlotChange{}
	for c, names := range map[SlotChange][]string{Added: d.Added, Upgraded: d.Upgraded, Updated: d.Updated, Untouched: d.Untouched} {
		for _, n := range names {
			change[n] = c
		}
	}
	for _, n := range d.Removed {
		if change[n] == Added {
			change[n] = Replaced
		} else {
			change[n] = Removed
		}
	}
	// A slot reading from one that changes is wired anew: what it reads may change with it.
	for moved := true; moved; {
		moved = false
		for _, s := range to.Slots {
			if change[s.Name] != Untouched {
				continue
			}
			for _, up := range s.Upstream() {
				if c := change[up]; c == Upgraded || c == Updated || c == Replaced {
					change[s.Name], moved = Updated, true
					break
				}
			}
		}
	}
	var out []SlotPlan
	for _, s := range to.Slots {
		p := SlotPlan{Slot: s.Name, Change: change[s.Name], ToVersion: s.Version}
		if old, ok := from.Slot(s.Name); ok {
			p.FromVersion = old.Version
		}
		out = append(out, p)
	}
	for _, s := range from.Slots {
		if change[s.Name] == Removed {
			out = append(out, SlotPlan{Slot: s.Name, Change: Removed, FromVersion: s.Version})
		}
	}
	return out
}

// UpgradePlan says what upgrading the instance to version (0: the latest) would do.
func (s *Service) UpgradePlan(ctx context.Context, actor access.Principal, id uuid.UUID, version int) (UpgradePlan, error) {
	q := db.Queries(s.pool)
	inst, err := q.GetStackInstance(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && !actor.Can(access.EnvironmentRead, inst.TenantID) {
		return UpgradePlan{}, problem.ErrNotFound
	}
	if err != nil {
		return UpgradePlan{}, err
	}
	to, err := newer(ctx, q, inst.StackID, int(inst.Version), version)
	if err != nil {
		return UpgradePlan{}, err
	}
	return comparePlan(ctx, q, inst.StackID, int(inst.Version), to)
}

func comparePlan(ctx context.Context, q *dbgen.Queries, stackID uuid.UUID, from, to int) (UpgradePlan, error) {
	a, err := stack.LoadVersion(ctx, q, stackID, from)
	if err != nil {
		return UpgradePlan{}, err
	}
	b, err := stack.LoadVersion(ctx, q, stackID, to)
	if err != nil {
		return UpgradePlan{}, err
	}
	return UpgradePlan{From: from, To: to, Slots: plan(a, b)}, nil
}

// keepsState refuses a version whose state machine lacks the state the instance is in: the
// instance would stand nowhere its machine knows.
func keepsState(ctx context.Context, q *dbgen.Queries, inst dbgen.StackInstance, version int) error {
	if inst.CurrentState == nil {
		return nil
	}
	def, err := stack.LoadVersion(ctx, q, inst.StackID, version)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(def.Machine.States, func(s stack.State) bool { return s.Name == *inst.CurrentState }) {
		return problem.Invalid("version", "state", "version %d has no state %s, which %s is in", version, *inst.CurrentState, inst.Name)
	}
	return nil
}

func int4(n int) pgtype.Int4 { return pgtype.Int4{Int32: int32(n), Valid: true} }

// newer is the version an upgrade goes to: the one asked for, published, not archived and
// newer than the instance's, or the latest.
func newer(ctx context.Context, q *dbgen.Queries, stackID uuid.UUID, current, asked int) (int, error) {
	st, err := q.StackToDeploy(ctx, stackID)
	if err != nil {
		return 0, err
	}
	if asked == 0 {
		asked = int(st.Latest)
	}
	if asked <= current {
		return 0, problem.Invalid("version", "newer", "%s has no published version newer than %d", st.Name, current)
	}
	return pick(ctx, q, st, asked)
}

// Upgrade moves an instance to a newer version of its stack (the latest when version is 0).
func (s *Service) Upgrade(ctx context.Context, actor access.Principal, id uuid.UUID, version int) (Instance, error) {
	err := db.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := db.Queries(tx)
		inst, err := s.lockFor(ctx, q, actor, id, access.StackInstanceUpgrade)
		if err != nil {
			return err
		}
		if st := lifecycle.InstanceStatus(inst.Status); st != lifecycle.InstanceActive && st != lifecycle.InstanceDegraded {
			return problem.Invalid("instance", "state", "%s is %s: only an active or degraded instance is upgraded", inst.Name, inst.Status)
		}
		to, err := newer(ctx, q, inst.StackID, int(inst.Version), version)
		if err != nil {
			return err
		}
		if err := keepsState(ctx, q, inst, to); err != nil {
			return err
		}
		if _, err := s.run.queue(ctx, tx, inst, dbgen.CreateStackRunParams{Kind: string(RunUpgrade), Source: source(ctx),
			RequestedBy: uuid.NullUUID{UUID: actor.UserID, Valid: actor.UserID != uuid.Nil},
			FromVersion: int4(int(inst.Version)), ToVersion: int4(to)}); err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{Tenant: inst.TenantID, Action: "stack_instance.upgrade", TargetType: "stack_instance",
			TargetID: inst.ID.String(), Diff: map[string]any{"name": inst.Name, "from": inst.Version, "to": to}})
	})
	if err != nil {
		return Instance{}, fmt.Errorf("upgrade stack instance: %w", err)
	}
	return s.Get(ctx, actor, id)
}

// upgradeKind takes the instance to the run's version.
var upgradeKind = kind{
	begin: func(ctx context.Context, r *runCtx) ([]step, error) {
		if st := lifecycle.InstanceStatus(r.inst.Status); st != lifecycle.InstanceActive && st != lifecycle.InstanceDegraded {
			return nil, refuse("%s is %s: only an active or degraded instance is upgraded", r.inst.Name, r.inst.Status)
		}
		if r.run.FromVersion.Int32 != r.inst.Version {
			return nil, refuse("%s moved to version %d after this upgrade was asked for: ask again", r.inst.Name, r.inst.Version)
		}
		if err := keepsState(ctx, r.q, r.inst, int(r.run.ToVersion.Int32)); err != nil {
			return nil, refuse("%v", err)
		}
		from, err := stack.LoadVersion(ctx, r.q, r.inst.StackID, int(r.run.FromVersion.Int32))
		if err != nil {
			return nil, err
		}
		var out, removed []step
		var forward []string
		for _, p := range plan(from, r.def) {
			slot, _ := r.def.Slot(p.Slot)
			switch p.Change {
			case Added:
				out = append(out, step{name: p.Slot, slot: p.Slot, action: "deploy", after: slot.Upstream()})
			case Replaced:
				old := step{name: p.Slot + "~old", slot: p.Slot, action: "destroy"}
				out = append(out, old, step{name: p.Slot, slot: p.Slot, action: "deploy", after: append(slot.Upstream(), old.name)})
			case Upgraded:
				out = append(out, step{name: p.Slot, slot: p.Slot, action: "upgrade", after: slot.Upstream()})
			case Updated:
				out = append(out, step{name: p.Slot, slot: p.Slot, action: "update", after: slot.Upstream()})
			case Removed:
				removed = append(removed, step{name: p.Slot, slot: p.Slot, action: "destroy"})
			}
		}
		for _, s := range out {
			forward = append(forward, s.name)
		}
		// What the new version drops goes last, once everything else has moved over, those
		// reading from others first.
		for i, s := range removed {
			s.after = slices.Clone(forward)
			old, _ := from.Slot(s.slot)
			for _, other := range removed {
				if o, _ := from.Slot(other.slot); slices.Contains(o.Upstream(), old.Name) {
					s.after = append(s.after, other.name)
				}
			}
			removed[i] = s
		}
		return append(out, removed...), move(ctx, r.q, r.inst, lifecycle.InstanceUpgrading, "")
	},
	start: func(ctx context.Context, r *runCtx, s dbgen.StackRunStepsRow) (uuid.UUID, map[string]any, error) {
		switch s.Action {
		case "deploy":
			return startDeploy(ctx, r, s)
		case "destroy":
			return startDestroy(ctx, r, s)
		}
		return startChange(ctx, r, s)
	},
	end: func(ctx context.Context, r *runCtx, outcome graph.Step, refusal error) error {
		if outcome.Done {
			if err := r.q.SetStackInstanceVersion(ctx, dbgen.SetStackInstanceVersionParams{ID: r.inst.ID, Version: r.run.ToVersion.Int32}); err != nil {
				return err
			}
			return move(ctx, r.q, r.inst, lifecycle.InstanceActive, "")
		}
		why := fmt.Sprintf("Upgrading to version %d failed: %s.", r.run.ToVersion.Int32, failure(r, outcome, refusal))
		if err := move(ctx, r.q, r.inst, lifecycle.InstanceUpgrading, fmt.Sprintf("%s Rolling back to version %d.", why, r.run.FromVersion.Int32)); err != nil {
			return err
		}
		in, _ := json.Marshal(map[string]any{"reason": why, "upgrade": r.run.ID})
		_, err := record(ctx, r.q, dbgen.CreateStackRunParams{InstanceID: r.inst.ID, Kind: string(RunRollback), Inputs: in,
			Source: "system", RequestedBy: r.run.RequestedBy, FromVersion: r.run.ToVersion, ToVersion: r.run.FromVersion})
		return err
	},
}

// startChange upgrades or updates one slot's deployment to the run's version of the slot: its
// inputs worked out anew from the new wiring, and inputs the old wiring set that the new one
// leaves out reset to their defaults. What it was is kept with the step, for a rollback.
func startChange(ctx context.Context, r *runCtx, s dbgen.StackRunStepsRow) (uuid.UUID, map[string]any, error) {
	d, ok := r.slots[s.Slot]
	if !ok {
		return uuid.Nil, nil, problem.Invalid("slots."+s.Slot, "deployment", "slot %s has no deployment to change", s.Slot)
	}
	from, err := stack.LoadVersion(ctx, r.q, r.inst.StackID, int(r.run.FromVersion.Int32))
	if err != nil {
		return uuid.Nil, nil, err
	}
	slot, _ := r.def.Slot(s.Slot)
	old, _ := from.Slot(s.Slot)
	inputs, err := r.wire(ctx, slot)
	if err != nil {
		return uuid.Nil, nil, err
	}
	for name := range old.Inputs {
		if _, still := slot.Inputs[name]; !still {
			inputs[name] = nil
		}
	}
	was := map[string]any{}
	if err := json.Unmarshal(d.Parameters, &was); err != nil {
		return uuid.Nil, nil, err
	}
	detail := map[string]any{"deployment": d.ID, "from_version": d.Version, "from_parameters": was}
	kind, c := deploy.KindUpdate, deploy.Change{Parameters: inputs}
	if s.Action == "upgrade" {
		kind, c.Version = deploy.KindUpgrade, slot.Version
	}
	op, err := r.deps.deploys.RequestTx(ctx, r.tx, r.actor, d.ID, kind, c)
	return op, detail, err
}
