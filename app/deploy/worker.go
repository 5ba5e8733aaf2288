package deploy

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"nimbus/app/pulumix"
	"nimbus/app/secrets"
	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/jobs/saga"
)

// Worker runs operations. One worker may run many operations at once, each under its own lease
// on the operation row, so two workers never run the same operation.
type Worker struct {
	river.WorkerDefaults[OperationArgs]
	pool    *pgxpool.Pool
	runner  *pulumix.Runner
	keys    *secrets.Keyring
	log     *slog.Logger
	timeout time.Duration
	// beat is how often a running operation says it is alive; a minute of silence lets
	// another worker take it over.
	beat time.Duration
}

// NewWorker returns the operation worker; timeout bounds one operation.
func NewWorker(pool *pgxpool.Pool, runner *pulumix.Runner, keys *secrets.Keyring, log *slog.Logger, timeout time.Duration) *Worker {
	return &Worker{pool: pool, runner: runner, keys: keys, log: log, timeout: timeout, beat: 5 * time.Second}
}

// Timeout bounds one operation; never unlimited.
func (w *Worker) Timeout(*river.Job[OperationArgs]) time.Duration { return w.timeout }

var errLeaseLost = errors.New("another worker took the operation over")

// Work claims the operation and runs its steps.
func (w *Worker) Work(ctx context.Context, job *river.Job[OperationArgs]) error {
	q := dbgen.New(w.pool)
	op, err := q.GetOperation(ctx, job.Args.OperationID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	switch op.Status {
	case "succeeded", "failed", "cancelled", "rejected", "awaiting_approval":
		return nil
	}
	if earlier, err := q.EarlierQueued(ctx, dbgen.EarlierQueuedParams{DeploymentID: op.DeploymentID, CreatedAt: op.CreatedAt, ID: op.ID}); err != nil {
		return err
	} else if earlier {
		return river.JobSnooze(2 * time.Second) // operations on a deployment run in order
	}
	resumed := op.Status == "running"
	lease := uuid.New()
	op, err = q.ClaimOperation(ctx, dbgen.ClaimOperationParams{ID: op.ID, Lease: uuid.NullUUID{UUID: lease, Valid: true}})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil // another worker holds it and is alive; the reaper steps in if it dies
	case db.IsUniqueViolation(err):
		return river.JobSnooze(2 * time.Second) // another operation runs on this deployment
	case err != nil:
		return err
	}
	w.log.Info("operation started", "operation", op.ID, "kind", op.Kind, "resumed", resumed)

	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var beats sync.WaitGroup
	beats.Add(1)
	go func() {
		defer beats.Done()
		w.heartbeat(runCtx, cancel, op.ID, lease)
	}()
	result := w.run(runCtx, op, resumed, job.Attempt >= job.MaxAttempts)
	cancel(nil)
	beats.Wait()
	return w.finish(ctx, op, lease, result)
}

// heartbeat keeps the lease alive and notices a requested cancel.
func (w *Worker) heartbeat(ctx context.Context, cancel context.CancelCauseFunc, id uuid.UUID, lease uuid.UUID) {
	t := time.NewTicker(w.beat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cancelRequested, err := dbgen.New(w.pool).HeartbeatOperation(ctx, dbgen.HeartbeatOperationParams{ID: id, Lease: uuid.NullUUID{UUID: lease, Valid: true}})
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			cancel(errLeaseLost)
			return
		case err != nil:
			w.log.Warn("heartbeat failed", "operation", id, "err", err)
		case cancelRequested:
			cancel(saga.ErrCancelled)
			return
		}
	}
}

// outcome is how an operation's run ended.
type outcome struct {
	err     error
	changes map[string]int
}

