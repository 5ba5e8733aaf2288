package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/kernel/lifecycle"
	"nimbus/app/kernel/outbox"
	"nimbus/app/platform/pulumix"
	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/jobs"
)

// What a deployment's drift stands at.
const (
	InSync       = "in_sync"
	Drifted      = "drifted"
	DriftUnknown = "unknown" // never checked
)

// settleDrift records what an operation that succeeded says of its deployment's drift, in the
// transaction that ends it: a check, what it found; a reconcile (an update that read the
// resources back first) or an accept (a refresh), that the resources are as the state records
// again. A deployment found drifted, or drifted otherwise than before, is told as
// drift.detected; one found in sync after it was drifted, as drift.resolved.
func settleDrift(ctx context.Context, q *dbgen.Queries, op dbgen.Operation) error {
	kind := Kind(op.Kind)
	if kind != KindDriftCheck && kind != KindRefresh && !(kind == KindUpdate && op.Refresh) {
		return nil
	}
	found := []pulumix.Drifted{}
	if kind == KindDriftCheck {
		steps, err := q.ListOperationSteps(ctx, op.ID)
		if err != nil {
			return err
		}
		for _, s := range steps {
			if s.Name == StepDrift {
				if err := json.Unmarshal(s.Result, &found); err != nil {
					return fmt.Errorf("what the drift check found: %w", err)
				}
			}
		}
	}
	status := InSync
	if len(found) > 0 {
		status = Drifted
	}
	raw, _ := json.Marshal(found)
	was, err := recordDrift(ctx, q, op.DeploymentID, status, raw)
	if err != nil {
		return err
	}
	e := outbox.Event{Subject: was.Name, Tenant: was.TenantID, Environment: was.EnvironmentID,
		Instance: was.StackInstanceID.UUID, Deployment: op.DeploymentID,
		Data: map[string]any{"deployment": was.Name, "operation": op.ID.String(), "kind": op.Kind, "resources": found}}
	switch {
	case status == Drifted && (was.Was != Drifted || !sameDrift(was.WasDrift, raw)):
		e.Type = "drift.detected"
	case status == InSync && was.Was == Drifted:
		e.Type = "drift.resolved"
	default:
		return nil
	}
	return outbox.Emit(ctx, q, e)
}

// sameDrift reports whether two lists of drifted resources say the same.
func sameDrift(a, b []byte) bool {
	var x, y []pulumix.Drifted
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ax, _ := json.Marshal(x)
	by, _ := json.Marshal(y)
	return bytes.Equal(ax, by)
}

// QueueDriftCheck queues a drift check of the deployment in tx, when it is still deployed in an
// active environment and nothing else is pending for it: the drift schedule asks it of each
// deployment that is due, and one that is busy is checked at a later scan.
func QueueDriftCheck(ctx context.Context, tx pgx.Tx, queue jobs.Queue, id uuid.UUID) error {
	q := db.Queries(tx)
	d, err := q.GetDeployment(ctx, id)
	if err != nil {
		return err
	}
	if status, err := q.ShareEnvironment(ctx, d.EnvironmentID); err != nil || lifecycle.EnvironmentStatus(status) != lifecycle.EnvironmentActive {
		return err
	}
	if d, err = lockedDeployment(ctx, q, id); err != nil || DeploymentStatus(d.Status) != Deployed {
		return err
	}
	if busy, err := q.AnyOperationPending(ctx, id); err != nil || busy {
		return err
	}
	_, err = queueOperation(ctx, tx, queue, id, KindDriftCheck, uuid.Nil, inputs{Plain: map[string]any{}})
	return err
}
