package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"nimbus/app/component"
	"nimbus/app/governance"
	"nimbus/app/ipam"
	"nimbus/app/objstore"
	"nimbus/app/problem"
	"nimbus/app/pulumix"
	"nimbus/app/resolver"
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
	objects objstore.Store // keeps the whole log of an operation whose log outgrew the database
	log     *slog.Logger
	timeout time.Duration
	// beat is how often a running operation says it is alive; a minute of silence lets
	// another worker take it over.
	beat time.Duration
	// gate holds operations that need approval; nil lets every one through.
	gate Gate
}

// NewWorker returns the operation worker; timeout bounds one operation.
func NewWorker(pool *pgxpool.Pool, runner *pulumix.Runner, keys *secrets.Keyring, objects objstore.Store, log *slog.Logger, timeout time.Duration) *Worker {
	return &Worker{pool: pool, runner: runner, keys: keys, objects: objects, log: log, timeout: timeout, beat: 5 * time.Second}
}

// Timeout bounds one run of the job: the operation's own time, then as long again to undo
// what it did when it ran out (see run). Never unlimited.
func (w *Worker) Timeout(*river.Job[OperationArgs]) time.Duration { return 2*w.timeout + time.Minute }

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
	if ahead, err := q.QueuePosition(ctx, dbgen.QueuePositionParams{DeploymentID: op.DeploymentID, CreatedAt: op.CreatedAt, ID: op.ID}); err != nil {
		return err
	} else if ahead > 0 {
		return river.JobSnooze(2 * time.Second) // operations on a deployment run in order
	}
	// An earlier attempt began it: its engine may have made resources the state does not show.
	resumed := op.StartedAt != nil
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

	// An operation that runs out of time fails and undoes what it did: a provider that hangs
	// would hang again on a retry.
	timed, stop := context.WithTimeoutCause(ctx, w.timeout, saga.ErrTimedOut)
	defer stop()
	runCtx, cancel := context.WithCancelCause(timed)
	defer cancel(nil)
	// The heartbeat goes on until the run returns, undo included: a silent operation would be
	// taken over by another worker while this one still undoes it.
	beatCtx, stopBeats := context.WithCancel(ctx)
	var beats sync.WaitGroup
	beats.Add(1)
	go func() {
		defer beats.Done()
		w.heartbeat(beatCtx, cancel, op.ID, lease)
	}()
	lastAttempt := job.Attempt >= job.MaxAttempts
	result := w.run(runCtx, op, lease, resumed, lastAttempt)
	stopBeats()
	beats.Wait()
	return w.finish(ctx, op, lease, result, lastAttempt)
}

// heartbeat keeps the lease alive and passes a requested cancel on to the run.
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
			if ctx.Err() == nil {
				w.log.Warn("heartbeat failed", "operation", id, "err", err)
			}
		case cancelRequested:
			cancel(saga.ErrCancelled) // once is enough; later calls change nothing
		}
	}
}

// outcome is how an operation's run ended.
type outcome struct {
	err     error
	changes map[string]int
	exit    *int // the engine's exit code, when it refused
	// refused is an operation that no longer fits the deployment, found before it did
	// anything: it fails and leaves the deployment as it is.
	refused error
}

