package instance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/domain/stack"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/lifecycle"
	"nimbus/app/kernel/problem"
	"nimbus/app/orchestration/deploy"
	"nimbus/app/platform/audit"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// A pending instance is a plan to look at before anything deploys (Request.PreviewOnly): it is
// recorded with its parameters, and every slot whose inputs are all known already — wired to
// literals, to parameters, to expressions over parameters — has its deployment recorded and a
// preview of it queued. The other slots read outputs of slots not deployed yet: their deploy
// previews when its turn comes, before it changes anything, as every slot's deploy does (and
// approvals gate there). Start deploys the instance; Discard lets it go.
//
// What a preview shows does not go stale while the instance waits: its parameters were fixed
// when it was recorded, and its slots' deployments change only through its runs, so a preview
// is what deploying the slot with exactly those inputs does. The deploy carries out each
// succeeded preview's plan, and the engine refuses any change the preview did not show: should
// the cloud have moved meanwhile, that slot's deploy fails as a first deploy fails (the run
// takes down what it made) and a new plan is the way on. A slot whose preview has not
// succeeded when its turn comes (still running, or failed) deploys as any slot does.

// previewable reports whether a slot's inputs are all known before any slot deploys.
func previewable(s stack.Slot) bool {
	for _, w := range s.Inputs {
		if w.Kind == stack.Output || w.Kind == stack.Expression && len(stack.SlotsIn(w.Expr)) > 0 {
			return false
		}
	}
	return true
}

// preview records the deployment of every slot of a new pending instance whose inputs are
// known, and queues its preview, in the caller's transaction. What the wiring gives is worked
// out here, once, and kept for the plan's page (wired): tenants' expressions run when a plan
// is made or deployed, never when one is looked at.
func (d *runner) preview(ctx context.Context, tx pgx.Tx, actor access.Principal, inst dbgen.StackInstance, def stack.Definition) error {
	r := &runCtx{tx: tx, q: db.Queries(tx), inst: inst, def: def, slots: map[string]dbgen.InstanceDeploymentsRow{}, actor: actor, deps: d}
	schemas, err := stack.LoadSchemas(ctx, r.q, def)
	if err != nil {
		return err
	}
	params, err := r.params()
	if err != nil {
		return err
	}
	kept := wired{}
	for _, s := range def.Slots {
		if !previewable(s) {
			// Its deploy wires it, over its upstream slots' outputs; what the parameters alone
			// give of it is worked out for the plan now.
			kept.keep(s.Name, stack.FromParams(ctx, schemas, s, params))
			continue
		}
		inputs, err := r.wire(ctx, s)
		if err != nil {
			return err
		}
		kept.keep(s.Name, stack.FromWired(schemas, s, inputs))
		id, err := r.planWired(ctx, s, inputs)
		if err != nil {
			return err
		}
		if _, err := d.deploys.RequestTx(ctx, tx, actor, id, deploy.KindPreview, deploy.Change{}); err != nil {
			return fmt.Errorf("preview slot %s: %w", s.Name, err)
		}
	}
	raw, err := json.Marshal(kept)
	if err != nil {
		return err
	}
	return r.q.RecordInstanceWiring(ctx, dbgen.RecordInstanceWiringParams{InstanceID: inst.ID, Inputs: raw})
}

// wired is what a pending instance's wiring gave when its plan was made, by slot and input:
// each input the parameters alone give, secret ones left out (see stack.FromParams).
type wired map[string]map[string]any

func (w wired) keep(slot string, known map[string]stack.Known) {
	w[slot] = map[string]any{}
	for input, k := range known {
		w[slot][input] = k.Value
	}
}

// plannedWiring reads what an instance's wiring gave when its plan was made; false for a plan
// made before that was kept.
func plannedWiring(ctx context.Context, q *dbgen.Queries, instanceID uuid.UUID) (wired, bool, error) {
	raw, err := q.InstanceWiring(ctx, instanceID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	var w wired
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, false, fmt.Errorf("read the wiring of instance %s: %w", instanceID, err)
	}
	return w, true, nil
}

