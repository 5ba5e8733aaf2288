// Package saga runs an operation as a list of steps, checkpointing each transition so that a
// crashed run resumes where it stopped and a failed one undoes what it did.
//
// A step's Do must be idempotent: a step found running after a crash is run again. When a step
// fails for good, every step that began — the failed one included, since it may have half
// happened — is undone in reverse order, each undo checkpointed too, and the run ends with the
// first error kept. A run that crashed while undoing resumes the undoing.
//
// A step's end and the next step's start are written together. A step runs once its start is
// durable, and so every checkpoint before it; one whose start a later run need not know of
// (Step.LazyStart) runs at once, without waiting for the disk.
//
// The checkpoints live where the caller keeps them (a Store); deploy keeps an operation's in
// operation_steps.
package saga

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Step is one stage of an operation.
type Step struct {
	Name string
	// Do performs the step and returns what later steps or the record need.
	Do func(ctx context.Context, run *Run) (json.RawMessage, error)
	// Undo reverses Do's effects; nil for a step without effects.
	Undo func(ctx context.Context, run *Run) error
	// LazyStart says a later run need not know that the step began: Do never asks Interrupted,
	// and what Undo reverses are rows of the store's own database written after the start,
	// which a crash that loses the start loses too. Its start, with the end of the step before
	// it, is then written Lazy and Do runs at once. A step that must be told it was interrupted,
	// or whose effects outside the database must be undone (an engine's up), leaves it false:
	// Do runs only once its start, and so every checkpoint before it, is durable.
	LazyStart bool
}

// Status is where a step stands.
type Status string

// The statuses of a step, in the order a step may pass through them.
const (
	Pending    Status = "pending"
	Running    Status = "running"
	Done       Status = "done"
	Failed     Status = "failed"
	Undoing    Status = "undoing"
	Undone     Status = "undone"
	UndoFailed Status = "undo_failed"
)

// State is a step's checkpoint.
type State struct {
	Name   string
	Status Status
	Result json.RawMessage
	Error  string
}

// Move is one step's new checkpoint: its status with its error, and its result (nil keeps the
// recorded one).
type Move struct {
	Step   string
	Status Status
	Result json.RawMessage
	Error  string
}

// Commit says when a Store's write may return.
type Commit int

const (
	// Durable returns once the write survives a crash of the store.
	Durable Commit = iota
	// Lazy returns once the write is seen by every reader, perhaps before it reaches the
	// disk. A crash of the store may lose it, but only with every write after it: the store
	// keeps its writes in order, so the next Durable write makes it durable too. A lost write
	// leaves the checkpoints as they were before it, as if the run had stopped there.
	Lazy
)

// Store keeps the checkpoints. Each method is one transaction.
type Store interface {
	// Load returns the checkpoints of the operation's steps, creating pending ones for names
	// not yet recorded, in the given order. It may create them Lazy: a lost pending step is
	// created again by the next Load.
	Load(ctx context.Context, names []string) ([]State, error)
	// Mark records moves, in order, all or none.
	Mark(ctx context.Context, commit Commit, moves ...Move) error
}

// Run is one execution of a step list; steps read earlier steps' results from it.
type Run struct {
	results     map[string]json.RawMessage
	interrupted map[string]bool
}

// Interrupted reports whether the named step was found running: an earlier run began it and
// stopped before it ended, so its effects may be half made.
func (r *Run) Interrupted(step string) bool { return r.interrupted[step] }

// Result returns what the named step returned, decoded into v.
func (r *Run) Result(step string, v any) error {
	raw, ok := r.results[step]
	if !ok {
		return fmt.Errorf("step %s has no result", step)
	}
	return json.Unmarshal(raw, v)
}

// transient marks an error worth trying again later, such as a lost connection.
type transient struct{ err error }

func (t transient) Error() string { return t.err.Error() }
func (t transient) Unwrap() error { return t.err }

// Transient marks err as passing: Execute stops without undoing anything, leaving the step to
// be run again by a later attempt.
func Transient(err error) error { return transient{err} }

// IsTransient reports whether err was marked as passing.
func IsTransient(err error) bool {
	var t transient
	return errors.As(err, &t)
}

// ErrCancelled is the cause to cancel a run's context with when a user cancels the operation:
// the run then undoes what it did. A context cancelled for any other reason, such as the
// server shutting down, stops the run to be resumed later.
var ErrCancelled = errors.New("cancelled by request")

