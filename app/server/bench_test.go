package server_test

import (
	"io"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"
)

// latencies collects request times from parallel workers and reports their percentiles.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d time.Duration) { l.mu.Lock(); l.d = append(l.d, d); l.mu.Unlock() }

func (l *latencies) report(b *testing.B) {
	sort.Slice(l.d, func(i, j int) bool { return l.d[i] < l.d[j] })
	at := func(p float64) float64 { return float64(l.d[int(p*float64(len(l.d)-1))].Microseconds()) / 1000 }
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
}

// load sends b.N requests from 4 goroutines per core over loopback, each through do.
func load(b *testing.B, do func(*http.Client) (*http.Response, error)) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	var l latencies
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			start := time.Now()
			resp, err := do(client)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
			l.add(time.Since(start))
		}
	})
	b.StopTimer()
	l.report(b)
}

func BenchmarkHealthz(b *testing.B) {
	s := newSite(b)
	load(b, func(c *http.Client) (*http.Response, error) { return c.Get(s.url + "/healthz") })
}

// BenchmarkSignedInPage loads the tenants page as a signed-in tenant admin: session lookup,
// roles, a tenant query and the templ render.
func BenchmarkSignedInPage(b *testing.B) {
	s := newSite(b)
	br := newBrowser(b, s.url)
	br.signIn(b, "admin-a@example.com", "long enough password")
	cookies := br.Jar.Cookies(mustURL(s.url))
	load(b, func(c *http.Client) (*http.Response, error) {
		req, _ := http.NewRequest("GET", s.url+"/tenants", nil)
		for _, ck := range cookies {
			req.AddCookie(ck)
		}
		return c.Do(req)
	})
}

// BenchmarkAPITenants lists tenants with a bearer token: token lookup, roles, one query, JSON.
func BenchmarkAPITenants(b *testing.B) {
	s := newSite(b)
	token := s.token(b, s.admin)
	load(b, func(c *http.Client) (*http.Response, error) {
		req, _ := http.NewRequest("GET", s.url+"/api/v1/tenants", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		return c.Do(req)
	})
}

// BenchmarkCheckMachine measures what an author waits for: from asking for a check of the
// simcloud-machine draft to reading its result, with the real engine.
func BenchmarkCheckMachine(b *testing.B) {
	s := newSite(b)
	admin := s.token(b, s.admin)
	r := s.call(b, "POST", "/api/v1/components", admin, machineJSON(b, "bench-machine"))
	if r.status != http.StatusCreated {
		b.Fatalf("create: %d %s", r.status, r.body)
	}
	id := r.json(b)["id"].(string)
	var l latencies
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		checkID := s.call(b, "POST", "/api/v1/components/"+id+"/check", admin, nil).json(b)["id"].(string)
		for {
			got := s.call(b, "GET", "/api/v1/checks/"+checkID, admin, nil).json(b)
			if got["status"] == "succeeded" {
				break
			}
			if got["status"] == "failed" {
				b.Fatalf("check failed: %s", got["output"])
			}
			if time.Since(start) > 2*time.Minute {
				b.Fatal("check took over 2 minutes")
			}
			time.Sleep(20 * time.Millisecond)
		}
		l.add(time.Since(start))
	}
	b.StopTimer()
	l.report(b)
}
