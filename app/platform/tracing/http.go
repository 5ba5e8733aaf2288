package tracing

import (
	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Middleware begins a span for each request, named for its route, and a child of the caller's
// span when the request carries a W3C traceparent. A handler that queues an operation names it
// on the span (Operation), and the job carries the span on (see jobs).
func Middleware(tp trace.TracerProvider) echo.MiddlewareFunc {
	tracer := tp.Tracer("nimbus/http")
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			ctx := propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
			ctx, span := tracer.Start(ctx, r.Method+" "+c.Path(), trace.WithSpanKind(trace.SpanKindServer),
				trace.WithAttributes(attribute.String("http.request.method", r.Method), attribute.String("http.route", c.Path())))
			defer span.End()
			c.SetRequest(r.WithContext(ctx))
			err := next(c)
			status := c.Response().Status
			if he, ok := err.(*echo.HTTPError); ok {
				status = he.Code
			}
			span.SetAttributes(attribute.Int("http.response.status_code", status))
			if status >= 500 {
				span.SetStatus(codes.Error, "")
			}
			return err
		}
	}
}
