package saga

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

type providerError struct{ msg string }

func (e *providerError) Error() string { return e.msg }

func TestKind_NamesTheErrorNeverItsMessage(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{errors.New("machine secret-name refused"), "error"},
		{fmt.Errorf("up: %w", &providerError{"machine secret-name refused"}), "saga.providerError"},
		{Transient(fmt.Errorf("up: %w", errors.Join(errors.New("a"), &providerError{"b"}))), "saga.providerError"},
		{fmt.Errorf("up: %w", context.Canceled), "cancelled"},
		{fmt.Errorf("up: %w", ErrTimedOut), "timed out"},
		{fmt.Errorf("up: %w", context.DeadlineExceeded), "deadline exceeded"},
	}
	for _, c := range cases {
		if got := Kind(c.err); got != c.want {
			t.Errorf("Kind(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

// A failed step's span says it failed and what kind of error it was; its message, which may
// name what a tenant typed, stays on the machine.
func TestExecute_FailedStepsSpanTellsTheKindNotTheMessage(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	ctx, job := tp.Tracer("test").Start(context.Background(), "job")
	w := &world{effects: map[string]bool{}}
	_ = Execute(ctx, newMemStore(), steps(w, map[string]error{"up": &providerError{"machine secret-name refused"}}), false)
	job.End()
	var found bool
	for _, sp := range spans.GetSpans() {
		if strings.Contains(sp.Status.Description, "secret-name") {
			t.Errorf("span %q's status tells the error's message: %q", sp.Name, sp.Status.Description)
		}
		if sp.Name == "step up" {
			found = true
			if sp.Status.Code != codes.Error || sp.Status.Description != "saga.providerError" {
				t.Errorf("the failed step's span has status %v %q, want Error saga.providerError", sp.Status.Code, sp.Status.Description)
			}
		}
	}
	if !found {
		t.Fatal("no span of the failed step")
	}
}
