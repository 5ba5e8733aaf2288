package deploy

import (
	"context"

	"github.com/google/uuid"

	"nimbus/app/domain/policy"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/pulumix"
	"nimbus/db"
	"nimbus/jobs/saga"
)

// policed reports whether the zone's plan policies check the operation's plan: its preview
// then runs on its own, before anything is applied.
func (r *run) policed(ctx context.Context) (bool, error) {
	ok, err := policy.Applies(ctx, db.Queries(r.w.pool), r.op.ID)
	if err != nil {
		return false, saga.Transient(err)
	}
	return ok, nil
}

// police checks the preview's plan against the zone's policies and records what it found; a
// mandatory policy that a resource fails refuses the operation, naming both.
func (r *run) police(ctx context.Context, planned []pulumix.Planned) error {
	plan := make([]policy.Resource, len(planned))
	for i, p := range planned {
		plan[i] = policy.Resource{Type: p.Type, Name: p.Name, URN: p.URN, Op: p.Op, Inputs: p.Inputs}
	}
	check, err := policy.CheckPlan(ctx, db.Queries(r.w.pool), r.op.ID, plan)
	if err != nil {
		return saga.Transient(err)
	}
	if check == nil {
		return nil
	}
	return check.Refusal()
}

// holds refuses to apply a plan checked against other policies than the zone has now.
func (r *run) holds(ctx context.Context) error {
	err := policy.Holds(ctx, db.Queries(r.w.pool), r.op.ID)
	if err != nil && !problem.Refusal(err) {
		return saga.Transient(err)
	}
	return err
}

// carryCheck shows the check of the applied preview's plan as the operation's; policies
// changed since that preview refuse it, as a changed deployment does.
func (r *run) carryCheck(ctx context.Context, preview uuid.UUID) error {
	err := policy.Carry(ctx, db.Queries(r.w.pool), r.op.ID, preview)
	if err != nil && !problem.Refusal(err) {
		return saga.Transient(err)
	}
	return err
}
