package instance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"nimbus/app/domain/auth"
	"nimbus/app/domain/stack"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/graph"
	"nimbus/app/kernel/lifecycle"
	"nimbus/app/kernel/secrets"
	"nimbus/app/orchestration/deploy"
	"nimbus/app/platform/tracing"
	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/jobs"
)

// A run is one piece of work on an instance (stack_runs). It is queued when asked for and
// starts when the run before it has ended: its steps are worked out then, from the instance as
// it is, and each step is one operation on one slot's deployment. The graph runner takes the
// steps in order (Parent); the run's kind says what its end means for the instance.

// RunKind names what a run does.
type RunKind string

// The kinds of runs.
const (
	RunDeploy     RunKind = "deploy"
	RunDestroy    RunKind = "destroy"
	RunCompensate RunKind = "compensate"
)

// RunStatus is where a run stands.
type RunStatus string

// The statuses of a run. A run that cannot start is refused, with its reason.
const (
	RunQueued    RunStatus = "queued"
	RunRunning   RunStatus = "running"
	RunSucceeded RunStatus = "succeeded"
	RunFailed    RunStatus = "failed"
	RunRefused   RunStatus = "refused"
)

// RunMachine is a run's life; this file alone records runs and moves them.
var RunMachine = lifecycle.Machine[RunStatus]{
	Name: "stack run", Table: "stack_runs", Column: "status", Writer: "app/orchestration/instance/run.go", Start: RunQueued,
	Moves: map[RunStatus][]RunStatus{
		RunQueued:  {RunRunning, RunRefused, RunFailed},
		RunRunning: {RunSucceeded, RunFailed},
	},
}

// record records a run, queued behind those of its instance asked for before it; the run
// that ends another asks for its follower (a compensation, a rollback, a transition) so.
func record(ctx context.Context, q *dbgen.Queries, p dbgen.CreateStackRunParams) (dbgen.StackRun, error) {
	return q.CreateStackRun(ctx, p)
}

// step is one step of a run as it is recorded when the run starts.
type step struct {
	name   string
	slot   string
	action string // deploy, destroy, update, refresh, upgrade, redeploy
	after  []string
	detail map[string]any
}

// kind is what one kind of run does.
type kind struct {
	// reverse runs the steps' graph backwards, as taking things down does.
	reverse bool
	// begin works out the run's steps as it starts; a refused error ends the run refused, with
	// its reason, and the next one starts.
	begin func(ctx context.Context, r *runCtx) ([]step, error)
	// start starts one step's operation and returns it; a zero ID records the step as having
	// nothing to do.
	start func(ctx context.Context, r *runCtx, s dbgen.StackRunStepsRow) (uuid.UUID, map[string]any, error)
	// end records what the run's end means for the instance: outcome.Done, or outcome.Stopped
	// with the steps that failed, or refused with the refusal that stopped it.
	end func(ctx context.Context, r *runCtx, outcome graph.Step, refused error) error
}

var kinds = map[RunKind]kind{
	RunDeploy:     deployKind,
	RunDestroy:    destroyKind,
	RunCompensate: compensateKind,
	RunUpgrade:    upgradeKind,
	RunRollback:   rollbackKind,
	RunTransition: transitionKind,
	RunDay2:       day2Kind,
}

// refused is a run that cannot start, with the reason in words.
type refused struct{ reason string }

func (r *refused) Error() string { return r.reason }

func refuse(format string, args ...any) error { return &refused{reason: fmt.Sprintf(format, args...)} }

// runCtx is what a run's kind works with: the transaction, the instance locked, the run, its
// stack version and the deployment of each slot.
type runCtx struct {
	tx    pgx.Tx
	q     *dbgen.Queries
	inst  dbgen.StackInstance
	run   dbgen.StackRun
	def   stack.Definition
	slots map[string]dbgen.InstanceDeploymentsRow // the newest deployment of each slot
	steps []dbgen.StackRunStepsRow
	actor access.Principal
	deps  *runner
}

// runner is what runs need from outside: the deploy service that queues their operations, the
// keyring that opens the instance's secret parameters, and the job queue.
type runner struct {
	deploys *deploy.Service
	keys    *secrets.Keyring
	jobs    jobs.Queue
}

