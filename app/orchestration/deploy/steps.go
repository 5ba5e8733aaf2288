package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/domain/governance"
	"nimbus/app/domain/inventory"
	"nimbus/app/domain/resolver"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/pulumix"
	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/jobs/saga"
)

// The names of the steps, as their checkpoints in operation_steps know them.
const (
	StepResolve = "resolve" // resolvers fill the inputs bound to them
	StepGovern  = "govern"  // the tenant's rules, on the completed parameters
	StepAdopt   = "adopt"   // the engine imports the resource an adoption takes over
	StepPreview = "preview" // what the engine would change
	StepApprove = "approve" // waits for the approvals a policy asks for
	StepUp      = "up"      // the engine makes the change
	StepRefresh = "refresh" // the engine reads the resources back
	StepDestroy = "destroy" // the engine deletes the resources
	StepRecord  = "record"  // the deployment takes what the operation left
	StepDrift   = "drift"   // the engine compares the cloud with the state
)

// steps lists the steps of the run's operation, top to bottom; a step's Undo reverses it when a
// later step fails for good. A new kind of operation starts here.
//
// The steps that change nothing outside the database but what a preview writes begin without
// waiting for the disk (saga.Step.LazyStart): none needs to know it was interrupted, and what
// resolve hands out, the only thing undone, are rows of the database. The engine's changes (up,
// destroy, refresh) and the drift check begin once their start, and every checkpoint before
// it, is durable: an up found interrupted refreshes first, and a failure undoes it.
func (r *run) steps() []saga.Step {
	resolve := saga.Step{Name: StepResolve, Do: r.resolve, Undo: r.unresolve, LazyStart: true}
	govern := saga.Step{Name: StepGovern, Do: r.govern, LazyStart: true}
	preview := saga.Step{Name: StepPreview, Do: r.preview, LazyStart: true}
	approve := saga.Step{Name: StepApprove, Do: r.approve, LazyStart: true}
	switch Kind(r.op.Kind) {
	case KindPreview:
		return []saga.Step{resolve, govern, preview}
	case KindDeploy:
		// Nothing existed before: undoing it is destroying what it made. An adoption imports
		// the resource it takes over first, so that its preview and up change that resource
		// rather than make another; undone, it is forgotten, and left in the cloud.
		steps := []saga.Step{resolve, govern}
		if r.op.Adopts.Valid {
			steps = append(steps, saga.Step{Name: StepAdopt, Do: r.adopt, Undo: r.forget})
		}
		return append(steps, preview, approve,
			saga.Step{Name: StepUp, Do: r.up, Undo: r.destroyMade},
			saga.Step{Name: StepRecord, Do: r.recordDeployed, LazyStart: true})
	case KindUpdate, KindUpgrade:
		// The deployment worked before: undoing is going back to how it was.
		return []saga.Step{resolve, govern, preview, approve,
			{Name: StepUp, Do: r.up, Undo: r.rollBack},
			{Name: StepRecord, Do: r.recordDeployed, LazyStart: true}}
	case KindRefresh:
		return []saga.Step{{Name: StepRefresh, Do: r.refresh}}
	case KindDriftCheck:
		// What it found is recorded as the operation ends (see recordDrift).
		return []saga.Step{{Name: StepDrift, Do: r.checkDrift}}
	case KindDestroy:
		// The preview shows its approvers what it would delete.
		return []saga.Step{{Name: StepPreview, Do: r.previewDestroy, LazyStart: true}, approve,
			{Name: StepDestroy, Do: r.destroy},
			{Name: StepRecord, Do: r.recordDestroyed, LazyStart: true}}
	}
	return nil
}

