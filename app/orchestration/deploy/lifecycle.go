package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"nimbus/app/kernel/lifecycle"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/tracing"
	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/jobs"
	"nimbus/jobs/saga"
)

// This file holds the moves of an operation and of its steps' checkpoints: the only code that
// writes operations and operation_steps (TestLifecycle_SoleWriter keeps it so), each through a
// statement of db/queries/operations.sql in the caller's transaction. A move between statuses
// names the status it starts from: from anywhere else it changes nothing and says so, with
// ErrIllegalMove, ErrNotWaiting, or false for a cancel. Writes that move no status (the
// parameters resolvers completed, a truncated log, a step's checkpoint) are here too, and so is
// what the deployment shows (moveDeployment, land).

// OperationMachine is an operation's life. Its moves are the functions below; each is a
// statement that changes the row only from the statuses it names (db/queries/operations.sql),
// so a move that finds the operation elsewhere reports lifecycle.ErrIllegalMove: the operation
// moved on meanwhile (another worker took it over, a decision or a cancel came first).
var OperationMachine = lifecycle.Machine[Status]{
	Name: "operation", Table: "operations", Column: "status", Writer: "app/orchestration/deploy/lifecycle.go", Start: Queued,
	Moves: map[Status][]Status{
		Queued:           {Running, Cancelled},
		Running:          {Succeeded, Failed, Cancelled, Rejected, Queued, AwaitingApproval},
		AwaitingApproval: {Queued, Rejected, Cancelled},
	},
}

// DeploymentMachine is what a deployment shows: at rest, or busy while an operation changes
// it; destroyed is its end. An operation may start from any rest and from a busy status (its
// own, resumed after a crash), and leaves the deployment at any rest; only a busy deployment
// or a pending one (discarded, never deployed) becomes destroyed.
var DeploymentMachine = lifecycle.Machine[DeploymentStatus]{
	Name: "deployment", Table: "deployed_components", Column: "status", Writer: "app/orchestration/deploy/lifecycle.go", Start: Pending,
	Moves: deploymentMoves(),
}

func deploymentMoves() map[DeploymentStatus][]DeploymentStatus {
	rest := []DeploymentStatus{Pending, Deployed, Broken, Interrupted}
	busy := []DeploymentStatus{Deploying, Upgrading, Destroying}
	moves := map[DeploymentStatus][]DeploymentStatus{}
	for _, s := range rest {
		moves[s] = slices.Concat(rest, busy)
	}
	for _, s := range busy {
		moves[s] = slices.Concat(rest, busy, []DeploymentStatus{Destroyed})
	}
	moves[Pending] = append(moves[Pending], Destroyed)
	return moves
}

func illegal(move string, id uuid.UUID) error {
	return fmt.Errorf("%w: %s operation %s", lifecycle.ErrIllegalMove, move, id)
}

// ErrNotWaiting refuses to end, resume or rewind an operation that no longer awaits approval.
var ErrNotWaiting = problem.Invalid("operation", "state", "the operation no longer awaits approval")

func leased(id uuid.UUID) uuid.NullUUID { return uuid.NullUUID{UUID: id, Valid: true} }

// queueOperation records an operation of the kind bringing in, and hands it to the workers.
func queueOperation(ctx context.Context, tx pgx.Tx, queue jobs.Queue, deploymentID uuid.UUID, kind Kind, by uuid.UUID, in inputs) (dbgen.Operation, error) {
	plain, _ := json.Marshal(in.Plain)
	params := dbgen.CreateOperationParams{DeploymentID: deploymentID, Kind: string(kind),
		RequestedBy: nullID(by), Parameters: plain, Rotate: []string{}, Applies: nullID(in.Applies), Refresh: in.Refresh, Adopts: nullID(in.Adopts)}
	if in.Rotate != nil {
		params.Rotate = in.Rotate
	}
	if s := in.Source; s != nil {
		params.SourceLink, params.SourceRef, params.SourceCommit, params.SourceCode = nullID(s.Link), s.Ref, s.Commit, &s.code
	}
	if in.Version != 0 {
		params.TargetVersion = pgtype.Int4{Int32: in.Version, Valid: true}
		params.SecretParameters, params.SecretKeyID = in.Sealed, &in.KeyID
	}
	op, err := db.Queries(tx).CreateOperation(ctx, params)
	if err != nil {
		return op, err
	}
	// The request's span names the operation; the job carries the span on to the worker.
	ctx = tracing.Operation(ctx, op.ID, op.Kind)
	_, err = queue.InsertTx(ctx, tx, OperationArgs{OperationID: op.ID}, nil)
	return op, err
}

