package provision_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"nimbus/app/apptest"
	"nimbus/app/domain/component/builtin"
	"nimbus/e2e/barecli"
)

// BenchmarkTenantFactory provisions tenants with the built-in tenant factory on a real API
// server and measures, from the request that creates a tenant to its factory instance being
// active, against what a provider admin would run instead with the bare CLI: the factory's six
// programs one after another, one `pulumi up` each, the namespace first, with the admin
// kubeconfig in KUBECONFIG (the secret's password, made up for the bench, a secret setting). Each round runs both once, in an order that turns, so a busy moment
// costs them alike; the figures are medians over the rounds (run it with -benchtime 3x or more).
func BenchmarkTenantFactory(b *testing.B) {
	plane := apptest.KubePlane(b)
	s := apptest.NewSite(b)
	root := s.Token(b, s.Admin)
	zone, _ := s.FactoryZone(b, root, plane.Kubeconfig())
	kubeconfig := filepath.Join(b.TempDir(), "kubeconfig")
	apptest.Must(b, os.WriteFile(kubeconfig, plane.Kubeconfig(), 0o600))
	programs := map[string]*barecli.CLI{}
	for _, p := range []string{"k8s-namespace", "k8s-quota", "k8s-network-policy", "k8s-tenant-access", "k8s-secret", "k8s-ingress"} {
		code, err := builtin.FS.ReadFile(p + ".yaml")
		apptest.Must(b, err)
		programs[p] = barecli.New(b, os.Getenv("NIMBUS_PULUMI_DIR"), string(code), "file://"+b.TempDir(), map[string]string{"KUBECONFIG": kubeconfig})
	}
	bare := func(ns string) time.Duration {
		took := programs["k8s-namespace"].DeployWith(b, ns, map[string]string{"name": ns, "pod_security": "restricted"})
		took += programs["k8s-quota"].DeployWith(b, ns, map[string]string{"namespace": ns, "tier": "small", "cpu": "2", "memory": "4Gi", "pods": "20"})
		took += programs["k8s-network-policy"].DeployWith(b, ns, map[string]string{"namespace": ns})
		took += programs["k8s-tenant-access"].DeployWith(b, ns, map[string]string{"namespace": ns})
		took += programs["k8s-secret"].DeploySecretly(b, ns, map[string]string{"namespace": ns}, map[string]string{"password": "bench-" + ns + "-password-of-32-chars"})
		return took + programs["k8s-ingress"].DeployWith(b, ns, map[string]string{"namespace": ns, "host": ns + ".apps.example.com", "service": "web"})
	}
	nimbus := func(ns string) time.Duration {
		start := time.Now()
		r := s.Call(b, "POST", "/api/v1/tenants", root, map[string]any{"name": ns, "provision": map[string]any{"landing_zone_id": zone, "tier": "small"}})
		if r.Status != http.StatusCreated {
			b.Fatalf("create tenant %s: %d %s", ns, r.Status, r.Body)
		}
		spaces := s.NamespacesOf(b, root, r.JSON(b)["id"].(string))
		s.WaitInstance(b, root, spaces[0]["stack_instance_id"].(string), apptest.Status("active", "failed"))
		took := time.Since(start)
		if inst := s.Call(b, "GET", "/api/v1/stack-instances/"+spaces[0]["stack_instance_id"].(string), root, nil).JSON(b); inst["status"] != "active" {
			b.Fatalf("provisioning %s: %v", ns, inst)
		}
		return took
	}
	var viaNimbus, viaCLI apptest.Latencies
	for round := 0; b.Loop(); round++ {
		runs := []func(){
			func() { viaCLI.Add(bare(fmt.Sprintf("bare%d", round))) },
			func() { viaNimbus.Add(nimbus(fmt.Sprintf("tenant%d", round))) },
		}
		if round%2 == 1 {
			runs[0], runs[1] = runs[1], runs[0]
		}
		for _, run := range runs {
			run()
		}
	}
	cli, through := viaCLI.Median(), viaNimbus.Median()
	b.ReportMetric(cli, "bare-cli-ms")
	b.ReportMetric(through, "factory-ms")
	b.ReportMetric(through/cli, "factory/bare")
	b.Logf("tenant factory: bare CLI, six programs, one up each in sequence, median %.0f ms; through Nimbus, tenant created to factory active, median %.0f ms; ratio %.2f (medians of %d)",
		cli, through, through/cli, len(viaCLI.D))
}
