package server_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"nimbus/app/component/builtin"
	"nimbus/e2e/barecli"
)

// BenchmarkTenantFactory provisions tenants with the built-in tenant factory on a real API
// server and measures, from the request that creates a tenant to its factory instance being
// active, against what a provider admin would run instead with the bare CLI: the factory's six
// programs one after another, preview and up each, the namespace first, with the admin
// kubeconfig in KUBECONFIG (the secret's password, made up for the bench, a secret setting). Each round runs both once, in an order that turns, so a busy moment
// costs them alike; the figures are medians over the rounds (run it with -benchtime 3x or more).
func BenchmarkTenantFactory(b *testing.B) {
	plane := kubePlane(b)
	s := newSite(b)
	root := s.token(b, s.admin)
	zone, _ := s.factoryZone(b, root, plane.Kubeconfig())
	kubeconfig := filepath.Join(b.TempDir(), "kubeconfig")
	must(b, os.WriteFile(kubeconfig, plane.Kubeconfig(), 0o600))
	programs := map[string]*barecli.CLI{}
	for _, p := range []string{"k8s-namespace", "k8s-quota", "k8s-network-policy", "k8s-tenant-access", "k8s-secret", "k8s-ingress"} {
		code, err := builtin.FS.ReadFile(p + ".yaml")
		must(b, err)
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
		r := s.call(b, "POST", "/api/v1/tenants", root, map[string]any{"name": ns, "provision": map[string]any{"landing_zone_id": zone, "tier": "small"}})
		if r.status != http.StatusCreated {
			b.Fatalf("create tenant %s: %d %s", ns, r.status, r.body)
		}
		spaces := s.namespacesOf(b, root, r.json(b)["id"].(string))
		s.waitInstance(b, root, spaces[0]["stack_instance_id"].(string), status("active", "failed"))
		took := time.Since(start)
		if inst := s.call(b, "GET", "/api/v1/stack-instances/"+spaces[0]["stack_instance_id"].(string), root, nil).json(b); inst["status"] != "active" {
			b.Fatalf("provisioning %s: %v", ns, inst)
		}
		return took
	}
	var viaNimbus, viaCLI latencies
	for round := 0; b.Loop(); round++ {
		runs := []func(){
			func() { viaCLI.add(bare(fmt.Sprintf("bare%d", round))) },
			func() { viaNimbus.add(nimbus(fmt.Sprintf("tenant%d", round))) },
		}
		if round%2 == 1 {
			runs[0], runs[1] = runs[1], runs[0]
		}
		for _, run := range runs {
			run()
		}
	}
	cli, through := viaCLI.median(), viaNimbus.median()
	b.ReportMetric(cli, "bare-cli-ms")
	b.ReportMetric(through, "factory-ms")
	b.ReportMetric(through/cli, "factory/bare")
	b.Logf("tenant factory: bare CLI, six programs preview+up in sequence, median %.0f ms; through Nimbus, tenant created to factory active, median %.0f ms; ratio %.2f (medians of %d)",
		cli, through, through/cli, len(viaCLI.d))
}