// startRestore records a restore running under the given lease in its own request; it takes
// the deployment's one active slot or fails with a unique violation.
func startRestore(ctx context.Context, q *dbgen.Queries, deploymentID, by, held uuid.UUID) (dbgen.Operation, error) {
	return q.StartRestore(ctx, dbgen.StartRestoreParams{DeploymentID: deploymentID, RequestedBy: nullID(by), Lease: leased(held)})
}

// claim takes a queued operation, or one whose worker stopped beating, under a new lease. A
// unique violation means another operation runs on the deployment.
func claim(ctx context.Context, q *dbgen.Queries, id, held uuid.UUID) (dbgen.Operation, error) {
	op, err := q.ClaimOperation(ctx, dbgen.ClaimOperationParams{ID: id, Lease: leased(held)})
	if errors.Is(err, pgx.ErrNoRows) {
		return op, illegal("claim", id)
	}
	return op, err
}

// requeue sends an operation whose worker died back to the queue, to wait there for a place
// among its tenant's running operations; one whose worker is alive is let be.
func requeue(ctx context.Context, q *dbgen.Queries, id uuid.UUID) error {
	_, err := q.RequeueStaleOperation(ctx, id)
	return err
}

// ResumeRestored hands every operation a restored database shows running back to the workers,
// in the caller's transaction, and returns their ids. A restore is a crash as an operation
// sees it: its checkpoints say where it was, and a resumed step is safe to run again (an up
// refreshes and converges), so it goes on from there rather than ending half done.
func ResumeRestored(ctx context.Context, tx pgx.Tx, queue jobs.Queue) ([]uuid.UUID, error) {
	ids, err := db.Queries(tx).RequeueRestoredOperations(ctx)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		if _, err := queue.InsertTx(ctx, tx, OperationArgs{OperationID: id}, nil); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// beat says the holder of the lease is alive, and learns whether a cancel was asked for.
func beat(ctx context.Context, q *dbgen.Queries, id, held uuid.UUID) (cancelRequested bool, err error) {
	cancelRequested, err = q.HeartbeatOperation(ctx, dbgen.HeartbeatOperationParams{ID: id, Lease: leased(held)})
	if errors.Is(err, pgx.ErrNoRows) {
		return false, errLeaseLost
	}
	return cancelRequested, err
}

// fill stores the parameters an operation applies once its resolvers completed them, with its
// secret ones sealed (nil keeps those it has).
func fill(ctx context.Context, q *dbgen.Queries, id uuid.UUID, params json.RawMessage, keyID string, sealed []byte) error {
	if err := q.SetOperationParameters(ctx, dbgen.SetOperationParametersParams{ID: id, Parameters: params}); err != nil {
		return err
	}
	if sealed == nil {
		return nil
	}
	return q.SetOperationSecrets(ctx, dbgen.SetOperationSecretsParams{ID: id, SecretParameters: sealed, SecretKeyID: &keyID})
}

// markTruncated records that the operation's log outgrew the database.
func markTruncated(ctx context.Context, q *dbgen.Queries, id uuid.UUID) error {
	return q.MarkLogTruncated(ctx, id)
}

// handBack returns a running operation to the queue for its job's next attempt.
func handBack(ctx context.Context, q *dbgen.Queries, id, held uuid.UUID) error {
	n, err := q.HandBackOperation(ctx, dbgen.HandBackOperationParams{ID: id, Lease: leased(held)})
	if err == nil && n == 0 {
		return illegal("hand back", id)
	}
	return err
}

// park sets a running operation aside until its approval: it gives up its lease and keeps the
// deployment's active slot. One whose cancel was asked for is not parked.
func park(ctx context.Context, q *dbgen.Queries, id, held uuid.UUID) error {
	n, err := q.ParkOperation(ctx, dbgen.ParkOperationParams{ID: id, Lease: leased(held)})
	if err == nil && n == 0 {
		return illegal("park", id)
	}
	return err
}

// Resume hands an operation that awaited approval back to the workers, in the caller's
// transaction: it goes on from the step after its approval.
func Resume(ctx context.Context, tx pgx.Tx, queue jobs.Queue, id uuid.UUID) error {
	kind, err := db.Queries(tx).ResumeOperation(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotWaiting
	}
	if err != nil {
		return err
	}
	// The approving request's span names the operation, and its job goes on in that trace.
	ctx = tracing.Operation(ctx, id, kind)
	_, err = queue.InsertTx(ctx, tx, OperationArgs{OperationID: id}, nil)
	return err
}

// Rewind sends an operation that awaits approval back to one of its steps and hands it to the
// workers, in the caller's transaction: that step and every one after it run again. Rewound to
// its preview, it forgets what the preview planned.
func Rewind(ctx context.Context, tx pgx.Tx, queue jobs.Queue, id uuid.UUID, step string) error {
	q := db.Queries(tx)
	n, err := q.RewindOperationSteps(ctx, dbgen.RewindOperationStepsParams{OperationID: id, Step: step})
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotWaiting
	}
	if step == StepPreview {
		if err := q.ForgetPlan(ctx, id); err != nil {
			return err
		}
	}
	return Resume(ctx, tx, queue, id)
}