// ErrParked is what a step returns, wrapped or not, when the operation must wait for something
// outside it, such as a person's approval: Execute stops without failing or undoing anything,
// leaving the step pending to be run again when the operation is resumed.
var ErrParked = errors.New("waiting")

// ErrTimedOut is the cause to cancel a run's context with when it ran out of time: like a
// cancel, the run undoes what it did, since running it again would hang the same way.
var ErrTimedOut = errors.New("timed out")

// final reports whether ctx was cancelled for a reason that ends the run for good.
func final(ctx context.Context) bool {
	cause := context.Cause(ctx)
	return errors.Is(cause, ErrCancelled) || errors.Is(cause, ErrTimedOut)
}

// Failure is the end of a run that did not succeed: the error that stopped it, and whether
// everything it had done was undone.
type Failure struct {
	Step        string
	Err         error
	Compensated bool
	UndoErrs    []error
}

func (f *Failure) Error() string {
	msg := fmt.Sprintf("step %s: %v", f.Step, f.Err)
	if !f.Compensated {
		msg += fmt.Sprintf(" (and %d undo steps failed: %v)", len(f.UndoErrs), errors.Join(f.UndoErrs...))
	}
	return msg
}

func (f *Failure) Unwrap() error { return f.Err }

// Execute runs steps to the end, resuming from the checkpoints in store. It returns nil when
// every step is done, a *Failure when a step failed for good (after undoing), ErrParked when a
// step parked the run, or a transient error when the run should be tried again as it is. With lastAttempt, a transient error is
// treated as final.
func Execute(ctx context.Context, store Store, steps []Step, lastAttempt bool) error {
	names := make([]string, len(steps))
	for i, s := range steps {
		names[i] = s.Name
	}
	states, err := store.Load(ctx, names)
	if err != nil {
		return Transient(fmt.Errorf("load checkpoints: %w", err))
	}
	run := &Run{results: map[string]json.RawMessage{}, interrupted: map[string]bool{}}
	for _, st := range states {
		if len(st.Result) > 0 && string(st.Result) != "null" {
			run.results[st.Name] = st.Result // undo steps need them too
		}
	}
	for _, st := range states {
		if compensating(st.Status) {
			// An earlier run failed and was interrupted while undoing: carry on with it.
			return compensate(ctx, store, steps, states, run, &Failure{Step: st.Name, Err: errors.New(firstError(states))})
		}
	}
	// The end of the step that ran last, written with the start of the next: a crash between
	// the two leaves that step running, to be run again.
	var ended []Move
	for i, step := range steps {
		if states[i].Status == Done {
			continue
		}
		run.interrupted[step.Name] = states[i].Status == Running
		commit := Durable
		if step.LazyStart {
			commit = Lazy
		}
		if err := mark(ctx, store, commit, append(ended, Move{Step: step.Name, Status: Running})...); err != nil {
			return Transient(fmt.Errorf("checkpoint %s: %w", step.Name, err))
		}
		ended = nil
		states[i].Status = Running
		result, err := do(ctx, step, run)
		if errors.Is(err, ErrParked) {
			// Before looking at ctx: a parked operation's lease is gone, which may have
			// cancelled the run since.
			if markErr := mark(context.WithoutCancel(ctx), store, Durable, Move{Step: step.Name, Status: Pending}); markErr != nil {
				return Transient(fmt.Errorf("checkpoint %s: %w", step.Name, markErr))
			}
			return err
		}
		if err != nil {
			if ctx.Err() != nil && !final(ctx) {
				return Transient(fmt.Errorf("step %s stopped: %w", step.Name, context.Cause(ctx)))
			}
			if IsTransient(err) && !lastAttempt && ctx.Err() == nil {
				return err
			}
			if markErr := mark(context.WithoutCancel(ctx), store, Durable, Move{Step: step.Name, Status: Failed, Error: err.Error()}); markErr != nil {
				return Transient(fmt.Errorf("checkpoint %s: %w", step.Name, markErr))
			}
			states[i].Status, states[i].Error = Failed, err.Error()
			if final(ctx) {
				// So the caller tells a cancel or a timeout from a failure.
				err = fmt.Errorf("%w: %w", context.Cause(ctx), err)
			}
			return compensate(ctx, store, steps, states, run, &Failure{Step: step.Name, Err: err})
		}
		if result == nil {
			result = json.RawMessage("null")
		}
		ended = []Move{{Step: step.Name, Status: Done, Result: result}}
		states[i].Status = Done
		run.results[step.Name] = result
	}
	if ended != nil {
		if err := mark(ctx, store, Durable, ended...); err != nil {
			return Transient(fmt.Errorf("checkpoint %s: %w", ended[0].Step, err))
		}
	}
	return nil
}

