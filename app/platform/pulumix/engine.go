package pulumix

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// workspace is a stack made ready for the engine: its program and settings written, its
// stack present in the backend, its environment set.
type workspace struct {
	stack string
	dir   string   // the working directory: Pulumi.yaml, Pulumi.<stack>.yaml
	tmp   string   // the engine's temporary directory, where event pipes and plans go
	env   []string // the engine's environment, KEY=value
	state string   // the stack's own file backend
	ports []uint16 // the TCP ports its provider needs
	// mirror keeps the state in the bucket every replica shares; nil when there is none.
	mirror *mirror
	// volatile says tmp is the operation's own, in memory, and goes when it ends (close).
	volatile bool
	// scratch says the stack is a check's, which writes nothing but its own directories: not
	// the clouds every deployment's engine may write.
	scratch bool
	// hidden are values what the engine says never shows (Stack.Hidden).
	hidden []string
	// saltByEngine says the stack is new and its engine makes its salt (see createForUp).
	saltByEngine bool
}

// engineRun is what one engine process said: its output's tail and what its events told.
type engineRun struct {
	output  string
	outputs map[string]any // the stack's outputs after an update, secrets as "[secret]"
	changes map[string]int // by kind, from the last summary: an up's update, not its preview
	began   bool           // a step past the planning: the engine set about the resources
	drift   []Drifted      // what a refresh preview found changed or gone
	// refreshing are the resources whose latest planned step is a refresh: how a refresh
	// preview's step ends says what it found.
	refreshing map[string]bool
	plan       plan // what a preview plans
	dropped    int  // the size of the largest event too large to read, 0 when none was
	redact     *strings.Replacer
}

// run runs one CLI command on the workspace's stack: its text output goes to progress as it
// comes, its resource events too when progress is an EventSink, and both are kept for the
// result. The engine writes its events into a named pipe, read as they come.
func (r *Runner) run(ctx context.Context, ws workspace, progress io.Writer, args ...string) (engineRun, error) {
	ctx, span := tracer(ctx).Start(ctx, "engine "+args[0], trace.WithAttributes(attribute.String("nimbus.engine.command", args[0])))
	defer span.End()
	pipe, err := openEvents(ws.tmp)
	if err != nil {
		return engineRun{}, err
	}
	defer pipe.close()
	sink, _ := progress.(EventSink)
	rep := r.redactor(ws)
	run := engineRun{changes: map[string]int{}, redact: rep}
	read := make(chan error, 1)
	var events pace
	go func() {
		_, reading := tracer(ctx).Start(ctx, "engine events")
		err := pipe.read(func(ev apitype.EngineEvent) { events.tick(); run.note(ev, sink) }, func(size int) { run.dropped = max(run.dropped, size) })
		reading.SetAttributes(attribute.Int("nimbus.engine.events", events.n))
		reading.End() // before the run's span ends, which waits for read
		read <- err
	}()

	said, red, w := r.streams(progress, rep)
	args = append(args, "--stack", ws.stack, "--color", "never", "--event-log", pipe.path)
	synced := ws.watch(ctx)
	_, stderr, proc, err := r.exec(ctx, ws, []io.Writer{w}, []io.Writer{w}, args...)
	if clock, ok := progress.(ProcessSink); ok && !proc.started.IsZero() {
		clock.Ran(proc.started, proc.exited)
	}
	_ = red.Flush()
	stderr = rep.Replace(stderr)
	pipe.done() // the engine has closed its end: what it wrote is read to the end, then EOF
	if rerr := <-read; rerr != nil && err == nil {
		err = fmt.Errorf("read the engine's events: %w", rerr)
	}
	events.record(span)
	if serr := synced(); serr != nil && err == nil {
		err = serr
	}
	if perr := pruneHistory(ws.state); perr != nil && err == nil {
		err = perr
	}
	run.output = said.text()
	if err == nil && run.dropped > 0 {
		return run, tooLarge(args[0], fmt.Sprintf("the engine reported an event of %s, and Nimbus reads none over %s: a program's outputs and each resource's properties must stay within that",
			Size(run.dropped), Size(MaxEvent)), run.output)
	}
	if err != nil {
		if run.output == "" {
			run.output = quiet(stderr)
		}
		return run, failure(ctx, args[0], ws.stack, err, run.output)
	}
	return run, nil
}

