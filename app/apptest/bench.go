package apptest

import (
	"sort"
	"sync"
	"testing"
	"time"
)

// Latencies collects request times from parallel workers and reports their percentiles.
type Latencies struct {
	mu sync.Mutex
	D  []time.Duration
}

// Add records one request's time.
func (l *Latencies) Add(d time.Duration) { l.mu.Lock(); l.D = append(l.D, d); l.mu.Unlock() }

// Median is the middle latency in milliseconds.
func (l *Latencies) Median() float64 {
	sort.Slice(l.D, func(i, j int) bool { return l.D[i] < l.D[j] })
	return float64(l.D[len(l.D)/2].Microseconds()) / 1000
}

// Report reports the median and the 99th percentile of the times recorded, in milliseconds.
func (l *Latencies) Report(b *testing.B) { l.ReportAs(b, "") }

// ReportAs reports as Report does, under units that say what was timed: p50-<what>-ms and
// p99-<what>-ms, for a benchmark that times more than one thing.
func (l *Latencies) ReportAs(b *testing.B, what string) {
	if what != "" {
		what = "-" + what
	}
	sort.Slice(l.D, func(i, j int) bool { return l.D[i] < l.D[j] })
	at := func(p float64) float64 { return float64(l.D[int(p*float64(len(l.D)-1))].Microseconds()) / 1000 }
	b.ReportMetric(at(0.50), "p50"+what+"-ms")
	b.ReportMetric(at(0.99), "p99"+what+"-ms")
}
