package deploy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/lifecycle"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/audit"
	"nimbus/app/platform/pulumix"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// State exports a deployment's Pulumi state (secrets in it stay encrypted). Tenant admins may:
// the state holds every property of every resource. Refused while an operation runs, since the
// export reads the stack's working directory, which the operation may be changing.
func (s *Service) State(ctx context.Context, actor access.Principal, id uuid.UUID) ([]byte, error) {
	d, st, err := s.stateStack(ctx, actor, id, access.ComponentDestroy)
	if err != nil {
		return nil, err
	}
	if running, err := db.Queries(s.pool).Running(ctx, id); err != nil {
		return nil, err
	} else if running {
		return nil, problem.Invalid("deployment", "state", "an operation is running on %s: export its state when it has ended", d.Name)
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

// MayRestoreState refuses the actor the restore of a deployment's state as RestoreState would:
// not found when they cannot see the deployment, forbidden unless they are a provider admin.
// It lets the API refuse a restore before it reads the state sent.
func (s *Service) MayRestoreState(ctx context.Context, actor access.Principal, id uuid.UUID) error {
	if _, err := s.get(ctx, actor, id); err != nil {
		return err
	}
	if !actor.ProviderAdmin {
		return problem.ErrForbidden
	}
	return nil
}

// RestoreState replaces a deployment's Pulumi state with an export of it, read from state
// (size bytes), for when something outside Nimbus changed the stack. Provider admins only. The
// restore is an operation of its own, holding the deployment's one active slot so that
// nothing runs on the stack meanwhile (later operations wait for it); the state it replaces is
// kept in the object store first.
func (s *Service) RestoreState(ctx context.Context, actor access.Principal, id uuid.UUID, state io.Reader, size int64) error {
	if err := s.MayRestoreState(ctx, actor, id); err != nil {
		return err
	}
	d, st, err := s.stateStack(ctx, actor, id, access.Permission{})
	if err != nil {
		return err
	}
	lease := uuid.New()
	var op dbgen.Operation
	err = db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		if err := q.LockDeployment(ctx, id); err != nil {
			return err
		}
		if DeploymentStatus(d.Status) == Destroyed {
			return problem.Invalid("deployment", "state", "%s is destroyed", d.Name)
		}
		op, err = startRestore(ctx, q, id, actor.UserID, lease)
		if db.IsUniqueViolation(err) {
			return problem.Invalid("deployment", "state", "an operation is running on %s: restore its state when it has ended", d.Name)
		}
		if err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{Tenant: d.TenantID, Action: "deployment.state_restore", TargetType: "deployment",
			TargetID: id.String(), Diff: map[string]any{"name": d.Name, "bytes": size}})
	})
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	restoreErr := s.restore(ctx, op.ID, lease, st, state)
	e := restored(restoreErr)
	// Ended in a transaction that lets an environment waiting for the deployment go on.
	done := context.WithoutCancel(ctx)
	err = db.BeginFunc(done, s.pool, func(tx pgx.Tx) error {
		if err := advance(done, tx, s.inserter, id); err != nil {
			return err
		}
		err := finish(done, db.Queries(tx), op.ID, lease, e, map[string]int{}, nil)
		if errors.Is(err, lifecycle.ErrIllegalMove) {
			return nil // a worker took it for dead and ended it: what it recorded stands
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	if errors.Is(restoreErr, pulumix.ErrBadState) {
		return problem.Invalid("state", "export", "%v", restoreErr)
	}
	return restoreErr
}

// restore keeps the current state in the object store, then imports state, beating the
// operation's heartbeat meanwhile so that no worker takes it for dead.
func (s *Service) restore(ctx context.Context, opID, lease uuid.UUID, st pulumix.Stack, state io.Reader) error {
	beatCtx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-beatCtx.Done():
				return
			case <-t.C:
				_, _ = beat(beatCtx, db.Queries(s.pool), opID, lease)
			}
		}
	}()
	if s.objects != nil {
		old, err := s.runner.Export(ctx, st)
		switch {
		case errors.Is(err, pulumix.ErrNoStack):
			// Nothing to keep.
		case err != nil:
			return fmt.Errorf("keep the current state: %w", err)
		default:
			if err := s.objects.Put(ctx, "state-backups/"+st.Name+"/"+opID.String()+".json", bytes.NewReader(old), int64(len(old))); err != nil {
				return fmt.Errorf("keep the current state: %w", err)
			}
		}
	}
	// The restore holds the operation's lease: the stack is its alone.
	return s.runner.Import(ctx, alone(st), state)
}

// stateStack returns the deployment the actor may reach with perm (none for provider admins,
// checked by the caller) and its stack.
func (s *Service) stateStack(ctx context.Context, actor access.Principal, id uuid.UUID, perm access.Permission) (dbgen.GetDeploymentRow, pulumix.Stack, error) {
	d, err := s.get(ctx, actor, id)
	if err != nil {
		return d, pulumix.Stack{}, err
	}
	if perm != (access.Permission{}) && !actor.Can(perm, d.TenantID) {
		return d, pulumix.Stack{}, problem.ErrForbidden
	}
	if s.runner == nil {
		return d, pulumix.Stack{}, errors.New("the Pulumi toolchain is not installed on this server")
	}
	ver, err := versionOf(ctx, db.Queries(s.pool), d, d.Version)
	if err != nil {
		return d, pulumix.Stack{}, err
	}
	st, err := stackOf(s.keys, d, ver, d.Parameters, d.SecretKeyID, d.SecretParameters)
	return d, st, err
}