func compensating(s Status) bool {
	return s == Failed || s == Undoing || s == Undone || s == UndoFailed
}

func firstError(states []State) string {
	for _, st := range states {
		if st.Error != "" {
			return st.Error
		}
	}
	return "an earlier run failed"
}

// compensate undoes, newest first, every step that began. Undo runs even when the operation
// was cancelled: cleaning up is what a cancel asks for.
func compensate(ctx context.Context, store Store, steps []Step, states []State, run *Run, f *Failure) error {
	ctx = context.WithoutCancel(ctx)
	f.Compensated = true
	for i := len(steps) - 1; i >= 0; i-- {
		step, st := steps[i], states[i]
		switch st.Status {
		case Pending, Undone:
			continue
		case UndoFailed:
			f.Compensated = false
			f.UndoErrs = append(f.UndoErrs, fmt.Errorf("undo %s: %s", step.Name, st.Error))
			continue
		}
		if step.Undo == nil {
			continue
		}
		if err := mark(ctx, store, Durable, Move{Step: step.Name, Status: Undoing, Error: st.Error}); err != nil {
			return Transient(fmt.Errorf("checkpoint undo %s: %w", step.Name, err))
		}
		if err := undo(ctx, step, run); err != nil {
			f.Compensated = false
			f.UndoErrs = append(f.UndoErrs, fmt.Errorf("undo %s: %w", step.Name, err))
			if markErr := mark(ctx, store, Durable, Move{Step: step.Name, Status: UndoFailed, Error: err.Error()}); markErr != nil {
				return Transient(fmt.Errorf("checkpoint undo %s: %w", step.Name, markErr))
			}
			continue
		}
		if err := mark(ctx, store, Durable, Move{Step: step.Name, Status: Undone, Error: st.Error}); err != nil {
			return Transient(fmt.Errorf("checkpoint undo %s: %w", step.Name, err))
		}
	}
	return f
}

// tracer makes the run's spans in the trace of the span ctx carries (the job's): a run without
// one traces nothing.
func tracer(ctx context.Context) trace.Tracer {
	return trace.SpanFromContext(ctx).TracerProvider().Tracer("nimbus/jobs/saga")
}

// do runs a step's Do in a span of its own.
func do(ctx context.Context, step Step, run *Run) (json.RawMessage, error) {
	ctx, span := tracer(ctx).Start(ctx, "step "+step.Name, trace.WithAttributes(attribute.String("nimbus.step", step.Name)))
	defer span.End()
	result, err := step.Do(ctx, run)
	ended(span, err)
	return result, err
}

// undo runs a step's Undo in a span of its own.
func undo(ctx context.Context, step Step, run *Run) error {
	ctx, span := tracer(ctx).Start(ctx, "undo "+step.Name, trace.WithAttributes(attribute.String("nimbus.step", step.Name)))
	defer span.End()
	err := step.Undo(ctx, run)
	ended(span, err)
	return err
}

// mark writes checkpoints in a span of its own: how long a run waits for its store.
func mark(ctx context.Context, store Store, commit Commit, moves ...Move) error {
	steps := make([]string, len(moves))
	for i, m := range moves {
		steps[i] = m.Step + " " + string(m.Status)
	}
	_, span := tracer(ctx).Start(ctx, "checkpoint", trace.WithAttributes(
		attribute.StringSlice("nimbus.checkpoint.moves", steps), attribute.Bool("nimbus.checkpoint.durable", commit == Durable)))
	defer span.End()
	err := store.Mark(ctx, commit, moves...)
	ended(span, err)
	return err
}

// ended records on span how what it timed ended: a parked step is no error, and a failure is
// told by its Kind, never its message.
func ended(span trace.Span, err error) {
	if err != nil && !errors.Is(err, ErrParked) {
		span.SetStatus(codes.Error, Kind(err))
	}
}
