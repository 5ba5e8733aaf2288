package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"go.opentelemetry.io/otel/trace"

	"nimbus/app/domain/cluster"
	"nimbus/app/domain/proxmox"
	"nimbus/app/kernel/lifecycle"
	"nimbus/app/kernel/objstore"
	"nimbus/app/kernel/problem"
	"nimbus/app/kernel/secrets"
	"nimbus/app/platform/pulumix"
	"nimbus/app/platform/tracing"
	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/jobs"
	"nimbus/jobs/saga"
)

// DefaultOperationsPerTenant is how many of one tenant's operations run at once, on every node
// together, unless told otherwise: with a node's ten workers, it leaves most of them to the
// other tenants.
const DefaultOperationsPerTenant = 4

// operationPlaces bounds how many of one tenant's operations run at once (limit, or
// DefaultOperationsPerTenant when zero). A zone's system services are deployments of the
// provider's own tenant, so the provider's work counts as one more tenant.
func operationPlaces(limit int) jobs.PerTenant {
	if limit <= 0 {
		limit = DefaultOperationsPerTenant
	}
	return jobs.PerTenant{Scope: "operations", Limit: limit, Wait: 2 * time.Second}
}

// Worker runs operations. One worker may run many operations at once, each under its own lease
// on the operation row, so two workers never run the same operation; and at most so many of one
// tenant's at once, on every node together, so that one tenant's long operations never hold
// every worker (jobs.PerTenant).
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
	// places bounds the operations of one tenant running at once.
	places jobs.PerTenant
}

// NewWorker returns the operation worker; timeout bounds one operation.
func NewWorker(pool *pgxpool.Pool, runner *pulumix.Runner, keys *secrets.Keyring, objects objstore.Store, log *slog.Logger, timeout time.Duration) *Worker {
	return &Worker{pool: pool, runner: runner, keys: keys, objects: objects, log: log, timeout: timeout, beat: 5 * time.Second,
		places: operationPlaces(0)}
}

// PerTenant sets how many of one tenant's operations run at once, on every node together; zero
// keeps DefaultOperationsPerTenant.
func (w *Worker) PerTenant(n int) *Worker {
	w.places = operationPlaces(n)
	return w
}

// Timeout bounds one run of the job: the operation's own time, then as long again to undo
// what it did when it ran out (see run). Never unlimited.
func (w *Worker) Timeout(*river.Job[OperationArgs]) time.Duration { return 2*w.timeout + time.Minute }

var errLeaseLost = errors.New("another worker took the operation over")

// errNoPlace says that the operation's tenant runs as many operations as it may at once.
var errNoPlace = errors.New("the tenant runs its share of operations")