// endWaiting ends an operation that awaits approval as status, with reason as its error.
func endWaiting(ctx context.Context, q *dbgen.Queries, id uuid.UUID, status Status, reason string) error {
	n, err := q.EndWaitingOperation(ctx, dbgen.EndWaitingOperationParams{ID: id, Status: string(status), Error: reason})
	if err == nil && n == 0 {
		return ErrNotWaiting
	}
	return err
}

// cancelQueued ends an operation that has not started; it reports false when it had.
func cancelQueued(ctx context.Context, q *dbgen.Queries, id uuid.UUID) (bool, error) {
	n, err := q.CancelQueuedOperation(ctx, id)
	return n > 0, err
}

// withdrawPreviews ends a deployment's previews that have not started: what they would show
// no longer matters once the deployment is let go.
func withdrawPreviews(ctx context.Context, q *dbgen.Queries, deploymentID uuid.UUID) error {
	_, err := q.CancelQueuedPreviews(ctx, deploymentID)
	return err
}

// requestCancel asks a running operation to stop at its next heartbeat; it reports false when
// it was not running.
func requestCancel(ctx context.Context, q *dbgen.Queries, id uuid.UUID) (bool, error) {
	n, err := q.RequestOperationCancel(ctx, id)
	return n > 0, err
}

// finish records how a running operation ended, its outcome as fields, giving up its lease.
func finish(ctx context.Context, q *dbgen.Queries, id, held uuid.UUID, e ending, changes map[string]int, exit *int) error {
	code := pgtype.Int4{}
	if exit != nil {
		code = pgtype.Int4{Int32: int32(*exit), Valid: true}
	}
	raw, _ := json.Marshal(changes)
	p := dbgen.FinishOperationParams{ID: id, Lease: leased(held), Status: string(e.status), Error: e.message, Changes: raw, ExitCode: code}
	recordOutcome(&p, e.outcome)
	n, err := q.FinishOperation(ctx, p)
	if err == nil && n == 0 {
		return illegal("finish", id)
	}
	return err
}

// createDeployment records a deployment, pending until an operation deploys it.
func createDeployment(ctx context.Context, q *dbgen.Queries, p dbgen.CreateDeploymentParams) (dbgen.DeployedComponent, error) {
	return q.CreateDeployment(ctx, p)
}

// moveDeployment sets the status a deployment shows, from a status the machine moves from.
func moveDeployment(ctx context.Context, q *dbgen.Queries, id uuid.UUID, to DeploymentStatus) error {
	n, err := q.SetDeploymentStatus(ctx, dbgen.SetDeploymentStatusParams{ID: id, Status: string(to), Sources: DeploymentMachine.SourceNames(to)})
	if err == nil && n == 0 {
		return fmt.Errorf("%w: deployment %s cannot become %s", lifecycle.ErrIllegalMove, id, to)
	}
	return err
}