func (w *Worker) run(ctx context.Context, op dbgen.Operation, resumed, lastAttempt bool) outcome {
	q := dbgen.New(w.pool)
	if w.runner == nil {
		return outcome{err: &saga.Failure{Step: "start", Err: errors.New("the Pulumi toolchain is not installed on this server"), Compensated: true}}
	}
	dep, err := q.GetDeployment(ctx, op.DeploymentID)
	if err != nil {
		return outcome{err: saga.Transient(err)}
	}
	ver, err := q.GetComponentVersion(ctx, dbgen.GetComponentVersionParams{ComponentID: dep.ComponentID, Version: dep.Version})
	if err != nil {
		return outcome{err: saga.Transient(err)}
	}
	stack, err := w.stack(dep, ver.Code)
	if err != nil {
		return outcome{err: &saga.Failure{Step: "start", Err: err, Compensated: true}}
	}
	log := w.logWriter(ctx, op.ID)
	defer log.Close()
	changes := map[string]int{}
	var steps []saga.Step
	switch op.Kind {
	case "deploy":
		if err := q.SetDeploymentStatus(ctx, dbgen.SetDeploymentStatusParams{ID: dep.ID, Status: "deploying"}); err != nil {
			return outcome{err: saga.Transient(err)}
		}
		steps = []saga.Step{
			{Name: "preview", Do: func(ctx context.Context, _ *saga.Run) (json.RawMessage, error) {
				res, err := w.runner.Preview(ctx, stack, log)
				return changesOf(res, changes), engine(err)
			}},
			{Name: "up",
				Do: func(ctx context.Context, _ *saga.Run) (json.RawMessage, error) {
					if err := w.runner.ClearLock(stack); err != nil {
						return nil, saga.Transient(err)
					}
					if resumed {
						// A worker died during up: learn what exists before converging on it.
						if _, err := w.runner.Refresh(ctx, stack, log); err != nil {
							return nil, engine(err)
						}
					}
					res, err := w.runner.Up(ctx, stack, log)
					if err != nil {
						return nil, engine(err)
					}
					changesOf(res, changes)
					return json.Marshal(res.Outputs)
				},
				Undo: func(ctx context.Context, _ *saga.Run) error {
					if err := w.runner.ClearLock(stack); err != nil {
						return err
					}
					_, err := w.runner.Destroy(ctx, stack, log)
					return err
				}},
			{Name: "record", Do: func(ctx context.Context, r *saga.Run) (json.RawMessage, error) {
				var outputs json.RawMessage
				if err := r.Result("up", &outputs); err != nil {
					return nil, err
				}
				return nil, q.RecordDeploymentOutputs(ctx, dbgen.RecordDeploymentOutputsParams{ID: dep.ID, Status: "deployed", Outputs: outputs})
			}},
		}
	case "destroy":
		if err := q.SetDeploymentStatus(ctx, dbgen.SetDeploymentStatusParams{ID: dep.ID, Status: "destroying"}); err != nil {
			return outcome{err: saga.Transient(err)}
		}
		steps = []saga.Step{
			{Name: "destroy", Do: func(ctx context.Context, _ *saga.Run) (json.RawMessage, error) {
				if err := w.runner.ClearLock(stack); err != nil {
					return nil, saga.Transient(err)
				}
				res, err := w.runner.Destroy(ctx, stack, log)
				return changesOf(res, changes), engine(err)
			}},
			{Name: "record", Do: func(ctx context.Context, _ *saga.Run) (json.RawMessage, error) {
				return nil, q.RecordDeploymentOutputs(ctx, dbgen.RecordDeploymentOutputsParams{ID: dep.ID, Status: "destroyed", Outputs: []byte("{}")})
			}},
		}
	default:
		return outcome{err: &saga.Failure{Step: "start", Err: fmt.Errorf("operations of kind %s are not supported yet", op.Kind), Compensated: true}}
	}
	return outcome{err: saga.Execute(ctx, saga.NewPGStore(w.pool, op.ID), steps, lastAttempt), changes: changes}
}

// engine marks engine refusals as final and anything else (the state backend out of reach, a
// process that could not start) as passing.
func engine(err error) error {
	var ee *pulumix.EngineError
	if err == nil || errors.As(err, &ee) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return saga.Transient(err)
}

func changesOf(res pulumix.Result, into map[string]int) json.RawMessage {
	for k, n := range res.Changes {
		into[k] = n
	}
	b, _ := json.Marshal(res.Changes)
	return b
}