// Work claims the operation, runs its steps (steps.go) and records how it ended.
func (w *Worker) Work(ctx context.Context, job *river.Job[OperationArgs]) error {
	found, err := db.Queries(w.pool).OperationToRun(ctx, job.Args.OperationID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	op, site := found.Operation, engineSite{provider: found.Provider, zone: found.LandingZoneID, system: found.System, tenant: found.TenantID}
	ctx = tracing.Operation(ctx, op.ID, op.Kind) // the job's span, and every one beneath it
	if s := Status(op.Status); s.Ended() || s == AwaitingApproval {
		return nil
	}
	if found.Ahead > 0 {
		return river.JobSnooze(2 * time.Second) // operations on a deployment run in order
	}
	// An earlier attempt began it: its engine may have made resources the state does not show.
	resumed := op.StartedAt != nil
	lease := uuid.New()
	_, claiming := tracer(ctx).Start(ctx, "claim")
	op, err = w.take(ctx, op, site.tenant, lease)
	claiming.End()
	switch {
	case errors.Is(err, lifecycle.ErrIllegalMove):
		return nil // another worker holds it and is alive; the reaper steps in if it dies
	case errors.Is(err, errNoPlace):
		return w.places.Snooze() // it waits queued behind its tenant's own, its worker free for others
	case db.IsUniqueViolation(err):
		return river.JobSnooze(2 * time.Second) // another operation runs on this deployment
	case err != nil:
		return err
	}
	w.log.Info("operation started", "operation", op.ID, "kind", op.Kind, "resumed", resumed)
	if w.runner != nil {
		go w.expect(site, found.Stack)
	}

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
	result := w.run(runCtx, op, site, lease, resumed, lastAttempt)
	stopBeats()
	beats.Wait()
	return w.settle(ctx, op, lease, result, lastAttempt)
}

// take claims the operation under lease when its tenant (of the deployment's) has a place for one more running
// operation, and says errNoPlace when it has none. Then the operation waits queued: one found
// running whose worker died goes back to the queue, where it waits for its job like any other
// rather than showing running, and the reaper leaves it there.
//
// The claim does not wait for the disk (db.LazyTx). A crash of the database that loses it loses
// every checkpoint after it too, and nothing the run does before a durable commit needs the
// lease held for good: a step that takes the stack's lock begins once its start is durable
// (see steps), and a run whose lease is gone learns it at its next heartbeat.
func (w *Worker) take(ctx context.Context, op dbgen.Operation, tenant, lease uuid.UUID) (dbgen.Operation, error) {
	var (
		taken dbgen.Operation
		room  bool
	)
	err := db.LazyTx(ctx, w.pool, func(q *dbgen.Queries) error {
		var err error
		room, err = w.places.Room(ctx, q, uuid.NullUUID{UUID: tenant, Valid: true}, func() (int64, error) {
			return q.CountRunningOperations(ctx, dbgen.CountRunningOperationsParams{TenantID: tenant, ID: op.ID})
		})
		if err != nil {
			return err
		}
		if !room {
			return requeue(ctx, q, op.ID)
		}
		taken, err = claim(ctx, q, op.ID, lease)
		return err
	})
	if err == nil && !room {
		err = errNoPlace
	}
	return taken, err
}

// expect readies the sandbox of the engine about to run on the deployment's stack, as the
// operation is taken: confining the engine's first process costs milliseconds, which pass while
// the operation's first steps read the database (see pulumix.Runner.Expect). Every kind runs
// the engine on that stack. A Kubernetes or Proxmox component's engine is left to confine its
// own: its credentials, and the port it reaches its cloud on, come with its run.
func (w *Worker) expect(site engineSite, stack string) {
	if site.provider == cluster.Provider || site.provider == proxmox.Provider {
		return
	}
	w.runner.Expect(pulumix.Stack{Name: stack})
}

// tracer makes the operation's spans in the trace of the job's.
func tracer(ctx context.Context) trace.Tracer {
	return trace.SpanFromContext(ctx).TracerProvider().Tracer("nimbus/deploy")
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
		cancelRequested, err := beat(ctx, db.Queries(w.pool), id, lease)
		switch {
		case errors.Is(err, errLeaseLost):
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

// run prepares the operation's run and executes its steps.
func (w *Worker) run(ctx context.Context, op dbgen.Operation, site engineSite, lease uuid.UUID, resumed, lastAttempt bool) ran {
	if w.runner == nil {
		return ran{err: &saga.Failure{Step: "start", Err: errors.New("the Pulumi toolchain is not installed on this server"), Compensated: true}}
	}
	r, stop := w.begin(ctx, op, site, lease, resumed)
	if stop != nil {
		return *stop
	}
	defer r.progress.Close()
	steps := r.steps()
	if steps == nil {
		return ran{err: &saga.Failure{Step: "start", Err: fmt.Errorf("operations of kind %s are not supported", op.Kind), Compensated: true}}
	}
	if status := Kind(op.Kind).running(); status != "" {
		// Without waiting for the disk, as the claim: the first step that needs it durable
		// makes it so.
		err := db.LazyTx(ctx, w.pool, func(q *dbgen.Queries) error { return moveDeployment(ctx, q, r.dep.ID, status) })
		if err != nil {
			return ran{err: saga.Transient(err)}
		}
	}
	err := saga.Execute(ctx, &checkpoints{pool: w.pool, operation: op.ID, engine: &r.progress.engine}, steps, lastAttempt)
	return ran{err: err, changes: r.changes, exit: r.exit}
}

// begin reads what the operation's steps need, or says why it cannot run.
func (w *Worker) begin(ctx context.Context, op dbgen.Operation, site engineSite, lease uuid.UUID, resumed bool) (*run, *ran) {
	q := db.Queries(w.pool)
	stop := func(o ran) (*run, *ran) { return nil, &o }
	// The reads have a span of their own; the progress outlives it.
	reads, reading := tracer(ctx).Start(ctx, "prepare")
	defer reading.End()
	dep, err := q.GetDeployment(reads, op.DeploymentID)
	if err != nil {
		return stop(ran{err: saga.Transient(err)})
	}
	switch Kind(op.Kind) {
	case KindRestore:
		// Restores run in the request that asks for them; a worker finds one only when the
		// server died during it.
		return stop(ran{refused: problem.Invalid("deployment", "state",
			"the server stopped while it restored the state: export it to check it, and restore it again if needed")})
	case KindDeploy:
		// Requests are checked when made, but two deploys of one pending deployment may both
		// have been accepted: the second must not treat the first's resources as its own.
		deployed, err := q.HasBeenDeployed(reads, dep.ID)
		if err != nil {
			return stop(ran{err: saga.Transient(err)})
		}
		if deployed {
			return stop(ran{refused: problem.Invalid("deployment", "state", "%s is deployed already: change it with an update or an upgrade", dep.Name)})
		}
	}
	r := &run{w: w, op: op, dep: dep, lease: lease, resumed: resumed, versions: map[int32]dbgen.GetComponentVersionRow{}, changes: map[string]int{}}
	ver, err := r.version(reads, dep.Version)
	if err != nil {
		return stop(ran{err: err})
	}
	current, err := stackOf(w.keys, dep, ver, dep.Parameters, dep.SecretKeyID, dep.SecretParameters)
	if err != nil {
		return stop(ran{err: err})
	}
	// Asked for on every attempt: a token issued for an earlier one is not kept anywhere.
	access, err := clusterAccessOf(reads, q, w.keys, site, w.Timeout(nil))
	if finalOnCluster(err) {
		return stop(ran{err: &saga.Failure{Step: "start", Err: err, Compensated: true}})
	}
	if err != nil {
		return stop(ran{err: saga.Transient(err)})
	}
	access.give(&current)
	before, err := resting(reads, q, dep) // read before the run marks the deployment
	if err != nil {
		return stop(ran{err: saga.Transient(err)})
	}
	r.current, r.access, r.resting = current, access, before
	r.progress = newProgress(ctx, w.pool, w.objects, op.ID, resumed, w.log)
	return r, nil
}

// versionOf reads the deployment's component at version n; a failure to read may pass.
func versionOf(ctx context.Context, q *dbgen.Queries, dep dbgen.GetDeploymentRow, n int32) (dbgen.GetComponentVersionRow, error) {
	ver, err := q.GetComponentVersion(ctx, dbgen.GetComponentVersionParams{ComponentID: dep.ComponentID, Version: n})
	if err != nil {
		return ver, saga.Transient(err)
	}
	return ver, nil
}

// stackOf is the Pulumi stack of a deployment at a version of its component with the given
// inputs, secrets opened, without the access to a cluster only an operation's engine is given
// (clusterAccess). What cannot be read now will not be readable on a retry either: the
// failure is final.
func stackOf(keys *secrets.Keyring, dep dbgen.GetDeploymentRow, ver dbgen.GetComponentVersionRow, plain []byte, keyID *string, sealed []byte) (pulumix.Stack, error) {
	fail := func(err error) (pulumix.Stack, error) {
		return pulumix.Stack{}, &saga.Failure{Step: "start", Err: err, Compensated: true}
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

// settle records how the operation ended, or hands it back for River's next attempt.
func (w *Worker) settle(ctx context.Context, op dbgen.Operation, lease uuid.UUID, res ran, lastAttempt bool) error {
	if errors.Is(res.err, saga.ErrParked) {
		// The approve step parked it, lease and all, in the transaction that asked for approval.
		w.log.Info("operation awaits approval", "operation", op.ID, "kind", op.Kind)
		return nil
	}
	stopping := ctx.Err() != nil
	ctx = context.WithoutCancel(ctx)
	if res.err != nil && saga.IsTransient(res.err) && (stopping || !lastAttempt) {
		if err := handBack(ctx, db.Queries(w.pool), op.ID, lease); err != nil && !errors.Is(err, lifecycle.ErrIllegalMove) {
			return err
		}
		if stopping {
			// The server is stopping: that costs the operation none of its attempts.
			return river.JobSnooze(time.Second)
		}
		return res.err
	}
	e := end(Kind(op.Kind), res, w.timeout)
	err := db.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		// First, as every writer takes the environment before its deployments.
		if err := advance(ctx, tx, riverJobs(ctx), op.DeploymentID); err != nil {
			return err
		}
		q := db.Queries(tx)
		err := finish(ctx, q, op.ID, lease, e, res.changes, res.exit)
		if errors.Is(err, lifecycle.ErrIllegalMove) {
			// Another worker took the operation over: what it finds is what counts.
			w.log.Warn("operation taken over before it finished here", "operation", op.ID)
			return nil
		}
		if err != nil {
			return err
		}
		if e.status == Succeeded {
			if err := settleDrift(ctx, q, op); err != nil {
				return err
			}
		}
		if e.deployment != "" {
			if err := moveDeployment(ctx, q, op.DeploymentID, e.deployment); err != nil {
				return err
			}
		}
		if err := tell(ctx, q, op, e.status, e.message); err != nil {
			return err
		}
		if err := tellPreviewed(ctx, q, op, e.status, e.message, res.changes); err != nil {
			return err
		}
		return dropFailedPreview(ctx, q, op, e.status)
	})
	if err != nil {
		return err
	}
	w.log.Info("operation finished", "operation", op.ID, "kind", op.Kind, "status", e.status)
	return nil
}