// checkpoints keeps one operation's step checkpoints in operation_steps, for the saga.
type checkpoints struct {
	pool      *pgxpool.Pool
	operation uuid.UUID
	// engine times the engine processes of the running step, recorded as it ends; none when nil.
	engine *engineClock
}

// Load creates the missing step rows and returns every step's checkpoint in order. The rows it
// creates are pending steps, which the next Load makes again when a crash loses them: their
// commit does not wait for the disk.
func (c *checkpoints) Load(ctx context.Context, names []string) ([]saga.State, error) {
	rows, err := db.Lazy(c.pool).LoadOperationSteps(ctx, dbgen.LoadOperationStepsParams{OperationID: c.operation, Names: names})
	if err != nil {
		return nil, fmt.Errorf("load steps of %s: %w", c.operation, err)
	}
	byName := make(map[string]dbgen.LoadOperationStepsRow, len(rows))
	for _, r := range rows {
		byName[r.Name] = r
	}
	out := make([]saga.State, len(names))
	for i, n := range names {
		r := byName[n]
		out[i] = saga.State{Name: n, Status: saga.Status(r.Status), Result: json.RawMessage(r.Result), Error: r.Error}
	}
	return out, nil
}

// Mark records moves of steps in one statement, such as a step's end and the next one's
// start; a Lazy one commits without waiting for the disk (see saga.Lazy).
func (c *checkpoints) Mark(ctx context.Context, commit saga.Commit, moves ...saga.Move) error {
	p := dbgen.MarkOperationStepsParams{OperationID: c.operation}
	for _, m := range moves {
		p.Names, p.Statuses = append(p.Names, m.Step), append(p.Statuses, string(m.Status))
		p.Results, p.Errors = append(p.Results, m.Result), append(p.Errors, m.Error)
		var started, exited *time.Time
		switch m.Status {
		case saga.Done, saga.Failed:
			started, exited = c.engine.take()
		case saga.Running, saga.Undoing:
			c.engine.take() // a step begins with a clean clock: an undo's engine is not its do's
		}
		p.EngineStarts, p.EngineEnds = append(p.EngineStarts, timeText(started)), append(p.EngineEnds, timeText(exited))
	}
	q := db.Queries(c.pool)
	if commit == saga.Lazy {
		q = db.Lazy(c.pool)
	}
	return c.write(ctx, q, p)
}

func (c *checkpoints) write(ctx context.Context, q *dbgen.Queries, p dbgen.MarkOperationStepsParams) error {
	n, err := q.MarkOperationSteps(ctx, p)
	if err != nil {
		return fmt.Errorf("mark steps %v %v: %w", p.Names, p.Statuses, err)
	}
	if n != int64(len(p.Names)) {
		return fmt.Errorf("mark steps %v %v: not every one is a step of operation %s", p.Names, p.Statuses, c.operation)
	}
	return nil
}

// timeText is a time as MarkOperationSteps takes it: RFC 3339 to the nanosecond, "" for none.
func timeText(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.Format(time.RFC3339Nano)
}

// land records what an operation left its deployment with: its inputs, its status and its
// outputs.
func land(ctx context.Context, q *dbgen.Queries, in dbgen.UpdateDeploymentInputsParams, to DeploymentStatus, outputs json.RawMessage) error {
	if err := q.UpdateDeploymentInputs(ctx, in); err != nil {
		return err
	}
	n, err := q.RecordDeploymentOutputs(ctx, dbgen.RecordDeploymentOutputsParams{ID: in.ID, Status: string(to), Outputs: outputs,
		Sources: DeploymentMachine.SourceNames(to)})
	if err == nil && n == 0 {
		return fmt.Errorf("%w: deployment %s cannot become %s", lifecycle.ErrIllegalMove, in.ID, to)
	}
	return err
}

// recordDrift records a deployment's drift: what a check found, or that it is in sync again.
// It returns the drift as it was before, for the event that tells of the change.
func recordDrift(ctx context.Context, q *dbgen.Queries, id uuid.UUID, status string, found json.RawMessage) (dbgen.RecordDriftRow, error) {
	return q.RecordDrift(ctx, dbgen.RecordDriftParams{ID: id, DriftStatus: status, Drift: found})
}