// stack is the Pulumi stack of a deployment with its parameters, secrets opened.
func (w *Worker) stack(dep dbgen.GetDeploymentRow, code string) (pulumix.Stack, error) {
	st := pulumix.Stack{Name: dep.Stack, Code: code, Config: map[string]any{}, Secrets: map[string]string{}}
	if err := json.Unmarshal(dep.Parameters, &st.Config); err != nil {
		return st, fmt.Errorf("parameters: %w", err)
	}
	keyID := ""
	if dep.SecretKeyID != nil {
		keyID = *dep.SecretKeyID
	}
	if len(dep.SecretParameters) > 0 {
		raw, err := w.keys.Open(keyID, dep.SecretParameters, dep.ID[:])
		if err != nil {
			return st, fmt.Errorf("secret parameters: %w", err)
		}
		var values map[string]any
		if err := json.Unmarshal(raw, &values); err != nil {
			return st, fmt.Errorf("secret parameters: %w", err)
		}
		for k, v := range values {
			switch x := v.(type) {
			case string:
				st.Secrets[k] = x
			case float64:
				st.Secrets[k] = strconv.FormatFloat(x, 'f', -1, 64)
			default:
				b, _ := json.Marshal(x)
				st.Secrets[k] = string(b)
			}
		}
	}
	pass, err := w.keys.StackPassphraseWith(keyID, dep.ID.String())
	if err != nil {
		return st, fmt.Errorf("stack passphrase: %w", err)
	}
	st.Passphrase = pass
	return st, nil
}

// finish records how the operation ended, or hands it back for River's next attempt.
func (w *Worker) finish(ctx context.Context, op dbgen.Operation, lease uuid.UUID, res outcome) error {
	ctx = context.WithoutCancel(ctx)
	q := dbgen.New(w.pool)
	leaseID := uuid.NullUUID{UUID: lease, Valid: true}
	if res.err != nil && saga.IsTransient(res.err) {
		if err := q.ReleaseOperation(ctx, dbgen.ReleaseOperationParams{ID: op.ID, Lease: leaseID}); err != nil {
			return err
		}
		return res.err
	}
	status, msg, depStatus := "succeeded", "", ""
	var f *saga.Failure
	if errors.As(res.err, &f) {
		status, msg, depStatus = "failed", f.Error(), "failed"
		if errors.Is(res.err, saga.ErrCancelled) {
			status = "cancelled"
		}
		if f.Compensated && op.Kind == "deploy" {
			msg += " (everything it created was removed)"
		}
	} else if res.err != nil {
		status, msg, depStatus = "failed", res.err.Error(), "failed"
	}
	changes, _ := json.Marshal(res.changes)
	if _, err := q.FinishOperation(ctx, dbgen.FinishOperationParams{ID: op.ID, Lease: leaseID, Status: status, Error: msg, Changes: changes}); err != nil {
		return err
	}
	if depStatus != "" {
		if err := q.SetDeploymentStatus(ctx, dbgen.SetDeploymentStatusParams{ID: op.DeploymentID, Status: depStatus}); err != nil {
			return err
		}
	}
	w.log.Info("operation finished", "operation", op.ID, "kind", op.Kind, "status", status)
	return nil
}

// maxLogLines caps what is kept of an operation's log in the database.
const maxLogLines = 10000

// logWriter stores the engine's output line by line, so readers can follow it.
func (w *Worker) logWriter(ctx context.Context, op uuid.UUID) io.WriteCloser {
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		q := dbgen.New(w.pool)
		n, _ := q.CountOperationLogs(ctx, op)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if n >= maxLogLines {
				if n == maxLogLines {
					_ = q.MarkLogTruncated(context.WithoutCancel(ctx), op)
					n++
				}
				continue
			}
			if err := q.AppendOperationLog(context.WithoutCancel(ctx), dbgen.AppendOperationLogParams{OperationID: op, Line: sc.Text()}); err != nil {
				w.log.Warn("operation log line lost", "operation", op, "err", err)
			}
			n++
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	return &pipeCloser{pw: pw, done: done}
}

type pipeCloser struct {
	pw   *io.PipeWriter
	done chan struct{}
}

func (p *pipeCloser) Write(b []byte) (int, error) { return p.pw.Write(b) }

func (p *pipeCloser) Close() error {
	err := p.pw.Close()
	<-p.done
	return err
}
