package graph

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"nimbus/db"
)

// Args asks for the next step of one parent's graph: the parent's kind (ParentEnvironment,
// ParentStackInstance) and its ID. The end of every operation in a graph under way queues it.
type Args struct {
	Parent string    `json:"parent"`
	ID     uuid.UUID `json:"id"`
}

// Kind names the job in River.
func (Args) Kind() string { return "graph" }

// The kinds of parents.
const (
	ParentEnvironment   = "environment"
	ParentStackInstance = "stack_instance"
)

// DefaultParallel is how many nodes of one graph run at once when no setting says otherwise.
const DefaultParallel = 4

// Parent is what owns a graph: an environment, a stack instance. It alone writes its own
// status; the runner tells it what the graph needs.
type Parent interface {
	// Load locks the parent and returns the graph under way, or nil when none is.
	Load(ctx context.Context, tx pgx.Tx, id uuid.UUID) (*Run, error)
	// Start starts one node's operation. An error that is a refusal (a rule saying no) stops
	// the graph once nothing else runs: the parent records why in End.
	Start(ctx context.Context, tx pgx.Tx, run *Run, node string) error
	// End records how the graph ended: step.Done, or step.Stopped with the nodes that failed,
	// or refused with the refusal that stopped it.
	End(ctx context.Context, tx pgx.Tx, run *Run, step Step, refused error) error
}

// Run is one graph under way on a parent.
type Run struct {
	ID    uuid.UUID
	Nodes []Node
	// Reverse runs the graph backwards, as a destroy does.
	Reverse bool
	// Data is the parent's own, carried from Load to Start and End.
	Data any
}

// Runner is the job worker taking each graph one step further.
type Runner struct {
	river.WorkerDefaults[Args]
	pool     *pgxpool.Pool
	parents  map[string]Parent
	parallel int
	refusal  func(error) bool
}

// NewRunner returns the worker; parallel bounds the nodes of one graph running at once
// (DefaultParallel when < 1), refusal tells a rule saying no from a failure worth retrying.
func NewRunner(pool *pgxpool.Pool, parallel int, refusal func(error) bool) *Runner {
	if parallel < 1 {
		parallel = DefaultParallel
	}
	return &Runner{pool: pool, parents: map[string]Parent{}, parallel: parallel, refusal: refusal}
}

// Serve makes the runner take the graphs of parents of kind.
func (r *Runner) Serve(kind string, p Parent) *Runner {
	r.parents[kind] = p
	return r
}

// start starts one node within a savepoint: a refusal leaves nothing of what the start wrote,
// and is returned apart from a failure.
func (r *Runner) start(ctx context.Context, tx pgx.Tx, p Parent, run *Run, node string) (refused, err error) {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return nil, err
	}
	if err := p.Start(ctx, sp, run, node); err != nil {
		if !r.refusal(err) {
			return nil, err
		}
		return err, sp.Rollback(ctx)
	}
	return nil, sp.Commit(ctx)
}

// Timeout bounds one step, which only reads and queues.
func (r *Runner) Timeout(*river.Job[Args]) time.Duration { return time.Minute }

// Work takes one step under the parent's lock: two steps of one parent never run together, and
// a step that finds nothing to do changes nothing.
func (r *Runner) Work(ctx context.Context, job *river.Job[Args]) error {
	p, ok := r.parents[job.Args.Parent]
	if !ok {
		return fmt.Errorf("graph: no parent of kind %q", job.Args.Parent)
	}
	return db.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		run, err := p.Load(ctx, tx, job.Args.ID)
		if err != nil || run == nil {
			return err
		}
		nodes := run.Nodes
		if run.Reverse {
			nodes = Reverse(nodes)
		}
		step := Next(nodes, r.parallel)
		running := 0
		for _, n := range nodes {
			if n.State == Running {
				running++
			}
		}
		for _, n := range step.Start {
			refused, err := r.start(ctx, tx, p, run, n)
			if err != nil {
				return fmt.Errorf("start %s: %w", n, err)
			}
			if refused == nil {
				running++
				continue
			}
			// Nothing more starts; the graph ends once what runs has ended, and the next
			// step, asked for by the end of each, tries the refused node again.
			if running == 0 {
				return p.End(ctx, tx, run, Step{Stopped: true, Failed: []string{n}}, refused)
			}
			return nil
		}
		if step.Done || step.Stopped {
			return p.End(ctx, tx, run, step, nil)
		}
		return nil
	})
}
