// Package otlptest is an OTLP/HTTP trace collector in the test's own process: a server started
// with its URL as OTEL_EXPORTER_OTLP_ENDPOINT sends its spans here, for a test or a benchmark
// to read.
package otlptest

import (
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	collector "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	common "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// Span is one span as received.
type Span struct {
	Name                string
	TraceID, ID, Parent string // hex
	Start, End          time.Time
	Attributes          map[string]string
	Events              []Event
}

// Event is a moment a span noted.
type Event struct {
	Name string
	At   time.Time
}

// Collector receives spans at /v1/traces.
type Collector struct {
	URL string
	srv *httptest.Server
	mu  sync.Mutex
	got []Span
}

// Start starts a collector; Close stops it.
func Start() *Collector {
	c := &Collector{}
	c.srv = httptest.NewServer(http.HandlerFunc(c.receive))
	c.URL = c.srv.URL
	return c
}

// Close stops the collector.
func (c *Collector) Close() { c.srv.Close() }

// Spans are the spans received so far.
func (c *Collector) Spans() []Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Span(nil), c.got...)
}

func (c *Collector) receive(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/traces" {
		http.NotFound(w, r)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		z, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = z
	}
	raw, err := io.ReadAll(body)
	var req collector.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(raw, &req)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var spans []Span
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				sp := Span{Name: s.Name, TraceID: fmt.Sprintf("%x", s.TraceId), ID: fmt.Sprintf("%x", s.SpanId),
					Start: time.Unix(0, int64(s.StartTimeUnixNano)), End: time.Unix(0, int64(s.EndTimeUnixNano)), Attributes: map[string]string{}}
				if len(s.ParentSpanId) > 0 {
					sp.Parent = fmt.Sprintf("%x", s.ParentSpanId)
				}
				for _, a := range s.Attributes {
					sp.Attributes[a.Key] = text(a.Value)
				}
				for _, e := range s.Events {
					sp.Events = append(sp.Events, Event{Name: e.Name, At: time.Unix(0, int64(e.TimeUnixNano))})
				}
				spans = append(spans, sp)
			}
		}
	}
	c.mu.Lock()
	c.got = append(c.got, spans...)
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&collector.ExportTraceServiceResponse{})
	_, _ = w.Write(out)
}

// text is an attribute's value as text.
func text(v *common.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *common.AnyValue_StringValue:
		return x.StringValue
	case *common.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *common.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	case *common.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'f', -1, 64)
	}
	return v.String()
}

// Table is the spans of trace as a table, in the order they started: each name indented under
// its parent's, its start from the trace's first and its duration, in milliseconds; under it,
// the moments it noted (events), with their start.
func Table(spans []Span, trace string) string {
	var mine []Span
	for _, s := range spans {
		if s.TraceID == trace {
			mine = append(mine, s)
		}
	}
	if len(mine) == 0 {
		return ""
	}
	sort.SliceStable(mine, func(i, j int) bool { return mine[i].Start.Before(mine[j].Start) })
	depth := map[string]int{}
	var b strings.Builder
	fmt.Fprintf(&b, "%-44s %10s %10s\n", "span", "start ms", "ms")
	for _, s := range mine {
		d := 0
		if p, ok := depth[s.Parent]; ok {
			d = p + 1
		}
		depth[s.ID] = d
		fmt.Fprintf(&b, "%-44s %10.1f %10.1f\n", strings.Repeat("  ", d)+s.Name, ms(s.Start.Sub(mine[0].Start)), ms(s.End.Sub(s.Start)))
		for _, e := range s.Events {
			fmt.Fprintf(&b, "%-44s %10.1f\n", strings.Repeat("  ", d+1)+"- "+e.Name, ms(e.At.Sub(mine[0].Start)))
		}
	}
	return b.String()
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
