package tracing_test

import (
	"os"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"nimbus/app/platform/tracing"
	"nimbus/app/platform/tracing/otlptest"
)

// With an OTLP endpoint in the environment, spans go there over OTLP/HTTP, batched, named for the
// service as OTEL_SERVICE_NAME says; what is still batched is sent when the provider shuts down.
// The attributes a context was given go on every span beneath it.
func TestFromEnv_ExportsOverOTLPAndFlushesOnShutdown(t *testing.T) {
	c := otlptest.Start()
	t.Cleanup(c.Close)
	// The exporter reads the process's environment itself.
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", c.URL)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "3600000") // only the shutdown sends them
	p, err := tracing.FromEnv(t.Context(), os.Getenv, "test")
	if err != nil {
		t.Fatal(err)
	}
	ctx, request := p.Tracer("test").Start(t.Context(), "request")
	ctx = tracing.Operation(ctx, stringer("op-1"), "deploy")
	_, step := trace.SpanFromContext(ctx).TracerProvider().Tracer("test").Start(ctx, "step")
	step.End()
	request.End()
	if got := c.Spans(); len(got) != 0 {
		t.Fatalf("spans sent before the batch was due: %v", got)
	}
	if err := p.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	got := c.Spans()
	if len(got) != 2 {
		t.Fatalf("the collector got %d spans, want the request and its step: %v", len(got), got)
	}
	for _, s := range got {
		if s.Attributes["nimbus.operation.id"] != "op-1" || s.Attributes["nimbus.operation.kind"] != "deploy" {
			t.Errorf("span %s does not name the operation: %v", s.Name, s.Attributes)
		}
		if s.TraceID != got[0].TraceID {
			t.Errorf("span %s is in another trace", s.Name)
		}
	}
}

// Without an endpoint nothing is recorded.
func TestFromEnv_WithoutAnEndpointRecordsNothing(t *testing.T) {
	for name, env := range map[string]map[string]string{
		"nothing set":  {},
		"SDK disabled": {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_SDK_DISABLED": "true"},
	} {
		t.Run(name, func(t *testing.T) {
			p, err := tracing.FromEnv(t.Context(), func(k string) string { return env[k] }, "test")
			if err != nil {
				t.Fatal(err)
			}
			_, span := p.Tracer("test").Start(t.Context(), "request")
			if span.IsRecording() {
				t.Error("a span records without an endpoint")
			}
		})
	}
}

type stringer string

func (s stringer) String() string { return string(s) }