// run is one worker's run of an operation's steps: what the steps read, and what they tell
// the end of the run.
type run struct {
	w *Worker
	// op is the operation as claimed, its parameters and secrets as its resolve step filled
	// them once that ran.
	op       dbgen.Operation
	dep      dbgen.GetDeploymentRow
	lease    uuid.UUID
	resumed  bool             // an earlier attempt began it: its engine may have made resources the state does not show
	current  pulumix.Stack    // the deployment as it is before the operation
	access   clusterAccess    // how its engine reaches the cluster, the same whatever version it runs
	resting  DeploymentStatus // what the deployment shows while the operation awaits approval
	progress *progress        // the engine's output and resource events, recorded as they come
	// What the engine steps said, for the operation's end: the changes by kind (a later step's
	// count of a kind replaces an earlier one's), and the exit code of an engine that refused.
	changes map[string]int
	exit    *int
	// untouched says this run's up failed before the engine touched a resource.
	untouched bool
	// versions are the component's versions this run read, program included: its start, its
	// resolve step and its engine steps each need the one it brings.
	versions map[int32]dbgen.GetComponentVersionRow
}

// version is the deployment's component at version n, read once in a run.
func (r *run) version(ctx context.Context, n int32) (dbgen.GetComponentVersionRow, error) {
	if ver, ok := r.versions[n]; ok {
		return ver, nil
	}
	ver, err := versionOf(ctx, db.Queries(r.w.pool), r.dep, n)
	if err == nil {
		r.versions[n] = ver
	}
	return ver, err
}

// resolve fills the operation's bound inputs (see Worker.resolve).
func (r *run) resolve(ctx context.Context, _ *saga.Run) (json.RawMessage, error) {
	if !r.op.TargetVersion.Valid {
		return nil, nil
	}
	ver, err := r.version(ctx, r.op.TargetVersion.Int32)
	if err != nil {
		return nil, err
	}
	values, filled, err := r.w.resolve(ctx, r.dep, r.op, ver)
	if err == nil {
		r.op = filled
	}
	return values, err
}

// unresolve gives back what this operation was handed; what the deployment held before stays.
func (r *run) unresolve(ctx context.Context, _ *saga.Run) error {
	return db.Tx(ctx, r.w.pool, func(q *dbgen.Queries) error { return resolver.ReleaseOperation(ctx, q, r.op.ID) })
}

// govern checks the tenant's rules on the whole parameter set, resolved values included; a rule
// changed since the request counts.
func (r *run) govern(ctx context.Context, _ *saga.Run) (json.RawMessage, error) {
	params := map[string]any{}
	if err := json.Unmarshal(r.op.Parameters, &params); err != nil {
		return nil, err
	}
	err := governance.Check(ctx, db.Queries(r.w.pool), r.dep.TenantID, r.dep.ComponentID, params)
	if err != nil && (errors.Is(err, problem.ErrForbidden) || problem.FieldOf(err) != "") {
		return nil, err // refused: the same next time
	}
	if err != nil {
		return nil, saga.Transient(err)
	}
	return nil, nil
}

// previewed is what a preview step keeps: what it would change, and the engine's plan of it
// when a later step applies the plan. No plan means the up previews for itself.
type previewed struct {
	Changes map[string]int  `json:"changes,omitempty"`
	Plan    json.RawMessage `json:"plan,omitempty"`
}

// preview shows what the operation would change. An operation that goes straight on to its up
// leaves the preview to the up, which previews and applies in one engine process; one that
// waits for approval or for its zone's policies, and a preview of its own, saves the plan the
// approvers see, the policies check and the up later applies; one that carries out an earlier
// preview takes that preview's plan.
func (r *run) preview(ctx context.Context, _ *saga.Run) (json.RawMessage, error) {
	if r.op.Applies.Valid {
		return r.applied(ctx, r.op.Applies.UUID)
	}
	if Kind(r.op.Kind) != KindPreview {
		bound, err := r.bound(ctx)
		if err != nil {
			return nil, err
		}
		policed, err := r.policed(ctx)
		if err != nil {
			return nil, err
		}
		if !bound && !policed {
			// A result all the same: a run resumed after a crash reads it, and a null one is
			// no result.
			return json.Marshal(previewed{})
		}
	}
	st, err := r.target(ctx)
	if err != nil {
		return nil, err
	}
	res, err := r.w.runner.Preview(ctx, st, r.progress)
	r.count(res)
	if err != nil {
		return nil, r.engine(err)
	}
	if err := r.police(ctx, res.Planned); err != nil {
		return nil, err
	}
	return json.Marshal(previewed{Changes: res.Changes, Plan: res.Plan})
}