// Start deploys a pending instance: each slot's succeeded preview is carried out, the other
// slots deploy as their upstream slots have. keepOnFailure keeps what a failed deploy made, for
// a retry.
func (s *Service) Start(ctx context.Context, actor access.Principal, id uuid.UUID, keepOnFailure bool) (Instance, error) {
	run := dbgen.CreateStackRunParams{KeepOnFailure: keepOnFailure}
	return s.ask(ctx, actor, id, access.StackInstanceDeploy, "start", run, func(_ *dbgen.Queries, inst dbgen.StackInstance) (RunKind, error) {
		return RunDeploy, pending("deployed from its plan")(inst)
	})
}

// Discard lets a pending instance go: the deployments its slots were given, never deployed, are
// let go (previews not started are withdrawn) and it ends destroyed at once, its names free
// again. A slot whose preview is running is waited for: then the instance is destroyed by a
// destroy run, as Destroy does. Whoever may deploy it may discard it, as holding nothing yet.
func (s *Service) Discard(ctx context.Context, actor access.Principal, id uuid.UUID) (Instance, error) {
	err := db.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := db.Queries(tx)
		inst, err := s.lockFor(ctx, q, actor, id, access.StackInstanceDeploy)
		if err != nil {
			return err
		}
		if err := pending("discarded")(inst); err != nil {
			return err
		}
		rows, err := q.InstanceDeployments(ctx, uuid.NullUUID{UUID: inst.ID, Valid: true})
		if err != nil {
			return err
		}
		left := false
		for _, d := range rows {
			if d.Status == string(deploy.Destroyed) {
				continue
			}
			gone, err := deploy.Discard(ctx, q, d.ID)
			if err != nil {
				return err
			}
			left = left || !gone
		}
		if left {
			_, err = s.run.queue(ctx, tx, inst, dbgen.CreateStackRunParams{Kind: string(RunDestroy), Source: source(ctx),
				RequestedBy: uuid.NullUUID{UUID: actor.UserID, Valid: actor.UserID != uuid.Nil}})
		} else {
			err = move(ctx, q, inst, lifecycle.InstanceDestroyed, "")
		}
		if err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{Tenant: inst.TenantID, Action: "stack_instance.discard", TargetType: "stack_instance",
			TargetID: inst.ID.String(), Diff: map[string]any{"name": inst.Name}})
	})
	if err != nil {
		return Instance{}, fmt.Errorf("discard stack instance: %w", err)
	}
	return s.Get(ctx, actor, id)
}

// pending refuses an instance that is not pending, saying what only a pending one is.
func pending(what string) func(dbgen.StackInstance) error {
	return func(inst dbgen.StackInstance) error {
		if lifecycle.InstanceStatus(inst.Status) != lifecycle.InstancePending {
			return problem.Invalid("instance", "state", "%s is %s: only a pending instance is %s", inst.Name, inst.Status, what)
		}
		return nil
	}
}

// Preview is what a slot of an instance was previewed as: the newest preview of its deployment.
type Preview struct {
	OperationID uuid.UUID `json:"operation_id"`
	Status      string    `json:"status"`
	deployment  uuid.UUID
}

// previews are the newest preview of each slot's deployment, by slot.
func previews(ctx context.Context, q *dbgen.Queries, instanceID uuid.UUID) (map[string]Preview, error) {
	rows, err := q.SlotPreviews(ctx, uuid.NullUUID{UUID: instanceID, Valid: true})
	if err != nil {
		return nil, err
	}
	out := map[string]Preview{}
	for _, r := range rows {
		out[r.Slot] = Preview{OperationID: r.ID, Status: r.Status, deployment: r.DeploymentID}
	}
	return out, nil
}

// startPlanned deploys a slot's pending deployment: it carries out the slot's preview when that
// succeeded, and previews anew otherwise (see above).
func startPlanned(ctx context.Context, r *runCtx, d dbgen.InstanceDeploymentsRow) (uuid.UUID, error) {
	if d.Status == string(deploy.Pending) {
		p, err := previews(ctx, r.q, r.inst.ID)
		if err != nil {
			return uuid.Nil, err
		}
		if pv, ok := p[deref(d.Slot)]; ok && pv.Status == string(deploy.Succeeded) {
			return r.deps.deploys.ApplyTx(ctx, r.tx, r.actor, pv.OperationID)
		}
	}
	return r.deps.deploys.StartTx(ctx, r.tx, r.actor, d.ID, deploy.KindDeploy)
}
