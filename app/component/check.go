package component

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"nimbus/app/access"
	"nimbus/app/audit"
	"nimbus/app/problem"
	"nimbus/app/pulumix"
	"nimbus/db/dbgen"
)

// Check is one preview of a draft by the real engine.
type Check struct {
	ID          uuid.UUID      `json:"id"`
	ComponentID uuid.UUID      `json:"component_id"`
	Status      string         `json:"status"` // queued, running, succeeded, failed
	Output      string         `json:"output"`
	Changes     map[string]int `json:"changes"`
	CreatedAt   time.Time      `json:"created_at"`
	StartedAt   *time.Time     `json:"started_at"`
	FinishedAt  *time.Time     `json:"finished_at"`
}

// Done reports whether the check has finished, either way.
func (c Check) Done() bool { return c.Status == "succeeded" || c.Status == "failed" }

func checkFromRow(r dbgen.ComponentCheck) Check {
	c := Check{ID: r.ID, ComponentID: r.ComponentID, Status: r.Status, Output: r.Output, CreatedAt: r.CreatedAt,
		StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, Changes: map[string]int{}}
	_ = json.Unmarshal(r.Changes, &c.Changes)
	return c
}

// CheckArgs asks a worker to run a check.
type CheckArgs struct {
	CheckID uuid.UUID `json:"check_id"`
}

// Kind names the job in River.
func (CheckArgs) Kind() string { return "component_check" }

// JobInserter enqueues River jobs in the caller's transaction.
type JobInserter interface {
	InsertTx(ctx context.Context, tx pgx.Tx, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error)
}

// RequestCheck snapshots the draft and queues a check of it; authors of the component may.
func (s *Service) RequestCheck(ctx context.Context, actor access.Principal, id uuid.UUID) (Check, error) {
	c, err := s.Get(ctx, actor, id)
	if err != nil {
		return Check{}, err
	}
	if !can(actor, "component:definition:update", c.TenantID) {
		return Check{}, problem.ErrForbidden
	}
	if c.Language != "yaml" {
		return Check{}, problem.Invalid("language", "check", "only YAML programs can be checked here so far")
	}
	var out Check
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := dbgen.New(tx)
		row, err := q.CreateCheck(ctx, dbgen.CreateCheckParams{ComponentID: id, Code: c.Code, InputSchema: c.InputSchema,
			RequestedBy: uuid.NullUUID{UUID: actor.UserID, Valid: actor.UserID != uuid.Nil}})
		if err != nil {
			return err
		}
		out = checkFromRow(row)
		if _, err := s.jobs.InsertTx(ctx, tx, CheckArgs{CheckID: row.ID}, nil); err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{Tenant: tenantOf(c), Action: "component.check", TargetType: "component",
			TargetID: id.String(), Diff: map[string]any{"name": c.Name, "check": row.ID}})
	})
	if err != nil {
		return Check{}, fmt.Errorf("request check: %w", err)
	}
	return out, nil
}

// Check returns a check of a component the actor may see.
func (s *Service) Check(ctx context.Context, actor access.Principal, checkID uuid.UUID) (Check, error) {
	row, err := dbgen.New(s.pool).GetCheck(ctx, checkID)
	if errors.Is(err, pgx.ErrNoRows) {
		return Check{}, problem.ErrNotFound
	}
	if err != nil {
		return Check{}, fmt.Errorf("get check: %w", err)
	}
	c, err := s.Get(ctx, actor, row.ComponentID)
	if err != nil {
		return Check{}, err
	}
	// A check shows the draft it ran on: it is for the component's authors only.
	if !can(actor, "component:definition:update", c.TenantID) {
		return Check{}, problem.ErrNotFound
	}
	return checkFromRow(row), nil
}

// maxCheckOutput bounds what is kept of the engine's output.
const maxCheckOutput = 256 << 10

// CheckWorker runs checks with the Pulumi runner.
type CheckWorker struct {
	river.WorkerDefaults[CheckArgs]
	pool   *pgxpool.Pool
	runner *pulumix.Runner // nil when no toolchain is installed
	log    *slog.Logger
}