// applied takes the plan of the preview the operation carries out, and shows what it planned.
// A deployment changed since that preview (by an operation queued before this one, say) makes
// its plan one nobody saw hold: the operation is refused, as the request would have been.
func (r *run) applied(ctx context.Context, preview uuid.UUID) (json.RawMessage, error) {
	q := db.Queries(r.w.pool)
	saved, err := q.PreviewResult(ctx, preview)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, problem.Invalid("operation", "preview", "the preview this operation applies is gone")
	} else if err != nil {
		return nil, saga.Transient(err)
	}
	changed, err := q.ChangedSince(ctx, dbgen.ChangedSinceParams{DeploymentID: r.dep.ID, Since: saved.CreatedAt})
	if err != nil {
		return nil, saga.Transient(err)
	}
	if changed {
		return nil, problem.Invalid("operation", "stale", "%s changed after the preview this operation applies: preview it again", r.dep.Name)
	}
	var p previewed
	if err := json.Unmarshal(saved.Result, &p); err != nil {
		return nil, fmt.Errorf("the preview's plan: %w", err)
	}
	if err := r.progress.planOf(preview); err != nil {
		return nil, saga.Transient(err)
	}
	if err := r.carryCheck(ctx, preview); err != nil {
		return nil, err
	}
	for k, n := range p.Changes {
		r.changes[k] = n
	}
	return saved.Result, nil
}

// bound reports whether the operation will wait for approval (see Gate.Binds).
func (r *run) bound(ctx context.Context) (bool, error) {
	if r.w.gate == nil {
		return false, nil
	}
	bound, err := r.w.gate.Binds(ctx, db.Queries(r.w.pool), gated(r.op, r.dep))
	if err != nil {
		return false, saga.Transient(err)
	}
	return bound, nil
}

func (r *run) up(ctx context.Context, sr *saga.Run) (json.RawMessage, error) {
	st, err := r.target(ctx)
	if err != nil {
		return nil, err
	}
	var p previewed
	if err := sr.Result(StepPreview, &p); err != nil {
		return nil, err
	}
	// Asked again when a crash interrupted the up: policies changed meanwhile refuse the rest of
	// it, and what the first attempt may have applied is undone.
	interrupted := sr.Interrupted(StepUp)
	if err := r.holds(ctx); err != nil {
		r.untouched = !interrupted
		return nil, err
	}
	recheck := false
	if interrupted {
		if recheck, err = r.policed(ctx); err != nil {
			return nil, err
		}
	}
	res, err := r.converge(ctx, alone(st), p.Plan, interrupted, recheck)
	if err != nil {
		// Refused in its preview or by its plan before touching a resource, it leaves nothing
		// to undo; after a crash, an earlier attempt may have.
		r.untouched = !res.Began && !interrupted
		return nil, err
	}
	return json.Marshal(res.Outputs)
}

// destroyMade undoes a first deploy's up; an adoption's forgets what it adopted first, so the
// destroy leaves it in the cloud.
func (r *run) destroyMade(ctx context.Context, sr *saga.Run) error {
	if r.untouched {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, r.w.timeout) // an undo is not cancelled, but must end
	defer cancel()
	r.progress.undo()
	if r.op.Adopts.Valid {
		if err := r.forget(ctx, sr); err != nil {
			return err
		}
	}
	_, err := r.destroy(ctx, nil)
	return err
}

