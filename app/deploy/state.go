package deploy

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"nimbus/app/access"
	"nimbus/app/audit"
	"nimbus/app/problem"
	"nimbus/app/pulumix"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// State exports a deployment's Pulumi state (secrets in it stay encrypted). Tenant admins may:
// the state holds every property of every resource.
func (s *Service) State(ctx context.Context, actor access.Principal, id uuid.UUID) ([]byte, error) {
	d, st, err := s.stateStack(ctx, actor, id, "component:destroy")
	if err != nil {
		return nil, err
	}
	data, err := s.runner.Export(ctx, st)
	if errors.Is(err, pulumix.ErrNoStack) {
		return nil, problem.Invalid("deployment", "state", "%s has no state: it was never deployed, or it was destroyed", d.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("export the state of %s: %w", d.Name, err)
	}
	err = db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		return audit.Record(ctx, q, actor, audit.Event{Tenant: d.TenantID, Action: "deployment.state_export", TargetType: "deployment",
			TargetID: id.String(), Diff: map[string]any{"name": d.Name}})
	})
	return data, err
}

// RestoreState replaces a deployment's Pulumi state with an export of it, for when something
// outside Nimbus changed the stack. Provider admins only; refused while an operation runs on
// the deployment. The state it replaces is kept in the object store first.
func (s *Service) RestoreState(ctx context.Context, actor access.Principal, id uuid.UUID, state []byte) error {
	if !actor.ProviderAdmin {
		if _, err := s.get(ctx, actor, id); err != nil {
			return err
		}
		return problem.ErrForbidden
	}
	d, st, err := s.stateStack(ctx, actor, id, "")
	if err != nil {
		return err
	}
	active, err := dbgen.New(s.pool).ListOperations(ctx, dbgen.ListOperationsParams{AllTenants: true, DeploymentID: nullID(id), Status: nullText("running")})
	if err != nil {
		return err
	}
	if len(active) > 0 {
		return problem.Invalid("deployment", "state", "an operation is running on %s: restore its state when it has ended", d.Name)
	}
	err = s.runner.Import(ctx, st, state)
	if errors.Is(err, pulumix.ErrBadState) {
		return problem.Invalid("state", "export", "%v", err)
	}
	if err != nil {
		return fmt.Errorf("restore the state of %s: %w", d.Name, err)
	}
	return db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		return audit.Record(ctx, q, actor, audit.Event{Tenant: d.TenantID, Action: "deployment.state_restore", TargetType: "deployment",
			TargetID: id.String(), Diff: map[string]any{"name": d.Name, "bytes": len(state)}})
	})
}

// stateStack returns the deployment the actor may reach with perm ("" for provider admins,
// checked by the caller) and its stack.
func (s *Service) stateStack(ctx context.Context, actor access.Principal, id uuid.UUID, perm access.Permission) (dbgen.GetDeploymentRow, pulumix.Stack, error) {
	d, err := s.get(ctx, actor, id)
	if err != nil {
		return d, pulumix.Stack{}, err
	}
	if perm != "" && !actor.Can(perm, d.TenantID) {
		return d, pulumix.Stack{}, problem.ErrForbidden
	}
	if s.runner == nil {
		return d, pulumix.Stack{}, errors.New("the Pulumi toolchain is not installed on this server")
	}
	st, err := stackOf(ctx, dbgen.New(s.pool), s.keys, d, d.Version, d.Parameters, d.SecretKeyID, d.SecretParameters)
	return d, st, err
}
