package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"nimbus/app/environment"
	"nimbus/app/sandbox"
	"nimbus/e2e/barecli"
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

// BenchmarkDeployMachine compares deploys of simcloud-machine through the whole pipeline with
// what a user would run instead: the bare pulumi CLI of the same toolchain, `pulumi preview` and
// then `pulumi up --skip-preview` of the same program on the same kind of state backend, its
// stack made beforehand and not counted, as a user's stack exists. It runs on the file backend,
// then on S3, where the bare CLI keeps its stacks in the pipeline's bucket under a prefix of its
// own. The pipeline goes two ways: a deploy without approval, from its request to deployed; and
// a preview applied once it succeeded, from the preview's request to deployed, both operations
// counted. On the file backend a deploy with the engine unconfined says what the sandbox costs.
// Each round runs every path once, in an order that turns from round to round, so a busy moment
// costs them alike; the figures are medians over the rounds (run it with -benchtime 10x).
func BenchmarkDeployMachine(b *testing.B) {
	for _, backend := range backends {
		b.Run(backend, func(b *testing.B) { benchDeploys(b, backend) })
	}
}

// deployPath is one way to a deployed machine and the times it took.
type deployPath struct {
	name, unit string // how the report names it, and its median's unit
	run        func(b *testing.B, machine string) time.Duration
	took       latencies
}

func benchDeploys(b *testing.B, backend string) {
	confined := newDeployer(b, backend, sandbox.Required)
	code, err := os.ReadFile("../component/testdata/machine.yaml")
	if err != nil {
		b.Fatal(err)
	}
	var cli *barecli.CLI
	switch backend {
	case "file":
		cli = barecli.New(b, os.Getenv("NIMBUS_PULUMI_DIR"), string(code), "file://"+b.TempDir(), nil)
	case "s3":
		// A prefix in the bucket's URL keeps the bare stacks apart from the pipeline's.
		u, err := url.Parse(confined.site.bucket.BackendURL())
		if err != nil {
			b.Fatal(err)
		}
		u.Path = "/bare"
		cli = barecli.New(b, os.Getenv("NIMBUS_PULUMI_DIR"), string(code), u.String(), confined.site.bucket.BackendEnv())
	}
	paths := []*deployPath{
		{name: "bare CLI preview+up", unit: "bare-cli-ms", run: func(b *testing.B, name string) time.Duration { return cli.Deploy(b, name) }},
		{name: "deploy", unit: "deploy-ms", run: confined.deploy},
		{name: "preview, then apply", unit: "apply-preview-ms", run: confined.previewThenApply},
	}
	if backend == "file" {
		unconfined := newDeployer(b, backend, sandbox.Off)
		paths = append(paths, &deployPath{name: "deploy, engine unconfined", unit: "unsandboxed-deploy-ms", run: unconfined.deploy})
	}
	for round := 0; b.Loop(); round++ {
		for i := range paths {
			p := paths[(round+i)%len(paths)]
			p.took.add(p.run(b, fmt.Sprintf("m%d-%d", round, i)))
		}
	}
	bare := paths[0].took.median()
	b.ReportMetric(bare, paths[0].unit)
	for _, p := range paths[1:] {
		m := p.took.median()
		b.ReportMetric(m, p.unit)
		b.ReportMetric(m/bare, strings.TrimSuffix(p.unit, "-ms")+"/bare")
		b.Logf("%s backend, %s: bare CLI preview+up median %.0f ms, pipeline median %.0f ms, ratio %.2f (medians of %d)",
			backend, p.name, bare, m, m/bare, len(p.took.d))
	}
}

// deployer deploys machines through a server of its own, as a tenant's user with a token.
type deployer struct {
	site *site
	env  uuid.UUID
	user string
}

func newDeployer(b *testing.B, backend string, mode sandbox.Mode) *deployer {
	s := newSiteWith(b, siteConfig{backend: backend, sandbox: mode})
	env, err := environment.NewService(s.pool).Create(context.Background(), s.adminA, s.a.ID, "bench")
	if err != nil {
		b.Fatal(err)
	}
	return &deployer{site: s, env: env.ID, user: s.token(b, s.userA)}
}

// create asks for a new machine, deployed or only previewed, and returns the deployment's id
// and its first operation's.
func (d *deployer) create(b *testing.B, machine string, previewOnly bool) (deployment, op string) {
	r := d.site.call(b, "POST", "/api/v1/deployments", d.user, map[string]any{
		"component_id": d.site.shared.ID, "environment_id": d.env, "name": machine, "parameters": map[string]any{"name": machine},
		"preview_only": previewOnly,
	})
	if r.status != http.StatusAccepted {
		b.Fatalf("deploy %s: %d %s", machine, r.status, r.body)
	}
	body := r.json(b)
	return body["deployment"].(map[string]any)["id"].(string), body["operation"].(map[string]any)["id"].(string)
}

// deploy times a deploy without approval from its request until the machine is deployed.
func (d *deployer) deploy(b *testing.B, machine string) time.Duration {
	start := time.Now()
	dep, _ := d.create(b, machine, false)
	d.awaitDeployed(b, dep)
	return time.Since(start)
}

// previewThenApply times a preview of a new machine, applied as soon as it succeeded, from the
// preview's request until the machine is deployed.
func (d *deployer) previewThenApply(b *testing.B, machine string) time.Duration {
	start := time.Now()
	dep, preview := d.create(b, machine, true)
	d.awaitSucceeded(b, preview)
	if r := d.site.call(b, "POST", "/api/v1/operations/"+preview+"/apply", d.user, nil); r.status != http.StatusAccepted {
		b.Fatalf("apply the preview of %s: %d %s", machine, r.status, r.body)
	}
	d.awaitDeployed(b, dep)
	return time.Since(start)
}

// pollEvery is how often the benchmark asks whether an operation ended: what it adds to a
// pipeline's time is at most this.
const pollEvery = 20 * time.Millisecond

func (d *deployer) awaitSucceeded(b *testing.B, op string) {
	for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); time.Sleep(pollEvery) {
		got := d.site.call(b, "GET", "/api/v1/operations/"+op, d.user, nil).json(b)
		switch got["status"] {
		case "succeeded":
			return
		case "failed", "cancelled", "rejected":
			b.Fatalf("operation %s %s: %v", op, got["status"], got["error"])
		}
	}
	b.Fatalf("operation %s did not end in 3 minutes", op)
}

func (d *deployer) awaitDeployed(b *testing.B, dep string) {
	for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); time.Sleep(pollEvery) {
		got := d.site.call(b, "GET", "/api/v1/deployments/"+dep, d.user, nil).json(b)
		switch got["status"] {
		case "deployed":
			return
		case "failed":
			ops := d.site.call(b, "GET", "/api/v1/operations?deployment_id="+dep, d.user, nil).json(b)["operations"].([]any)
			b.Fatalf("deployment %s failed: %v", dep, ops[0].(map[string]any)["error"])
		}
	}
	b.Fatalf("deployment %s was not deployed in 3 minutes", dep)
}