// rollBack undoes an update's or an upgrade's up: the deployment goes back to its version and
// parameters.
func (r *run) rollBack(ctx context.Context, _ *saga.Run) error {
	if r.untouched {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, r.w.timeout)
	defer cancel()
	r.progress.undo()
	_, err := r.converge(ctx, alone(r.current), nil, r.resumed, false)
	return err
}

// converge brings the stack's resources to st: exactly as plan says, when there is one. A
// worker that died during an up left resources the state may not show: after one, the
// operation learns what exists first, and no longer holds to a plan made before them. With
// recheck (the zone has policies), the plan made after the refresh is checked and recorded in
// place of the first, then applied: a resumed up answers to the policies as the first did.
func (r *run) converge(ctx context.Context, st pulumix.Stack, plan []byte, afterCrash, recheck bool) (pulumix.Result, error) {
	if afterCrash {
		if _, err := r.w.runner.Refresh(ctx, st, r.progress); err != nil {
			return pulumix.Result{}, r.engine(err)
		}
		plan = nil
		if recheck {
			// Its log joins the operation's; its events would mark done resources planned again.
			res, err := r.w.runner.Preview(ctx, st, struct{ io.Writer }{r.progress})
			if err != nil {
				return res, r.engine(err)
			}
			if err := r.police(ctx, res.Planned); err != nil {
				return pulumix.Result{}, err
			}
			plan = res.Plan
		}
	}
	var res pulumix.Result
	var err error
	if plan != nil {
		res, err = r.w.runner.Apply(ctx, st, plan, r.progress)
	} else {
		res, err = r.w.runner.Up(ctx, st, r.progress)
	}
	if err != nil {
		return res, r.engine(err)
	}
	r.count(res)
	return res, nil
}

// checkDrift finds what changed in the cloud behind the state's back; its result is the list.
func (r *run) checkDrift(ctx context.Context, _ *saga.Run) (json.RawMessage, error) {
	res, err := r.w.runner.DriftCheck(ctx, r.current, r.progress)
	r.count(res)
	if err != nil {
		return nil, r.engine(err)
	}
	if res.Drift == nil {
		res.Drift = []pulumix.Drifted{}
	}
	return json.Marshal(res.Drift)
}

func (r *run) refresh(ctx context.Context, _ *saga.Run) (json.RawMessage, error) {
	res, err := r.w.runner.Refresh(ctx, alone(r.current), r.progress)
	return r.count(res), r.engine(err)
}

// previewDestroy shows the approvers what a destroy would delete; a destroy that does not wait
// for them previews within its own engine process.
func (r *run) previewDestroy(ctx context.Context, _ *saga.Run) (json.RawMessage, error) {
	if bound, err := r.bound(ctx); err != nil || !bound {
		return nil, err
	}
	res, err := r.w.runner.PreviewDestroy(ctx, alone(r.current), r.progress)
	return r.count(res), r.engine(err)
}

func (r *run) destroy(ctx context.Context, _ *saga.Run) (json.RawMessage, error) {
	res, err := r.w.runner.Destroy(ctx, alone(r.current), r.progress)
	return r.count(res), r.engine(err)
}

// recordDeployed leaves the deployment with the version, parameters and outputs the operation
// brought, and gives back the addresses it moved away from.
func (r *run) recordDeployed(ctx context.Context, sr *saga.Run) (json.RawMessage, error) {
	outputs := json.RawMessage("{}")
	if err := sr.Result(StepUp, &outputs); err != nil {
		return nil, err
	}
	return nil, db.Tx(ctx, r.w.pool, func(q *dbgen.Queries) error {
		now, err := q.GetOperation(ctx, r.op.ID) // with what its resolvers filled in
		if err != nil {
			return err
		}
		if err := resolver.SettleOperation(ctx, q, r.op.ID); err != nil {
			return err
		}
		err = land(ctx, q, dbgen.UpdateDeploymentInputsParams{ID: r.dep.ID, Version: now.TargetVersion.Int32,
			Parameters: now.Parameters, SecretParameters: now.SecretParameters, SecretKeyID: now.SecretKeyID}, Deployed, outputs)
		if err != nil {
			return err
		}
		return r.inventory(ctx, q, false)
	})
}

