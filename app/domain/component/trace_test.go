package component_test

import (
	"slices"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"nimbus/app/apptest"
	"nimbus/app/platform/tracing"
)

// A component's check is one trace: the request that asked for it, the job that ran it and its
// engine's run and process, each naming the check.
func TestTrace_CheckIsOneTraceOfItsJobAndEngine(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	s := apptest.NewSiteWith(t, apptest.SiteConfig{Backend: "file", Tracer: tracing.New(sdktrace.WithSyncer(spans))})
	token := s.Token(t, s.AdminA)
	id := s.RequestCheck(t, token, s.OfA.ID)
	if got := s.WaitCheck(t, token, id); got["status"] != "succeeded" {
		t.Fatalf("the check: %v", got)
	}

	// The job's span ends once the worker has recorded the check's end, after the API shows it.
	var mine tracetest.SpanStubs
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		mine = nil
		for _, sp := range spans.GetSpans() {
			if checkOf(sp) == id {
				mine = append(mine, sp)
			}
		}
		if slices.ContainsFunc(mine, func(sp tracetest.SpanStub) bool { return sp.Name == "job component_check" }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no span of the check's job in a minute; the check's spans: %v", spanNames(mine))
		}
	}
	for _, want := range []string{"POST /api/v1/components/:id/check", "job component_check", "engine preview", "pulumi preview"} {
		if !slices.ContainsFunc(mine, func(sp tracetest.SpanStub) bool { return sp.Name == want }) {
			t.Errorf("no span %q names the check; those that do: %v", want, spanNames(mine))
		}
	}
	for _, sp := range mine {
		if sp.SpanContext.TraceID() != mine[0].SpanContext.TraceID() {
			t.Errorf("span %q is in trace %s, not the check's %s", sp.Name, sp.SpanContext.TraceID(), mine[0].SpanContext.TraceID())
		}
	}
}

func checkOf(sp tracetest.SpanStub) string {
	for _, a := range sp.Attributes {
		if a.Key == tracing.CheckID {
			return a.Value.Emit()
		}
	}
	return ""
}

func spanNames(spans tracetest.SpanStubs) []string {
	var out []string
	for _, sp := range spans {
		out = append(out, sp.Name)
	}
	return out
}
