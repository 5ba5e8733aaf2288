// Package tracing sets up OpenTelemetry traces: the provider every span of Nimbus comes from,
// exported over OTLP when the operator names a collector with the standard OTEL_* variables, and
// the request's span that an operation's trace begins with.
//
// Below the HTTP edge and the job client, code starts its spans from the provider of the span
// its context carries (trace.SpanFromContext(ctx).TracerProvider()): no package holds a
// provider of its own, and without tracing every span is a no-op.
package tracing

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// The attributes that say which operation, component check, stack run or event a span
// belongs to.
const (
	OperationID   = attribute.Key("nimbus.operation.id")
	OperationKind = attribute.Key("nimbus.operation.kind")
	CheckID       = attribute.Key("nimbus.check.id")
	RunID         = attribute.Key("nimbus.run.id")
	InstanceID    = attribute.Key("nimbus.instance.id")
	EventID       = attribute.Key("nimbus.event.id")
)

// Provider is where spans come from, and what Shutdown flushes.
type Provider struct {
	trace.TracerProvider
	shutdown func(context.Context) error
}

// Shutdown sends the spans not yet exported and stops exporting; the server calls it as it stops.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p.shutdown == nil {
		return nil
	}
	return p.shutdown(ctx)
}

// Enabled reports whether the environment asks for traces: an OTLP endpoint is set, and the
// SDK is not disabled.
func Enabled(getenv func(string) string) bool {
	if getenv("OTEL_SDK_DISABLED") == "true" || getenv("OTEL_TRACES_EXPORTER") == "none" {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// FromEnv returns the provider the environment asks for: with an OTLP endpoint (see Enabled),
// spans are batched and sent over OTLP/HTTP as the standard OTEL_* variables say (endpoint,
// headers, OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER, OTEL_BSP_*);
// without one, a provider whose spans record nothing and cost next to nothing.
func FromEnv(ctx context.Context, getenv func(string) string, version string) (*Provider, error) {
	if !Enabled(getenv) {
		return &Provider{TracerProvider: noop.NewTracerProvider()}, nil
	}
	exporter, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	// The defaults first: the environment's service name and attributes override them.
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "nimbus"), attribute.String("service.version", version)),
		resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	return New(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res)), nil
}

// New returns a recording provider with opts (an exporter, a sampler), whose spans carry the
// attributes their context was given (With). Tests give it an in-memory exporter.
func New(opts ...sdktrace.TracerProviderOption) *Provider {
	tp := sdktrace.NewTracerProvider(append([]sdktrace.TracerProviderOption{sdktrace.WithSpanProcessor(inherited{})}, opts...)...)
	return &Provider{TracerProvider: tp, shutdown: tp.Shutdown}
}

type attrsKey struct{}

// With returns ctx whose spans, and every span started beneath them, carry attrs: an operation's
// id reaches the spans of the saga and the engine, which know nothing of operations.
func With(ctx context.Context, attrs ...attribute.KeyValue) context.Context {
	have, _ := ctx.Value(attrsKey{}).([]attribute.KeyValue)
	return context.WithValue(ctx, attrsKey{}, append(append([]attribute.KeyValue(nil), have...), attrs...))
}

// Operation returns ctx with an operation's id and kind on every span started from it, and puts
// them on ctx's own span too (the job's, the request's), begun before they were known.
func Operation(ctx context.Context, id fmt.Stringer, kind string) context.Context {
	return Tag(ctx, OperationID.String(id.String()), OperationKind.String(kind))
}

// Tag returns ctx with attrs on every span started from it, and puts them on ctx's own span
// too: a job's span learns the check, run or event it works on once it has read it.
func Tag(ctx context.Context, attrs ...attribute.KeyValue) context.Context {
	trace.SpanFromContext(ctx).SetAttributes(attrs...)
	return With(ctx, attrs...)
}

// inherited gives each span the attributes its parent context was given (With).
type inherited struct{}

func (inherited) OnStart(parent context.Context, s sdktrace.ReadWriteSpan) {
	if attrs, ok := parent.Value(attrsKey{}).([]attribute.KeyValue); ok {
		s.SetAttributes(attrs...)
	}
}
func (inherited) OnEnd(sdktrace.ReadOnlySpan)      {}
func (inherited) Shutdown(context.Context) error   { return nil }
func (inherited) ForceFlush(context.Context) error { return nil }