// pace is when an engine's events came: the first and the last, and how many. An event each
// would cost a span's worth of memory per resource step; these tell where the engine's time went.
type pace struct {
	first, last time.Time
	n           int
}

func (p *pace) tick() {
	p.last = time.Now()
	if p.n == 0 {
		p.first = p.last
	}
	p.n++
}

// record puts the first and last events on span, once the reader is done with p.
func (p *pace) record(span trace.Span) {
	span.SetAttributes(attribute.Int("nimbus.engine.events", p.n))
	if p.n > 0 {
		span.AddEvent("first engine event", trace.WithTimestamp(p.first))
		span.AddEvent("last engine event", trace.WithTimestamp(p.last))
	}
}

// watch keeps the shared bucket in step with the state the engine writes, until the returned
// function is called; that pushes what the engine left and says whether it could.
func (ws workspace) watch(ctx context.Context) func() error {
	if ws.mirror == nil {
		return func() error { return nil }
	}
	return ws.mirror.watch(ctx, filepath.Join(ws.state, filepath.FromSlash(checkpointKey(project, ws.stack))))
}

// note takes what an event tells: a resource's step for the sink, the stack's outputs, the
// summary's counts.
func (run *engineRun) note(ev apitype.EngineEvent, sink EventSink) {
	if run.found(ev, sink) {
		return
	}
	if sink != nil {
		if e, ok := convert(ev); ok {
			e.Message = run.redact.Replace(e.Message)
			for i := range e.Changes {
				e.Changes[i].Old = redactValue(e.Changes[i].Old, run.redact)
				e.Changes[i].New = redactValue(e.Changes[i].New, run.redact)
			}
			sink.Event(e)
		}
	}
	if ev.ResourcePreEvent != nil && !ev.ResourcePreEvent.Planning {
		run.began = true
	}
	if ev.ResourcePreEvent != nil && ev.ResourcePreEvent.Planning {
		run.plan.note(ev.ResourcePreEvent.Metadata, run.redact)
	}
	switch {
	case ev.SummaryEvent != nil:
		run.changes = map[string]int{}
		for op, n := range ev.SummaryEvent.ResourceChanges {
			run.changes[string(op)] = n
		}
	case ev.ResOutputsEvent != nil && !ev.ResOutputsEvent.Planning &&
		ev.ResOutputsEvent.Metadata.Type == "pulumi:pulumi:Stack" && ev.ResOutputsEvent.Metadata.New != nil:
		run.outputs = map[string]any{}
		for k, v := range ev.ResOutputsEvent.Metadata.New.Outputs {
			run.outputs[k] = redactValue(masked(v), run.redact)
		}
	}
}

// refreshed reports whether the event ends a planned refresh of a resource, which found drift()
// tells. Any other planned step of it begins anew.
func (run *engineRun) refreshed(ev apitype.EngineEvent) bool {
	if pre := ev.ResourcePreEvent; pre != nil && pre.Planning {
		if run.refreshing == nil {
			run.refreshing = map[string]bool{}
		}
		run.refreshing[pre.Metadata.URN] = pre.Metadata.Op == apitype.OpRefresh
	}
	out := ev.ResOutputsEvent
	return out != nil && out.Planning && run.refreshing[out.Metadata.URN]
}

