package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"nimbus/app/kernel/objstore"
	"nimbus/app/platform/pulumix"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// maxLogLines caps what is kept of an operation's log in the database.
const maxLogLines = 10000

// maxDiagnostic caps one diagnostic of a resource; the database keeps 16 KiB of them in all.
const maxDiagnostic = 4 << 10

// progress records what the engine says during an operation: its output line by line, in
// batches so that a chatty engine costs few round trips, and its resource events as rows
// updated in place. Every write wakes the operation's readers (see the triggers of
// operation_logs and operation_resources). The database keeps the first maxLogLines lines;
// when there are more, the whole log goes to the object store as the operation ends.
type progress struct {
	q       *dbgen.Queries
	ctx     context.Context // outlives a cancelled operation, so its last words are kept
	op      uuid.UUID
	log     *slog.Logger
	objects objstore.Store
	// overflow holds the lines past the cap until Close stores the whole log.
	overflow *os.File

	mu sync.Mutex
	// in cuts lines longer than pulumix.MaxLine on their way to partial, so that one endless
	// line holds no more than that in memory, nor in a row.
	in        *pulumix.LineLimit
	partial   []byte
	pending   []string
	stored    int64
	max       int64 // lines the database keeps: maxLogLines
	truncated bool
	// undoing: the events are the undo's, kept beside what the operation did.
	undoing atomic.Bool
	// engine is when the running step's engine processes ran.
	engine engineClock

	stop chan struct{}
	done chan struct{}
}

func newProgress(ctx context.Context, pool *pgxpool.Pool, objects objstore.Store, op uuid.UUID, resumed bool, log *slog.Logger) *progress {
	p := &progress{q: db.Queries(pool), ctx: context.WithoutCancel(ctx), op: op, log: log, objects: objects, max: maxLogLines,
		stop: make(chan struct{}), done: make(chan struct{})}
	p.in = pulumix.LimitLines(splitter{p}, pulumix.MaxLine)
	if resumed {
		p.stored, _ = p.q.CountOperationLogs(p.ctx, op) // it goes on where it was
	}
	go p.flushEvery(250 * time.Millisecond)
	return p
}

func (p *progress) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.in.Write(b)
}

// splitter is where a progress's LineLimit writes: the lines, gathered for the next flush.
type splitter struct{ p *progress }

// Write is called with p.mu held.
func (s splitter) Write(b []byte) (int, error) {
	p := s.p
	p.partial = append(p.partial, b...)
	for {
		i := bytes.IndexByte(p.partial, '\n')
		if i < 0 {
			break
		}
		line := strings.ToValidUTF8(string(bytes.TrimRight(p.partial[:i], "\r")), "\uFFFD")
		p.partial = p.partial[i+1:]
		if !pulumix.Noise(line) {
			p.pending = append(p.pending, line)
		}
	}
	if len(p.pending) >= 200 {
		p.flushLocked()
	}
	return len(b), nil
}

// planOf shows what an applied preview planned as this operation's plan.
func (p *progress) planOf(preview uuid.UUID) error {
	return p.q.CopyPlannedResources(p.ctx, dbgen.CopyPlannedResourcesParams{OperationID: p.op, PreviewID: preview})
}

// undo marks the events from here on as the undo's.
func (p *progress) undo() { p.undoing.Store(true) }

// Ran notes an engine process of the running step, for its checkpoint.
func (p *progress) Ran(started, exited time.Time) { p.engine.ran(started, exited) }