// inventory keeps the deployment's configuration items in step with what the operation did to
// its resources, in the transaction that records the operation's end.
func (r *run) inventory(ctx context.Context, q *dbgen.Queries, destroyed bool) error {
	rows, err := q.OperationResources(ctx, r.op.ID)
	if err != nil {
		return err
	}
	end := inventory.Ending{Operation: r.op.ID, Deployment: r.dep.ID, Destroyed: destroyed}
	for _, row := range rows {
		if pulumix.ResourceStatus(row.Status) != pulumix.ResourceDone {
			continue
		}
		outputs := map[string]any{}
		if err := json.Unmarshal(row.Outputs, &outputs); err != nil {
			return fmt.Errorf("outputs of %s: %w", row.Urn, err)
		}
		end.Resources = append(end.Resources, inventory.Resource{URN: row.Urn, Type: row.Type, Name: row.Name, Op: row.Op,
			ProviderID: row.ProviderID, Outputs: outputs})
	}
	return inventory.Record(ctx, q, end)
}

// recordDestroyed gives back what resolvers handed the deployment, and its secrets; its plain
// parameters stay, for the history.
func (r *run) recordDestroyed(ctx context.Context, _ *saga.Run) (json.RawMessage, error) {
	return nil, db.Tx(ctx, r.w.pool, func(q *dbgen.Queries) error {
		if err := resolver.ReleaseDeployment(ctx, q, r.dep.ID); err != nil {
			return err
		}
		err := land(ctx, q, dbgen.UpdateDeploymentInputsParams{ID: r.dep.ID, Version: r.dep.Version, Parameters: r.dep.Parameters},
			Destroyed, json.RawMessage("{}"))
		if err != nil {
			return err
		}
		return r.inventory(ctx, q, true)
	})
}

// target is the stack the operation brings, read when a step needs it: the resolve step
// completes the operation's parameters first.
func (r *run) target(ctx context.Context) (pulumix.Stack, error) {
	if !r.op.TargetVersion.Valid {
		return r.current, nil
	}
	ver, err := r.version(ctx, r.op.TargetVersion.Int32)
	if err != nil {
		return pulumix.Stack{}, err
	}
	st, err := stackOf(r.w.keys, r.dep, ver, r.op.Parameters, r.op.SecretKeyID, r.op.SecretParameters)
	if err != nil {
		return pulumix.Stack{}, err
	}
	if r.op.SourceCode != nil {
		st.Code = *r.op.SourceCode // a preview from git: the branch's program, the version's inputs
	}
	r.access.give(&st)
	st.Refresh = r.op.Refresh
	return st, nil
}

// alone marks a stack the operation's lease holds alone, for the engine steps that take its
// lock: a lock found on it was left by an engine that crashed (a preview takes none).
func alone(st pulumix.Stack) pulumix.Stack {
	st.Exclusive = true
	return st
}

// count keeps what an engine step changed, for the operation's end, and returns it as the step's
// result.
func (r *run) count(res pulumix.Result) json.RawMessage {
	for k, n := range res.Changes {
		r.changes[k] = n
	}
	b, _ := json.Marshal(res.Changes)
	return b
}

// engine keeps the exit code of an engine that refused, and sorts the error for the saga:
// engine refusals are final, anything else (the state backend out of reach, a process that
// could not start) may pass.
func (r *run) engine(err error) error {
	var ee *pulumix.EngineError
	if errors.As(err, &ee) {
		r.exit = &ee.ExitCode
	}
	if err == nil || ee != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return saga.Transient(err)
}
