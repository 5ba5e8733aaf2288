package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"nimbus/jobs/saga"
)

// traceKey is the key of a job's metadata that holds the W3C traceparent of the span that
// queued it.
const traceKey = "traceparent"

// traced carries a trace from the code that queues a job to the worker that runs it: the
// queuer's span context goes into the job's metadata, and the worker's spans join its trace.
// Each job is a span, from when it fell due: its time in the queue, then its work.
type traced struct {
	river.MiddlewareDefaults
	tracer trace.Tracer
}

func (t traced) InsertMany(ctx context.Context, params []*rivertype.JobInsertParams, doInner func(context.Context) ([]*rivertype.JobInsertResult, error)) ([]*rivertype.JobInsertResult, error) {
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	if parent := carrier[traceKey]; parent != "" {
		for _, p := range params {
			meta := map[string]any{}
			if len(p.Metadata) > 0 {
				_ = json.Unmarshal(p.Metadata, &meta) // River's own: an object
			}
			meta[traceKey] = parent
			if b, err := json.Marshal(meta); err == nil {
				p.Metadata = b
			}
		}
	}
	return doInner(ctx)
}

func (t traced) Work(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) error {
	var meta struct {
		Parent string `json:"traceparent"`
	}
	_ = json.Unmarshal(job.Metadata, &meta)
	ctx = propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{traceKey: meta.Parent})
	attrs := []attribute.KeyValue{attribute.String("nimbus.job.kind", job.Kind), attribute.String("nimbus.job.queue", job.Queue),
		attribute.Int64("nimbus.job.id", job.ID), attribute.Int("nimbus.job.attempt", job.Attempt)}
	// From when it fell due, so that the span shows the wait for a fetch and a free worker.
	now := time.Now()
	start := job.ScheduledAt
	if start.After(now) {
		start = now
	}
	ctx, span := t.tracer.Start(ctx, "job "+job.Kind, trace.WithTimestamp(start), trace.WithAttributes(append(attrs,
		attribute.Float64("nimbus.job.queued_ms", float64(now.Sub(start).Microseconds())/1000))...))
	span.AddEvent("picked up", trace.WithTimestamp(now))
	defer span.End()
	err := doInner(ctx)
	var snoozed *rivertype.JobSnoozeError
	switch {
	case errors.As(err, &snoozed):
		span.AddEvent("snoozed", trace.WithAttributes(attribute.String("nimbus.job.snooze", snoozed.Duration.String())))
	case err != nil:
		span.SetStatus(codes.Error, saga.Kind(err)) // its message may carry what a tenant typed
	}
	return err
}