func (w *Worker) run(ctx context.Context, op dbgen.Operation, lease uuid.UUID, resumed, lastAttempt bool) outcome {
	q := dbgen.New(w.pool)
	if w.runner == nil {
		return outcome{err: &saga.Failure{Step: "start", Err: errors.New("the Pulumi toolchain is not installed on this server"), Compensated: true}}
	}
	dep, err := q.GetDeployment(ctx, op.DeploymentID)
	if err != nil {
		return outcome{err: saga.Transient(err)}
	}
	if op.Kind == "restore" {
		// Restores run in the request that asks for them; a worker finds one only when the
		// server died during it.
		return outcome{refused: errors.New("the server stopped while it restored the state: export it to check it, and restore it again if needed")}
	}
	if op.Kind == "deploy" {
		// Requests are checked when made, but two deploys of one pending deployment may both
		// have been accepted: the second must not treat the first's resources as its own.
		deployed, err := q.HasBeenDeployed(ctx, dep.ID)
		if err != nil {
			return outcome{err: saga.Transient(err)}
		}
		if deployed {
			return outcome{refused: fmt.Errorf("%s is deployed already: change it with an update or an upgrade", dep.Name)}
		}
	}
	current, err := stackOf(ctx, q, w.keys, dep, dep.Version, dep.Parameters, dep.SecretKeyID, dep.SecretParameters)
	if err != nil {
		return outcome{err: err}
	}
	before, err := resting(ctx, q, dep) // read before the run marks the deployment
	if err != nil {
		return outcome{err: saga.Transient(err)}
	}
	// target is the stack the operation brings, read when a step needs it: the resolve step
	// completes the operation's parameters first.
	target := func(ctx context.Context) (pulumix.Stack, error) {
		if !op.TargetVersion.Valid {
			return current, nil
		}
		now, err := q.GetOperation(ctx, op.ID)
		if err != nil {
			return pulumix.Stack{}, saga.Transient(err)
		}
		return stackOf(ctx, q, w.keys, dep, now.TargetVersion.Int32, now.Parameters, now.SecretKeyID, now.SecretParameters)
	}
	progress := newProgress(ctx, w.pool, w.objects, op.ID, w.log)
	defer progress.Close()
	changes := map[string]int{}
	var exit *int
	engine := func(err error) error {
		var ee *pulumix.EngineError
		if errors.As(err, &ee) {
			exit = &ee.ExitCode
		}
		return engineErr(err)
	}
	resolve := saga.Step{Name: "resolve",
		Do: func(ctx context.Context, _ *saga.Run) (json.RawMessage, error) {
			return w.resolve(ctx, dep, op)
		},
		// What this operation was handed goes back; what the deployment held before stays.
		Undo: func(ctx context.Context, _ *saga.Run) error {
			return db.Tx(ctx, w.pool, func(q *dbgen.Queries) error { return resolver.ReleaseOperation(ctx, q, op.ID) })
		}}
	// The tenant's rules on the whole parameter set, resolved values included; a rule changed
	// since the request counts.
	govern := saga.Step{Name: "govern", Do: func(ctx context.Context, _ *saga.Run) (json.RawMessage, error) {
		now, err := q.GetOperation(ctx, op.ID)
		if err != nil {
			return nil, saga.Transient(err)
		}
		params := map[string]any{}
		if err := json.Unmarshal(now.Parameters, &params); err != nil {
			return nil, err
		}
		err = governance.Check(ctx, q, dep.TenantID, dep.ComponentID, params)
		if err != nil && (errors.Is(err, problem.ErrForbidden) || problem.FieldOf(err) != "") {
			return nil, err // refused: the same next time
		}
		if err != nil {
			return nil, saga.Transient(err)
		}
		return nil, nil
	}}
	preview := saga.Step{Name: "preview", Do: func(ctx context.Context, _ *saga.Run) (json.RawMessage, error) {
		st, err := target(ctx)
		if err != nil {
			return nil, err
		}
		res, err := w.runner.Preview(ctx, st, progress)
		return changesOf(res, changes), engine(err)
	}}
	up := func(stack func(context.Context) (pulumix.Stack, error)) func(context.Context, *saga.Run) (json.RawMessage, error) {
		return func(ctx context.Context, _ *saga.Run) (json.RawMessage, error) {
			st, err := stack(ctx)
			if err != nil {
				return nil, err
			}
			if err := w.runner.ClearLock(st); err != nil {
				return nil, saga.Transient(err)
			}
			if resumed {
				// A worker died during up: learn what exists before converging on it.
				if _, err := w.runner.Refresh(ctx, st, progress); err != nil {
					return nil, engine(err)
				}
			}
			res, err := w.runner.Up(ctx, st, progress)
			if err != nil {
				return nil, engine(err)
			}
			changesOf(res, changes)
			return json.Marshal(res.Outputs)
		}
	}
	approve := saga.Step{Name: "approve", Do: func(ctx context.Context, _ *saga.Run) (json.RawMessage, error) {
		return nil, w.approve(ctx, op, lease, before)
	}}
	currentStack := func(context.Context) (pulumix.Stack, error) { return current, nil }
	// What a destroy would delete, for its approvers to see.
	previewDestroy := saga.Step{Name: "preview", Do: func(ctx context.Context, _ *saga.Run) (json.RawMessage, error) {
		if err := w.runner.ClearLock(current); err != nil {
			return nil, saga.Transient(err)
		}
		res, err := w.runner.PreviewDestroy(ctx, current, progress)
		return changesOf(res, changes), engine(err)
	}}
	destroy := func(ctx context.Context) (json.RawMessage, error) {
		if err := w.runner.ClearLock(current); err != nil {
			return nil, saga.Transient(err)
		}
		res, err := w.runner.Destroy(ctx, current, progress)
		return changesOf(res, changes), engine(err)
	}
	record := func(status string) saga.Step {
		return saga.Step{Name: "record", Do: func(ctx context.Context, r *saga.Run) (json.RawMessage, error) {
			outputs := json.RawMessage("{}")
			if status != "destroyed" {
				if err := r.Result("up", &outputs); err != nil {
					return nil, err
				}
			}
			return nil, db.Tx(ctx, w.pool, func(q *dbgen.Queries) error {
				if status == "destroyed" {
					if err := resolver.ReleaseDeployment(ctx, q, dep.ID); err != nil {
						return err
					}
					// Its secrets go with it; the plain parameters stay, for the history.
					if err := q.UpdateDeploymentInputs(ctx, dbgen.UpdateDeploymentInputsParams{ID: dep.ID, Version: dep.Version,
						Parameters: dep.Parameters}); err != nil {
						return err
					}
				} else {
					now, err := q.GetOperation(ctx, op.ID) // with what its resolvers filled in
					if err != nil {
						return err
					}
					if err := q.UpdateDeploymentInputs(ctx, dbgen.UpdateDeploymentInputsParams{ID: dep.ID, Version: now.TargetVersion.Int32,
						Parameters: now.Parameters, SecretParameters: now.SecretParameters, SecretKeyID: now.SecretKeyID}); err != nil {
						return err
					}
				}
				return q.RecordDeploymentOutputs(ctx, dbgen.RecordDeploymentOutputsParams{ID: dep.ID, Status: status, Outputs: outputs})
			})
		}}
	}

	var steps []saga.Step
	switch op.Kind {
	case "preview":
		steps = []saga.Step{resolve, govern, preview}
	case "deploy":
		// Nothing existed before: undoing it is destroying what it made.
		steps = []saga.Step{resolve, govern, preview, approve,
			{Name: "up", Do: up(target), Undo: func(ctx context.Context, _ *saga.Run) error {
				ctx, cancel := context.WithTimeout(ctx, w.timeout) // undo is not cancelled, but must end
				defer cancel()
				_, err := destroy(ctx)
				return err
			}},
			record("deployed")}
	case "update", "upgrade":
		// The deployment worked before: undoing is going back to how it was.
		steps = []saga.Step{resolve, govern, preview, approve,
			{Name: "up", Do: up(target), Undo: func(ctx context.Context, r *saga.Run) error {
				ctx, cancel := context.WithTimeout(ctx, w.timeout)
				defer cancel()
				_, err := up(currentStack)(ctx, r)
				return err
			}},
			record("deployed")}
	case "refresh":
		steps = []saga.Step{{Name: "refresh", Do: func(ctx context.Context, _ *saga.Run) (json.RawMessage, error) {
			if err := w.runner.ClearLock(current); err != nil {
				return nil, saga.Transient(err)
			}
			res, err := w.runner.Refresh(ctx, current, progress)
			return changesOf(res, changes), engine(err)
		}}}
	case "destroy":
		steps = []saga.Step{previewDestroy, approve,
			{Name: "destroy", Do: func(ctx context.Context, _ *saga.Run) (json.RawMessage, error) { return destroy(ctx) }},
			record("destroyed")}
	default:
		return outcome{err: &saga.Failure{Step: "start", Err: fmt.Errorf("operations of kind %s are not supported", op.Kind), Compensated: true}}
	}
	if status := runningStatus[op.Kind]; status != "" {
		if err := q.SetDeploymentStatus(ctx, dbgen.SetDeploymentStatusParams{ID: dep.ID, Status: status}); err != nil {
			return outcome{err: saga.Transient(err)}
		}
	}
	err = saga.Execute(ctx, saga.NewPGStore(w.pool, op.ID), steps, lastAttempt)
	return outcome{err: err, changes: changes, exit: exit}
}

