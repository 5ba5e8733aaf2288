package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"nimbus/app/environment"
	"nimbus/app/pulumix"
)

// latencies collects request times from parallel workers and reports their percentiles.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d time.Duration) { l.mu.Lock(); l.d = append(l.d, d); l.mu.Unlock() }

// median is the middle latency in milliseconds.
func (l *latencies) median() float64 {
	sort.Slice(l.d, func(i, j int) bool { return l.d[i] < l.d[j] })
	return float64(l.d[len(l.d)/2].Microseconds()) / 1000
}

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

// BenchmarkDeployMachine compares a deploy of simcloud-machine through the whole pipeline (API
// request to deployed) with a bare preview and up of the same program by the same runner.
func BenchmarkDeployMachine(b *testing.B) {
	s := newSite(b)
	env, err := environment.NewService(s.pool).Create(context.Background(), s.adminA, s.a.ID, "bench")
	if err != nil {
		b.Fatal(err)
	}
	user := s.token(b, s.userA)
	code, err := os.ReadFile("../component/testdata/machine.yaml")
	if err != nil {
		b.Fatal(err)
	}
	cloud := b.TempDir()
	runner, err := pulumix.NewRunner(os.Getenv("NIMBUS_PULUMI_DIR"), b.TempDir(), map[string]string{"SIMCLOUD_DIR": cloud}, pulumix.CloudDirs(cloud))
	if err != nil {
		b.Fatal(err)
	}
	var pipeline, bare latencies
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		r := s.call(b, "POST", "/api/v1/deployments", user, map[string]any{
			"component_id": s.shared.ID, "environment_id": env.ID, "name": fmt.Sprintf("m%d", i), "parameters": map[string]any{"name": fmt.Sprintf("m%d", i)},
		})
		if r.status != http.StatusAccepted {
			b.Fatalf("deploy: %d %s", r.status, r.body)
		}
		opID := r.json(b)["operation"].(map[string]any)["id"].(string)
		for {
			op := s.call(b, "GET", "/api/v1/operations/"+opID, user, nil).json(b)
			if op["status"] == "succeeded" {
				break
			}
			if op["status"] == "failed" {
				b.Fatalf("deploy failed: %v", op["error"])
			}
			time.Sleep(20 * time.Millisecond)
		}
		pipeline.add(time.Since(start))

		start = time.Now()
		st := pulumix.Stack{Name: fmt.Sprintf("bare-%d", i), Code: string(code), Config: map[string]any{"name": fmt.Sprintf("b%d", i)}, Passphrase: "bench"}
		if _, err := runner.Preview(context.Background(), st, io.Discard); err != nil {
			b.Fatal(err)
		}
		if _, err := runner.Up(context.Background(), st, io.Discard); err != nil {
			b.Fatal(err)
		}
		bare.add(time.Since(start))
	}
	b.StopTimer()
	p, q := pipeline.median(), bare.median()
	b.ReportMetric(p, "pipeline-p50-ms")
	b.ReportMetric(q, "bare-p50-ms")
	b.ReportMetric(p/q, "ratio")
}