// NewCheckWorker returns the worker; runner may be nil, and then checks fail saying why.
func NewCheckWorker(pool *pgxpool.Pool, runner *pulumix.Runner, log *slog.Logger) *CheckWorker {
	return &CheckWorker{pool: pool, runner: runner, log: log}
}

// Timeout bounds one check; a preview of one component takes seconds.
func (w *CheckWorker) Timeout(*river.Job[CheckArgs]) time.Duration { return 10 * time.Minute }

// Work runs the check and records its result. Engine complaints are a failed check, not a
// failed job; only trouble reaching the database makes River try again.
func (w *CheckWorker) Work(ctx context.Context, job *river.Job[CheckArgs]) error {
	q := dbgen.New(w.pool)
	row, err := q.StartCheck(ctx, job.Args.CheckID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil // already finished, or the component is gone
	}
	if err != nil {
		return err
	}
	finish := func(status, output string, changes map[string]int) error {
		if len(output) > maxCheckOutput {
			// Postgres refuses text that starts inside a character.
			output = strings.ToValidUTF8(output[len(output)-maxCheckOutput:], "")
		}
		ch, _ := json.Marshal(changes)
		return dbgen.New(w.pool).FinishCheck(context.WithoutCancel(ctx), dbgen.FinishCheckParams{ID: row.ID, Status: status, Output: output, Changes: ch})
	}
	if w.runner == nil {
		return finish("failed", "the Pulumi toolchain is not installed on this server: run go tool task toolchain, or set NIMBUS_PULUMI_DIR", nil)
	}
	v := &problem.ValidationError{}
	in := ParseSchema("input_schema", row.InputSchema, v)
	if in == nil {
		return finish("failed", v.Error(), nil)
	}
	live := &liveOutput{flush: func(s string) {
		if err := q.AppendCheckOutput(ctx, dbgen.AppendCheckOutputParams{ID: row.ID, Output: s}); err != nil {
			w.log.Warn("check progress not saved", "check", row.ID, "err", err)
		}
	}}
	res, err := w.runner.Check(ctx, row.Code, placeholders(in), live)
	live.Close()
	if err != nil && ctx.Err() != nil {
		return err // stopped by a shutdown or the job's timeout: River runs it again
	}
	if err != nil {
		return finish("failed", "the check could not run: "+err.Error(), nil)
	}
	status := "failed"
	if res.Succeeded {
		status = "succeeded"
	}
	return finish(status, res.Output, res.Changes)
}

// placeholders gives every input a value for a check: its default, else something of its type.
func placeholders(s *Schema) map[string]any {
	out := map[string]any{}
	for _, name := range s.Names() {
		p := s.Properties[name]
		v := p.Default
		if v == nil && len(p.Enum) > 0 {
			v = p.Enum[0]
		}
		if v == nil {
			switch p.Type {
			case "string":
				v = "nimbus-check"
			case "integer", "number":
				v = 1.0
				if p.Minimum != nil {
					v = *p.Minimum
				}
			case "boolean":
				v = false
			case "array":
				v = []any{}
			case "object":
				v = map[string]any{}
			}
		}
		out[name] = v
	}
	return out
}

// liveOutput passes the engine's progress to the database in pieces, at most twice a second,
// so the editor page can show it while the check runs.
type liveOutput struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	last  time.Time
	flush func(string)
}

func (l *liveOutput) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	if time.Since(l.last) > 500*time.Millisecond {
		l.flushLocked()
	}
	return len(p), nil
}

func (l *liveOutput) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flushLocked()
}

// flushLocked sends what is buffered up to the last whole character; a character split
// across writes waits for its remaining bytes.
func (l *liveOutput) flushLocked() {
	b := l.buf.Bytes()
	n := len(b)
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				n = i
			}
			break
		}
	}
	if n > 0 {
		l.flush(strings.ToValidUTF8(string(b[:n]), ""))
		l.buf.Next(n)
	}
	l.last = time.Now()
}
