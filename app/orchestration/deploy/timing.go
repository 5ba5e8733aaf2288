package deploy

import (
	"slices"
	"sync"
	"time"

	"nimbus/db/dbgen"
	"nimbus/jobs/saga"
)

// Timing is where an operation's time went, from its request to its end (now, while it runs):
// its parts one after another, never overlapping, together its whole duration. It is read from
// what the operation's rows record, so an operator sees where a slow operation spent its time
// without a trace collector.
type Timing struct {
	DurationMS float64      `json:"duration_ms"`
	Parts      []TimingPart `json:"parts"`
}

// The kinds of a timing's parts.
const (
	PartQueue    = "queue"    // from the request until a worker took it
	PartStep     = "step"     // a step's do
	PartApproval = "approval" // waiting for approval, its job ended
	PartUndo     = "undo"     // a step's undo, after a later step failed
	PartNimbus   = "nimbus"   // between the recorded parts: claims, checkpoints, a queue again after approval
)

// TimingPart is one stretch of an operation's time. A step's part tells its engine's share: from
// its first engine process's start to its last's exit.
type TimingPart struct {
	Kind       string       `json:"kind"`
	Name       string       `json:"name"` // the step's name, or the kind
	StartedAt  time.Time    `json:"started_at"`
	EndedAt    time.Time    `json:"ended_at"`
	DurationMS float64      `json:"duration_ms"`
	Engine     *EngineSpell `json:"engine,omitempty"`
}

// EngineSpell is the time a step's engine processes ran.
type EngineSpell struct {
	StartedAt  time.Time `json:"started_at"`
	EndedAt    time.Time `json:"ended_at"`
	DurationMS float64   `json:"duration_ms"`
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// timingOf lays out an operation's time from its row, its steps' rows and its wait for approval
// (asked, ended), as of now. What the rows do not cover is a part of its own (PartNimbus); a
// part that overlaps the one before is cut to begin where it ended, so the parts add up to the
// operation's duration.
func timingOf(op Operation, steps []dbgen.OperationStep, asked, ended *time.Time, now time.Time) Timing {
	end := now
	if op.FinishedAt != nil {
		end = *op.FinishedAt
	}
	until := func(t *time.Time) time.Time {
		if t == nil {
			return end
		}
		return *t
	}
	parts := []TimingPart{{Kind: PartQueue, Name: PartQueue, StartedAt: op.CreatedAt, EndedAt: until(op.StartedAt)}}
	if asked != nil {
		parts = append(parts, TimingPart{Kind: PartApproval, Name: PartApproval, StartedAt: *asked, EndedAt: until(ended)})
	}
	for _, s := range steps {
		// A step waiting for its turn again (parked for approval, rewound) has no run to show.
		ran := s.StartedAt != nil && (s.FinishedAt != nil || saga.Status(s.Status) == saga.Running)
		if ran {
			p := TimingPart{Kind: PartStep, Name: s.Name, StartedAt: *s.StartedAt, EndedAt: until(s.FinishedAt)}
			if s.EngineStartedAt != nil && s.EngineFinishedAt != nil {
				p.Engine = &EngineSpell{StartedAt: *s.EngineStartedAt, EndedAt: *s.EngineFinishedAt,
					DurationMS: millis(s.EngineFinishedAt.Sub(*s.EngineStartedAt))}
			}
			parts = append(parts, p)
		}
		if s.UndoStartedAt != nil {
			parts = append(parts, TimingPart{Kind: PartUndo, Name: "undo " + s.Name, StartedAt: *s.UndoStartedAt, EndedAt: until(s.UndoFinishedAt)})
		}
	}
	slices.SortStableFunc(parts, func(a, b TimingPart) int { return a.StartedAt.Compare(b.StartedAt) })

	t := Timing{DurationMS: millis(end.Sub(op.CreatedAt)), Parts: []TimingPart{}}
	cursor := op.CreatedAt
	add := func(p TimingPart) {
		p.StartedAt = within(p.StartedAt, cursor, end)
		p.EndedAt = within(p.EndedAt, p.StartedAt, end)
		p.DurationMS = millis(p.EndedAt.Sub(p.StartedAt))
		t.Parts = append(t.Parts, p)
		cursor = p.EndedAt
	}
	for _, p := range parts {
		if p.StartedAt.After(cursor) {
			add(TimingPart{Kind: PartNimbus, Name: PartNimbus, StartedAt: cursor, EndedAt: p.StartedAt})
		}
		add(p)
	}
	if end.After(cursor) {
		add(TimingPart{Kind: PartNimbus, Name: PartNimbus, StartedAt: cursor, EndedAt: end})
	}
	return t
}

// within is t, or the nearest of from and to when it lies outside them.
func within(t, from, to time.Time) time.Time {
	switch {
	case t.Before(from):
		return from
	case t.After(to):
		return to
	}
	return t
}

// engineClock keeps when the engine processes of the running step started and exited, for the
// checkpoint that ends the step (see checkpoints.Mark).
type engineClock struct {
	mu              sync.Mutex
	started, exited time.Time
}

// ran notes one engine process.
func (c *engineClock) ran(started, exited time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started.IsZero() {
		c.started = started
	}
	c.exited = exited
}

// take returns what was noted since the last take, nil when no engine ran, and forgets it.
func (c *engineClock) take() (started, exited *time.Time) {
	if c == nil {
		return nil, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.started.IsZero() {
		s, e := c.started, c.exited
		started, exited = &s, &e
	}
	c.started, c.exited = time.Time{}, time.Time{}
	return started, exited
}
