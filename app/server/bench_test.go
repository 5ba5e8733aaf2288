package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"nimbus/app/environment"
	"nimbus/app/pulumix"
	"nimbus/app/sandbox"
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
		for pb.Next() && timed(b, client, do, &l) {
		}
	})
	b.StopTimer()
	l.report(b)
}

// timed sends one request through do, reads its answer whole and adds its latency to l; it
// reports false, having failed b, when the request failed or was refused.
func timed(b *testing.B, client *http.Client, do func(*http.Client) (*http.Response, error), l *latencies) bool {
	start := time.Now()
	resp, err := do(client)
	if err != nil {
		b.Error(err)
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Errorf("status %d", resp.StatusCode)
		return false
	}
	l.add(time.Since(start))
	return true
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
// request to deployed), with the engine confined and unconfined, against what a user would run
// instead: the bare pulumi CLI of the same toolchain, preview and then up of the same program.
// The three run in turn each round, so a busy moment costs them alike.
func BenchmarkDeployMachine(b *testing.B) {
	type pipeline struct {
		site *site
		env  uuid.UUID
		user string
		took latencies
	}
	var pipelines []*pipeline
	for _, mode := range []sandbox.Mode{sandbox.Required, sandbox.Off} {
		s := newSiteWith(b, siteConfig{backend: "file", sandbox: mode})
		env, err := environment.NewService(s.pool).Create(context.Background(), s.adminA, s.a.ID, "bench")
		if err != nil {
			b.Fatal(err)
		}
		pipelines = append(pipelines, &pipeline{site: s, env: env.ID, user: s.token(b, s.userA)})
	}
	cli := newBareCLI(b)
	var bare latencies
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, p := range pipelines {
			start := time.Now()
			r := p.site.call(b, "POST", "/api/v1/deployments", p.user, map[string]any{
				"component_id": p.site.shared.ID, "environment_id": p.env, "name": fmt.Sprintf("m%d", i), "parameters": map[string]any{"name": fmt.Sprintf("m%d", i)},
			})
			if r.status != http.StatusAccepted {
				b.Fatalf("deploy: %d %s", r.status, r.body)
			}
			opID := r.json(b)["operation"].(map[string]any)["id"].(string)
			for {
				op := p.site.call(b, "GET", "/api/v1/operations/"+opID, p.user, nil).json(b)
				if op["status"] == "succeeded" {
					break
				}
				if op["status"] == "failed" {
					b.Fatalf("deploy failed: %v", op["error"])
				}
				time.Sleep(20 * time.Millisecond)
			}
			p.took.add(time.Since(start))
		}
		bare.add(cli.deploy(b, fmt.Sprintf("b%d", i)))
	}
	b.StopTimer()
	confined, unconfined, q := pipelines[0].took.median(), pipelines[1].took.median(), bare.median()
	b.ReportMetric(q, "bare-cli-p50-ms")
	b.ReportMetric(confined, "sandboxed-p50-ms")
	b.ReportMetric(unconfined, "unsandboxed-p50-ms")
	b.ReportMetric(confined/q, "sandboxed/bare")
	b.ReportMetric(unconfined/q, "unsandboxed/bare")
}

// bareCLI runs the pinned pulumi CLI as a user would, on a file backend of its own.
type bareCLI struct {
	path, dir string
	env       []string
}

func newBareCLI(b *testing.B) *bareCLI {
	code, err := os.ReadFile("../component/testdata/machine.yaml")
	if err != nil {
		b.Fatal(err)
	}
	tc := pulumix.Detect(context.Background(), os.Getenv("NIMBUS_PULUMI_DIR"))
	if tc.CLI == "" {
		b.Fatal("the Pulumi toolchain is needed: go tool task toolchain")
	}
	dir, state, home := b.TempDir(), b.TempDir(), b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "Pulumi.yaml"), code, 0o600); err != nil {
		b.Fatal(err)
	}
	return &bareCLI{path: tc.CLI, dir: dir, env: append(os.Environ(), "PATH="+filepath.Dir(tc.CLI)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"PULUMI_BACKEND_URL=file://"+state, "PULUMI_HOME="+home, "PULUMI_CONFIG_PASSPHRASE=bench", "SIMCLOUD_DIR="+b.TempDir(),
		"PULUMI_SKIP_UPDATE_CHECK=true", "PULUMI_DIY_BACKEND_NO_LEGACY_WARNING=true")}
}

func (c *bareCLI) run(b *testing.B, args ...string) {
	cmd := exec.Command(c.path, append(args, "--non-interactive")...)
	cmd.Dir, cmd.Env = c.dir, c.env
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("pulumi %v: %v\n%s", args, err, out)
	}
}

// deploy makes a stack for a new machine (not timed, as a user's stack exists before they
// deploy) and times its preview and up.
func (c *bareCLI) deploy(b *testing.B, name string) time.Duration {
	b.StopTimer()
	c.run(b, "stack", "init", name)
	c.run(b, "config", "set", "name", name, "--stack", name)
	b.StartTimer()
	start := time.Now()
	c.run(b, "preview", "--stack", name)
	c.run(b, "up", "--yes", "--skip-preview", "--stack", name)
	return time.Since(start)
}