// Event records what the engine did to a resource.
func (p *progress) Event(e pulumix.Event) {
	var err error
	switch {
	case e.Status == pulumix.ResourcePlanned && p.undoing.Load():
		// An undo's own plan is not what the operation planned.
	case e.Status != "" && p.undoing.Load():
		err = p.q.RecordResourceUndo(p.ctx, dbgen.RecordResourceUndoParams{OperationID: p.op, Urn: e.URN, Type: e.Type, Name: e.Name,
			Op: e.Op, Status: string(e.Status)})
	case e.Status == "":
		err = p.q.RecordResourceDiagnostic(p.ctx, dbgen.RecordResourceDiagnosticParams{OperationID: p.op, Urn: e.URN, Name: e.Name,
			Line: pulumix.CutLine(e.Severity+": "+e.Message, maxDiagnostic) + "\n"})
	default:
		changes, _ := json.Marshal(e.Changes)
		if e.Changes == nil {
			changes = []byte("[]")
		}
		outputs, _ := json.Marshal(e.Outputs)
		if e.Outputs == nil {
			outputs = []byte("{}")
		}
		err = p.q.RecordResourceStep(p.ctx, dbgen.RecordResourceStepParams{OperationID: p.op, Urn: e.URN, Type: e.Type, Name: e.Name,
			Op: e.Op, Status: string(e.Status), Changes: changes, ProviderID: e.ID, Outputs: outputs})
	}
	if err != nil {
		p.log.Warn("resource event lost", "operation", p.op, "resource", e.URN, "err", err)
	}
}

func (p *progress) flushEvery(d time.Duration) {
	defer close(p.done)
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.mu.Lock()
			p.flushLocked()
			p.mu.Unlock()
		}
	}
}

func (p *progress) flushLocked() {
	if len(p.pending) == 0 {
		return
	}
	lines := p.pending
	p.pending = nil
	if room := p.max - p.stored; int64(len(lines)) > room {
		p.spill(lines[max(room, 0):])
		lines = lines[:max(room, 0)]
		if !p.truncated {
			p.truncated = true
			if err := markTruncated(p.ctx, p.q, p.op); err != nil {
				p.log.Warn("operation log truncation not marked", "operation", p.op, "err", err)
			}
		}
	}
	if len(lines) == 0 {
		return
	}
	if err := p.q.AppendOperationLogs(p.ctx, dbgen.AppendOperationLogsParams{OperationID: p.op, Lines: lines}); err != nil {
		// Kept for the next flush, within reason: the database may be back by then.
		if len(p.pending)+len(lines) <= 5000 {
			p.pending = append(lines, p.pending...)
		} else {
			p.log.Warn("operation log lines lost", "operation", p.op, "lines", len(lines), "err", err)
		}
		return
	}
	p.stored += int64(len(lines))
}

// spill keeps lines past the database's cap in a temporary file.
func (p *progress) spill(lines []string) {
	if p.objects == nil {
		return
	}
	if p.overflow == nil {
		f, err := os.CreateTemp("", "nimbus-log-*")
		if err != nil {
			p.log.Warn("the end of a long operation log is lost", "operation", p.op, "err", err)
			p.objects = nil
			return
		}
		p.overflow = f
	}
	for _, l := range lines {
		fmt.Fprintln(p.overflow, l)
	}
}

// Close stores what is left, an unfinished last line included, and the whole log when it
// outgrew the database.
func (p *progress) Close() error {
	close(p.stop)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	_ = p.in.Flush()
	if len(p.partial) > 0 {
		p.pending = append(p.pending, strings.ToValidUTF8(string(p.partial), "\uFFFD"))
		p.partial = nil
	}
	p.flushLocked()
	if p.overflow == nil {
		return nil
	}
	defer os.Remove(p.overflow.Name())
	defer p.overflow.Close()
	if err := p.archive(); err != nil {
		p.log.Warn("the whole log of an operation was not stored", "operation", p.op, "err", err)
	}
	return nil
}

// archive stores the lines the database holds followed by the overflow as one object.
func (p *progress) archive() error {
	head, err := storedLog(p.ctx, p.q, p.op)
	if err != nil {
		return err
	}
	if _, err := p.overflow.Seek(0, io.SeekStart); err != nil {
		return err
	}
	info, err := p.overflow.Stat()
	if err != nil {
		return err
	}
	// The size given: an S3 client that does not know it buffers a huge part in memory.
	size := int64(len(head)) + info.Size()
	return p.objects.Put(p.ctx, logKey(p.op), io.MultiReader(strings.NewReader(head), p.overflow), size)
}

// logKey is where the whole log of an operation is kept in the object store.
func logKey(op uuid.UUID) string { return "logs/" + op.String() + ".log" }