// load reads what a run of a locked instance works with.
func (d *runner) load(ctx context.Context, tx pgx.Tx, inst dbgen.StackInstance, run dbgen.StackRun) (*runCtx, error) {
	q := db.Queries(tx)
	version := int(inst.Version)
	if run.ToVersion.Valid {
		version = int(run.ToVersion.Int32)
	}
	def, err := stack.LoadVersion(ctx, q, inst.StackID, version)
	if err != nil {
		return nil, err
	}
	rows, err := q.InstanceDeployments(ctx, uuid.NullUUID{UUID: inst.ID, Valid: true})
	if err != nil {
		return nil, err
	}
	slots := map[string]dbgen.InstanceDeploymentsRow{}
	for _, r := range rows {
		if _, ok := slots[*r.Slot]; !ok && r.Slot != nil {
			slots[*r.Slot] = r
		}
	}
	steps, err := q.StackRunSteps(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	actor, err := auth.Requester(ctx, q, run.RequestedBy)
	if err != nil {
		return nil, err
	}
	return &runCtx{tx: tx, q: q, inst: inst, run: run, def: def, slots: slots, steps: steps, actor: actor, deps: d}, nil
}

// queue records a run asked for and starts it when no other run is under way, in the caller's
// transaction, which holds the instance's lock.
func (d *runner) queue(ctx context.Context, tx pgx.Tx, inst dbgen.StackInstance, p dbgen.CreateStackRunParams) (dbgen.StackRun, error) {
	q := db.Queries(tx)
	p.InstanceID = inst.ID
	if p.Inputs == nil {
		p.Inputs = []byte("{}")
	}
	if p.Source == "" {
		p.Source = "person"
	}
	run, err := record(ctx, q, p)
	if err != nil {
		return run, err
	}
	// The span that asked for the run names it: a request, or the routing of an event.
	ctx = tracing.Tag(ctx, tracing.RunID.String(run.ID.String()), tracing.InstanceID.String(inst.ID.String()))
	if _, err := q.RunningStackRun(ctx, inst.ID); err == nil {
		return run, nil
	} else if !errors.Is(err, pgx.ErrNoRows) {
		return run, err
	}
	return run, d.startNext(ctx, tx, inst.ID)
}

// startNext starts the oldest queued run of an instance whose runs have all ended: it works out
// the run's steps and asks the graph runner to take them. A run its instance cannot take now
// ends refused, and the one after it is tried.
func (d *runner) startNext(ctx context.Context, tx pgx.Tx, instanceID uuid.UUID) error {
	q := db.Queries(tx)
	for {
		run, err := q.NextQueuedStackRun(ctx, instanceID)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		inst, err := q.LockStackInstance(ctx, instanceID)
		if err != nil {
			return err
		}
		r, err := d.load(ctx, tx, inst, run)
		if err != nil {
			return err
		}
		steps, err := kinds[RunKind(run.Kind)].begin(ctx, r)
		var no *refused
		if errors.As(err, &no) {
			if _, err := q.EndStackRun(ctx, dbgen.EndStackRunParams{ID: run.ID, Status: string(RunRefused), Error: no.reason}); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("begin %s run of %s: %w", run.Kind, inst.Name, err)
		}
		if _, err := q.StartStackRun(ctx, run.ID); err != nil {
			return err
		}
		for i, s := range steps {
			detail, _ := json.Marshal(s.detail)
			if s.after == nil {
				s.after = []string{}
			}
			if err := q.InsertStackRunStep(ctx, dbgen.InsertStackRunStepParams{RunID: run.ID, Name: s.name, Slot: s.slot,
				Action: s.action, After: s.after, Position: int32(i), Detail: detail}); err != nil {
				return err
			}
		}
		_, err = d.jobs.InsertTx(ctx, tx, graph.Args{Parent: graph.ParentStackInstance, ID: instanceID}, nil)
		return err
	}
}

// Parent is the graph runner's view of stack instances: the run under way is the graph.
type Parent struct {
	pool *pgxpool.Pool
	keys *secrets.Keyring
}

// NewParent returns the instances' parent for the graph runner; keys opens and seals secret
// parameters.
func NewParent(pool *pgxpool.Pool, keys *secrets.Keyring) *Parent {
	return &Parent{pool: pool, keys: keys}
}

// Load locks the instance and returns its run under way as a graph. What the run starts is
// queued with the client running the runner's job.
//
// Starting a slot's deployment share-locks its environment after the instance (deploy.Plan),
// the reverse of the order an operation's end takes them in (deploy.advance); it cannot
// deadlock while no writer holds an environment exclusively and then waits for an instance.
func (p *Parent) Load(ctx context.Context, tx pgx.Tx, id uuid.UUID) (*graph.Run, error) {
	queue, err := jobs.FromContext(ctx)
	if err != nil {
		return nil, err
	}
	d := &runner{deploys: deploy.NewService(p.pool, p.keys, queue, nil, nil), keys: p.keys, jobs: queue}
	q := db.Queries(tx)
	inst, err := q.LockStackInstance(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	run, err := q.RunningStackRun(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	r, err := d.load(ctx, tx, inst, run)
	if err != nil {
		return nil, err
	}
	// The graph job's span names the run it takes a step further; each slot's operation it
	// starts is a child of it, through the operation's job.
	tracing.Tag(ctx, tracing.RunID.String(run.ID.String()), tracing.InstanceID.String(id.String()))
	return &graph.Run{ID: run.ID, Nodes: nodes(r.steps), Reverse: kinds[RunKind(run.Kind)].reverse, Data: r}, nil
}

// nodes are a run's steps as the graph runner sees them. A step waits only for steps of the
// same run: what an earlier run did (a slot deployed before a retry) is already there.
func nodes(steps []dbgen.StackRunStepsRow) []graph.Node {
	names := make([]string, len(steps))
	for i, s := range steps {
		names[i] = s.Name
	}
	out := make([]graph.Node, len(steps))
	for i, s := range steps {
		var after []string
		for _, a := range s.After {
			if slices.Contains(names, a) {
				after = append(after, a)
			}
		}
		out[i] = graph.Node{Name: s.Name, After: after, State: stepState(s)}
	}
	return out
}

// stepState is where a step stands, from its operation.
func stepState(s dbgen.StackRunStepsRow) graph.State {
	if !s.OperationID.Valid {
		var d struct {
			Skipped bool `json:"skipped"`
		}
		if json.Unmarshal(s.Detail, &d) == nil && d.Skipped {
			return graph.Succeeded
		}
		return graph.Waiting
	}
	switch deploy.Status(deref(s.OperationStatus)) {
	case deploy.Succeeded:
		return graph.Succeeded
	case deploy.Queued, deploy.Running, deploy.AwaitingApproval:
		return graph.Running
	}
	return graph.Failed
}

// Start starts one step of the run.
func (p *Parent) Start(ctx context.Context, _ pgx.Tx, run *graph.Run, node string) error {
	r := run.Data.(*runCtx)
	i := slices.IndexFunc(r.steps, func(s dbgen.StackRunStepsRow) bool { return s.Name == node })
	if i < 0 {
		return fmt.Errorf("run %s has no step %s", r.run.ID, node)
	}
	// A span of its own: the slot's operation names it, and its job is a child of it.
	ctx, span := trace.SpanFromContext(ctx).TracerProvider().Tracer("nimbus/instance").Start(ctx, "slot",
		trace.WithAttributes(attribute.String("nimbus.slot", r.steps[i].Slot), tracing.RunID.String(r.run.ID.String())))
	defer span.End()
	op, detail, err := kinds[RunKind(r.run.Kind)].start(ctx, r, r.steps[i])
	if err != nil {
		return fmt.Errorf("slot %s: %w", r.steps[i].Slot, err)
	}
	if detail == nil {
		detail = map[string]any{}
	}
	if op == uuid.Nil {
		detail["skipped"] = true
	}
	raw, _ := json.Marshal(detail)
	return r.q.SetStackRunStep(ctx, dbgen.SetStackRunStepParams{RunID: r.run.ID, Name: node,
		OperationID: uuid.NullUUID{UUID: op, Valid: op != uuid.Nil}, Detail: raw})
}

// End records the run's end, through its kind, and starts the next run queued.
func (p *Parent) End(ctx context.Context, _ pgx.Tx, run *graph.Run, outcome graph.Step, refusal error) error {
	r := run.Data.(*runCtx)
	status, reason := RunSucceeded, ""
	if !outcome.Done {
		status, reason = RunFailed, failure(r, outcome, refusal)
	}
	if _, err := r.q.EndStackRun(ctx, dbgen.EndStackRunParams{ID: r.run.ID, Status: string(status), Error: reason}); err != nil {
		return err
	}
	if err := kinds[RunKind(r.run.Kind)].end(ctx, r, outcome, refusal); err != nil {
		return err
	}
	return r.deps.startNext(ctx, r.tx, r.inst.ID)
}

// failure says in words why a run stopped: each step that failed with its operation's error,
// or the refusal of the step that could not start.
func failure(r *runCtx, outcome graph.Step, refusal error) string {
	if refusal != nil {
		return refusal.Error()
	}
	var parts []string
	for _, name := range outcome.Failed {
		for _, s := range r.steps {
			if s.Name != name {
				continue
			}
			msg := deref(s.OperationError)
			if msg == "" {
				msg = "its " + s.Action + " " + deref(s.OperationStatus)
			}
			parts = append(parts, fmt.Sprintf("%s: %s", s.Slot, msg))
		}
	}
	if len(parts) == 0 {
		return "the run could not go on"
	}
	return strings.Join(parts, "; ")
}

// operations lists the operations a run's steps ran.
func (r *runCtx) operations() []uuid.UUID {
	var out []uuid.UUID
	for _, s := range r.steps {
		if s.OperationID.Valid {
			out = append(out, s.OperationID.UUID)
		}
	}
	return out
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