// runningStatus is what a deployment shows while an operation of each kind runs on it; a
// preview and a refresh change nothing, so they leave it as it is.
var runningStatus = map[string]string{"deploy": "deploying", "update": "deploying", "upgrade": "upgrading", "destroy": "destroying"}

// engineErr marks engine refusals as final and anything else (the state backend out of reach, a
// process that could not start) as passing.
func engineErr(err error) error {
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

// stackOf is the Pulumi stack of a deployment at a version with the given inputs, secrets
// opened. What cannot be read now will not be readable on a retry either: the failure is final.
func stackOf(ctx context.Context, q *dbgen.Queries, keys *secrets.Keyring, dep dbgen.GetDeploymentRow, version int32, plain []byte, keyID *string, sealed []byte) (pulumix.Stack, error) {
	fail := func(err error) (pulumix.Stack, error) {
		return pulumix.Stack{}, &saga.Failure{Step: "start", Err: err, Compensated: true}
	}
	ver, err := q.GetComponentVersion(ctx, dbgen.GetComponentVersionParams{ComponentID: dep.ComponentID, Version: version})
	if err != nil {
		return pulumix.Stack{}, saga.Transient(err)
	}
	st := pulumix.Stack{Name: dep.Stack, Code: ver.Code, Config: map[string]any{}, Secrets: map[string]string{}}
	if err := json.Unmarshal(plain, &st.Config); err != nil {
		return fail(fmt.Errorf("parameters: %w", err))
	}
	values, err := openSecrets(keys, dep.ID, keyID, sealed)
	if err != nil {
		return fail(err)
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
	kid := ""
	if dep.SecretKeyID != nil {
		kid = *dep.SecretKeyID
	}
	// The passphrase stays the one the stack was made with, whatever key seals the inputs.
	if st.Passphrase, err = keys.StackPassphraseWith(kid, dep.ID.String()); err != nil {
		return fail(fmt.Errorf("stack passphrase: %w", err))
	}
	return st, nil
}

// finish records how the operation ended, or hands it back for River's next attempt.
func (w *Worker) finish(ctx context.Context, op dbgen.Operation, lease uuid.UUID, res outcome, lastAttempt bool) error {
	if errors.Is(res.err, saga.ErrParked) {
		// The approve step parked it, lease and all, in the transaction that asked for approval.
		w.log.Info("operation awaits approval", "operation", op.ID, "kind", op.Kind)
		return nil
	}
	stopping := ctx.Err() != nil
	ctx = context.WithoutCancel(ctx)
	q := dbgen.New(w.pool)
	leaseID := uuid.NullUUID{UUID: lease, Valid: true}
	if res.err != nil && saga.IsTransient(res.err) && (stopping || !lastAttempt) {
		if err := q.ReleaseOperation(ctx, dbgen.ReleaseOperationParams{ID: op.ID, Lease: leaseID}); err != nil {
			return err
		}
		if stopping {
			// The server is stopping: that costs the operation none of its attempts.
			return river.JobSnooze(time.Second)
		}
		return res.err
	}
	status, msg, depStatus := "succeeded", "", ""
	var f *saga.Failure
	if errors.As(res.err, &f) {
		status, msg = "failed", f.Error()
		if errors.Is(res.err, saga.ErrTimedOut) {
			msg = fmt.Sprintf("ran out of its %s: %s", w.timeout, msg)
		}
		if errors.Is(res.err, saga.ErrCancelled) {
			status = "cancelled"
		}
		switch {
		case op.Kind == "preview" || op.Kind == "refresh":
			// Nothing changed, so the deployment is as it was.
		case !f.Compensated:
			depStatus = "failed"
		case op.Kind == "deploy":
			msg += " (everything it created was removed)"
			depStatus = "failed"
		case op.Kind == "update" || op.Kind == "upgrade":
			msg += " (rolled back to the previous version and parameters)"
			depStatus = "deployed"
		default:
			depStatus = "failed"
		}
	} else if res.err != nil {
		// Out of attempts on an error that kept passing: what it did may be half done.
		status, msg = "failed", fmt.Sprintf("gave up after its last attempt: %v", res.err)
		if op.Kind != "preview" && op.Kind != "refresh" {
			depStatus = "failed"
		}
	} else if res.refused != nil {
		status, msg = "failed", res.refused.Error()
	}
	changes, _ := json.Marshal(res.changes)
	var exit pgtype.Int4
	if res.exit != nil {
		exit = pgtype.Int4{Int32: int32(*res.exit), Valid: true}
	}
	err := pgx.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		// First, as every writer takes the environment before its deployments.
		if err := advance(ctx, tx, riverJobs(ctx), op.DeploymentID); err != nil {
			return err
		}
		q := dbgen.New(tx)
		n, err := q.FinishOperation(ctx, dbgen.FinishOperationParams{ID: op.ID, Lease: leaseID, Status: status, Error: msg,
			Changes: changes, ExitCode: exit})
		if err != nil {
			return err
		}
		if n == 0 {
			// Another worker took the operation over: what it finds is what counts.
			w.log.Warn("operation taken over before it finished here", "operation", op.ID)
			return nil
		}
		if depStatus == "" {
			return nil
		}
		return q.SetDeploymentStatus(ctx, dbgen.SetDeploymentStatusParams{ID: op.DeploymentID, Status: depStatus})
	})
	if err != nil {
		return err
	}
	w.log.Info("operation finished", "operation", op.ID, "kind", op.Kind, "status", status)
	return nil
}

