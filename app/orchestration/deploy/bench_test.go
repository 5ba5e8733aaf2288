package deploy_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"nimbus/app/apptest"
	"nimbus/app/kernel/sandbox"
	"nimbus/app/orchestration/environment"
	"nimbus/e2e/barecli"
)

// BenchmarkDeployMachine compares deploys of simcloud-machine through the whole pipeline with
// the bare pulumi CLI of the same toolchain at its best, on the same kind of state backend, its
// stack made beforehand and not counted, as a user's stack exists: a deploy without approval,
// from its request to deployed, against one `pulumi up --yes`; a preview's apply, from the
// apply's request to deployed, against `pulumi up --skip-preview --plan` of a saved plan. It
// runs on the file backend, then on S3, where the bare CLI keeps its stacks in the pipeline's
// bucket under a prefix of its own. On the file backend a deploy with the engine unconfined
// says what the sandbox costs. Each round runs every path once, in an order that turns from
// round to round, so a busy moment costs them alike; the figures are medians over the rounds
// (run it with -benchtime 10x).
func BenchmarkDeployMachine(b *testing.B) {
	for _, backend := range apptest.Backends {
		b.Run(backend, func(b *testing.B) { benchDeploys(b, backend) })
	}
}

// deployPath is one way to a deployed machine and the times it took.
type deployPath struct {
	name, unit string // how the report names it, and its median's unit
	run        func(b *testing.B, machine string) time.Duration
	bare       *deployPath // what the bare CLI does to the same end, for the pipeline's paths
	took       apptest.Latencies
}

func benchDeploys(b *testing.B, backend string) {
	confined := newDeployer(b, backend, sandbox.Required)
	code, err := os.ReadFile("../../domain/component/testdata/machine.yaml")
	if err != nil {
		b.Fatal(err)
	}
	var cli *barecli.CLI
	switch backend {
	case "file":
		cli = barecli.New(b, os.Getenv("NIMBUS_PULUMI_DIR"), string(code), "file://"+b.TempDir(), nil)
	case "s3":
		// A prefix in the bucket's URL keeps the bare stacks apart from the pipeline's.
		u, err := url.Parse(confined.site.Bucket.BackendURL())
		if err != nil {
			b.Fatal(err)
		}
		u.Path = "/bare"
		cli = barecli.New(b, os.Getenv("NIMBUS_PULUMI_DIR"), string(code), u.String(), confined.site.Bucket.BackendEnv())
	}
	up := &deployPath{name: "bare pulumi up", unit: "bare-up-ms", run: func(b *testing.B, name string) time.Duration { return cli.Deploy(b, name) }}
	plan := &deployPath{name: "bare pulumi up --plan", unit: "bare-plan-ms", run: func(b *testing.B, name string) time.Duration { return cli.ApplyPlan(b, name) }}
	paths := []*deployPath{
		up, plan,
		{name: "deploy", unit: "deploy-ms", run: confined.deploy, bare: up},
		{name: "apply a preview", unit: "apply-ms", run: confined.applyPreview, bare: plan},
	}
	if backend == "file" {
		unconfined := newDeployer(b, backend, sandbox.Off)
		paths = append(paths, &deployPath{name: "deploy, engine unconfined", unit: "unsandboxed-deploy-ms", run: unconfined.deploy, bare: up})
	}
	for round := 0; b.Loop(); round++ {
		for i := range paths {
			p := paths[(round+i)%len(paths)]
			p.took.Add(p.run(b, fmt.Sprintf("m%d-%d", round, i)))
		}
	}
	for _, p := range paths {
		m := p.took.Median()
		b.ReportMetric(m, p.unit)
		if p.bare == nil {
			continue
		}
		bare := p.bare.took.Median()
		b.ReportMetric(m/bare, strings.TrimSuffix(p.unit, "-ms")+"/bare")
		b.Logf("%s backend, %s: %s median %.0f ms, pipeline median %.0f ms, ratio %.2f (medians of %d)",
			backend, p.name, p.bare.name, bare, m, m/bare, len(p.took.D))
	}
}

// deployer deploys machines through a server of its own, as a tenant's user with a token.
type deployer struct {
	site *apptest.Site
	env  uuid.UUID
	user string
}

func newDeployer(b *testing.B, backend string, mode sandbox.Mode) *deployer {
	s := apptest.NewSiteWith(b, apptest.SiteConfig{Backend: backend, Sandbox: mode})
	env, err := environment.NewService(s.Pool).Create(context.Background(), s.AdminA, s.A.ID, "bench")
	if err != nil {
		b.Fatal(err)
	}
	return &deployer{site: s, env: env.ID, user: s.Token(b, s.UserA)}
}

// create asks for a new machine, deployed or only previewed, and returns the deployment's id
// and its first operation's.
func (d *deployer) create(b *testing.B, machine string, previewOnly bool) (deployment, op string) {
	r := d.site.Call(b, "POST", "/api/v1/deployments", d.user, map[string]any{
		"component_id": d.site.Shared.ID, "environment_id": d.env, "name": machine, "parameters": map[string]any{"name": machine},
		"preview_only": previewOnly,
	})
	if r.Status != http.StatusAccepted {
		b.Fatalf("deploy %s: %d %s", machine, r.Status, r.Body)
	}
	body := r.JSON(b)
	return body["deployment"].(map[string]any)["id"].(string), body["operation"].(map[string]any)["id"].(string)
}

// deploy times a deploy without approval from its request until the machine is deployed.
func (d *deployer) deploy(b *testing.B, machine string) time.Duration {
	start := time.Now()
	dep, _ := d.create(b, machine, false)
	d.awaitDeployed(b, dep)
	return time.Since(start)
}

// applyPreview previews a new machine and, once the preview succeeded, times its apply: from
// the apply's request until the machine is deployed.
func (d *deployer) applyPreview(b *testing.B, machine string) time.Duration {
	dep, preview := d.create(b, machine, true)
	d.awaitSucceeded(b, preview)
	start := time.Now()
	if r := d.site.Call(b, "POST", "/api/v1/operations/"+preview+"/apply", d.user, nil); r.Status != http.StatusAccepted {
		b.Fatalf("apply the preview of %s: %d %s", machine, r.Status, r.Body)
	}
	d.awaitDeployed(b, dep)
	return time.Since(start)
}

// pollEvery is how often the benchmark asks whether an operation ended: what it adds to a
// pipeline's time is at most this.
const pollEvery = 20 * time.Millisecond

func (d *deployer) awaitSucceeded(b *testing.B, op string) {
	for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); time.Sleep(pollEvery) {
		got := d.site.Call(b, "GET", "/api/v1/operations/"+op, d.user, nil).JSON(b)
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
		got := d.site.Call(b, "GET", "/api/v1/deployments/"+dep, d.user, nil).JSON(b)
		switch got["status"] {
		case "deployed":
			return
		case "failed":
			ops := d.site.Call(b, "GET", "/api/v1/operations?deployment_id="+dep, d.user, nil).JSON(b)["operations"].([]any)
			b.Fatalf("deployment %s failed: %v", dep, ops[0].(map[string]any)["error"])
		}
	}
	b.Fatalf("deployment %s was not deployed in 3 minutes", dep)
}