// found keeps what the end of a planned refresh found changed or gone, and tells the sink.
func (run *engineRun) found(ev apitype.EngineEvent, sink EventSink) bool {
	if !run.refreshed(ev) {
		return false
	}
	m := ev.ResOutputsEvent.Metadata
	d, ok := drifted(m)
	for i := range d.Changes {
		d.Changes[i].Old = redactValue(d.Changes[i].Old, run.redact)
		d.Changes[i].New = redactValue(d.Changes[i].New, run.redact)
	}
	if !ok {
		d = Drifted{URN: m.URN, Type: m.Type, Name: nameOf(m.URN), Op: string(apitype.OpSame)}
	} else {
		run.drift = append(run.drift, d)
	}
	if sink != nil {
		sink.Event(Event{At: time.Now(), URN: d.URN, Type: d.Type, Name: d.Name, Op: d.Op, Status: ResourceDone, Changes: d.Changes})
	}
	return true
}

// masked replaces every secret in an output value with "[secret]". The engine shows a secret
// as an object carrying Pulumi's secret signature (its value already blinded).
func masked(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if x[secretSig] == secretMark {
			return "[secret]"
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = masked(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = masked(e)
		}
		return out
	}
	return v
}

// Pulumi's signature key and the value that marks a secret.
const (
	secretSig  = "4dabf18193072939515e22adb298388d"
	secretMark = "1b47061264138c4ac30d75fd1eb44270"
)

// eventPipe is the named pipe an engine process writes its events into. The pipe is held open for
// writing here too, so that its reader meets the end only once the engine is done: an up opens
// and closes it twice, for its preview and for its update.
type eventPipe struct {
	path string
	r, w *os.File
}

func openEvents(dir string) (*eventPipe, error) {
	p := filepath.Join(dir, "events-"+randomHex(8))
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		return nil, fmt.Errorf("event pipe: %w", err)
	}
	// Non-blocking, the open does not wait for a writer; reads still wait for data, through
	// the runtime's poller.
	r, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		os.Remove(p)
		return nil, fmt.Errorf("event pipe: %w", err)
	}
	w, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		r.Close()
		os.Remove(p)
		return nil, fmt.Errorf("event pipe: %w", err)
	}
	return &eventPipe{path: p, r: r, w: w}, nil
}

// MaxEvent is the largest engine event read: one resource's properties, or the stack's
// outputs. A program can make a value of any size (a string doubled a few times is gigabytes);
// an event beyond this is dropped unread, and the run fails saying so (see tooLarge).
const MaxEvent = 4 << 20

// read decodes events, one per line, until the pipe ends. A line longer than MaxEvent is
// skipped to its end and its size reported to dropped, never held whole. A line that is not an
// event (an engine killed mid-write) ends the reading, and the rest is drained so the engine
// never blocks on it.
func (e *eventPipe) read(each func(apitype.EngineEvent), dropped func(size int)) error {
	r := bufio.NewReaderSize(e.r, 64<<10)
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		switch {
		case len(line)+len(chunk) > MaxEvent:
			size := len(line) + len(chunk)
			for errors.Is(err, bufio.ErrBufferFull) {
				chunk, err = r.ReadSlice('\n')
				size += len(chunk)
			}
			dropped(size)
			line = line[:0]
		case errors.Is(err, bufio.ErrBufferFull):
			line = append(line, chunk...)
			continue
		default:
			line = append(line, chunk...)
			if len(bytes.TrimSpace(line)) > 0 {
				var ev apitype.EngineEvent
				if jerr := json.Unmarshal(line, &ev); jerr != nil {
					_, _ = io.Copy(io.Discard, e.r)
					if err != nil {
						return nil // cut short by a killed engine: what came before counts
					}
					return jerr
				}
				each(ev)
			}
			line = line[:0]
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// done closes the writing end held here: the reader ends once the engine's is closed too.
func (e *eventPipe) done() { e.w.Close() }

func (e *eventPipe) close() {
	e.w.Close()
	e.r.Close()
	os.Remove(e.path)
}