// resolve fills the operation's bound inputs with what its version's resolvers hand out, checks
// them against the version's inputs, and stores the completed parameters on the operation,
// all in one transaction: a crash leaves either nothing or everything, and a second run gets
// what the first was handed.
func (w *Worker) resolve(ctx context.Context, dep dbgen.GetDeploymentRow, op dbgen.Operation) (json.RawMessage, error) {
	if !op.TargetVersion.Valid {
		return nil, nil
	}
	q := dbgen.New(w.pool)
	ver, err := q.GetComponentVersion(ctx, dbgen.GetComponentVersionParams{ComponentID: dep.ComponentID, Version: op.TargetVersion.Int32})
	if err != nil {
		return nil, saga.Transient(err)
	}
	bindings, err := resolver.ParseBindings(ver.ResolverBindings)
	if err != nil {
		return nil, err
	}
	if len(bindings) == 0 {
		return nil, nil
	}
	v := &problem.ValidationError{}
	schema := component.ParseSchema("input_schema", ver.InputSchema, v)
	if schema == nil {
		return nil, v.Err()
	}
	var values map[string]any
	err = db.Tx(ctx, w.pool, func(q *dbgen.Queries) error {
		rc, err := q.ResolverContext(ctx, dep.ID)
		if err != nil {
			return err
		}
		configured, err := resolver.Configured(ctx, q, dep.EnvironmentID)
		if err != nil {
			return err
		}
		params := map[string]any{}
		if err := json.Unmarshal(op.Parameters, &params); err != nil {
			return err
		}
		secrets, err := openSecrets(w.keys, dep.ID, op.SecretKeyID, op.SecretParameters)
		if err != nil {
			return err
		}
		held, err := openSecrets(w.keys, dep.ID, dep.SecretKeyID, dep.SecretParameters)
		if err != nil {
			return err
		}
		// A secret made for the deployment before is kept: making a new one is a rotation.
		var ask []resolver.Binding
		for _, b := range resolver.Active(bindings, configured) {
			rotate := slices.Contains(op.Rotate, b.Input)
			if resolver.Secret(b.Type) && !rotate && (secrets[b.Input] != nil || held[b.Input] != nil) {
				if secrets[b.Input] == nil {
					secrets[b.Input] = held[b.Input]
				}
				continue
			}
			ask = append(ask, b)
		}
		d := resolver.Deployment{ID: dep.ID, Name: dep.Name, Tenant: rc.TenantName, Environment: rc.EnvironmentName,
			EnvID: dep.EnvironmentID, Component: rc.ComponentName, SemanticType: strings.ToLower(rc.SemanticType), Provider: rc.Provider}
		if values, err = resolver.Resolve(ctx, q, ask, d, op.ID, params); err != nil {
			return err
		}
		for _, b := range ask {
			if msg := schema.Check(b.Input, values[b.Input]); msg != "" {
				return fmt.Errorf("%w %s: the %s resolver gave a value that %s", resolver.ErrUnresolved, b.Input, b.Type, msg)
			}
			if resolver.Secret(b.Type) || schema.Secret(b.Input) {
				secrets[b.Input] = values[b.Input]
				values[b.Input] = "[secret]" // what the step's checkpoint keeps
			} else {
				params[b.Input] = values[b.Input]
			}
		}
		completed, _ := json.Marshal(params)
		if err := q.SetOperationParameters(ctx, dbgen.SetOperationParametersParams{ID: op.ID, Parameters: completed}); err != nil {
			return err
		}
		if len(secrets) == 0 {
			return nil
		}
		raw, _ := json.Marshal(secrets)
		keyID, sealed, err := w.keys.Seal(raw, dep.ID[:])
		if err != nil {
			return err
		}
		return q.SetOperationSecrets(ctx, dbgen.SetOperationSecretsParams{ID: op.ID, SecretParameters: sealed, SecretKeyID: &keyID})
	})
	if errors.Is(err, resolver.ErrUnresolved) || errors.Is(err, ipam.ErrFull) {
		return nil, err // the same next time: final
	}
	if err != nil {
		return nil, saga.Transient(err)
	}
	return json.Marshal(values)
}
