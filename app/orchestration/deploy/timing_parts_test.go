package deploy

import (
	"slices"
	"testing"
	"time"

	"nimbus/db/dbgen"
)

// An operation that failed in its up and undid its resolve shows each undo as a part of its
// own after the failure, and a step's do keeps its own time: no part swallows the ones after it.
func TestTiming_UndoIsAPartOfItsOwn(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	at := func(ms int) *time.Time { v := t0.Add(time.Duration(ms) * time.Millisecond); return &v }
	op := Operation{CreatedAt: t0, StartedAt: at(10), FinishedAt: at(100)}
	steps := []dbgen.OperationStep{
		{Name: "resolve", Status: "undone", StartedAt: at(12), FinishedAt: at(20), UndoStartedAt: at(80), UndoFinishedAt: at(90)},
		{Name: "up", Status: "failed", StartedAt: at(20), FinishedAt: at(70), EngineStartedAt: at(25), EngineFinishedAt: at(65)},
		{Name: "record", Status: "pending"},
	}
	got := timingOf(op, steps, nil, nil, *at(500))
	var parts []string
	var sum float64
	for _, p := range got.Parts {
		parts = append(parts, p.Kind+" "+p.Name)
		sum += p.DurationMS
	}
	want := []string{"queue queue", "nimbus nimbus", "step resolve", "step up", "nimbus nimbus", "undo undo resolve", "nimbus nimbus"}
	if !slices.Equal(parts, want) {
		t.Fatalf("parts %q, want %q", parts, want)
	}
	if got.DurationMS != 100 || sum != 100 {
		t.Errorf("the operation took %v ms, its parts add up to %v ms; want 100", got.DurationMS, sum)
	}
	if up := got.Parts[3]; up.DurationMS != 50 || up.Engine == nil || up.Engine.DurationMS != 40 {
		t.Errorf("the up step: %+v", up)
	}
}
