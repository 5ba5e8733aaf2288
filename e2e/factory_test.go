package e2e

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"nimbus/app/domain/component"
	"nimbus/e2e/kubeplane"
)

// startKube starts a Kubernetes control plane of the tool cache for one test.
func startKube(t *testing.T) *kubeplane.Plane {
	t.Helper()
	bin := os.Getenv(kubeplane.BinEnv)
	if bin == "" {
		t.Fatalf("%s is not set: go tool task test builds etcd and kube-apiserver and sets it", kubeplane.BinEnv)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p, err := kubeplane.Start(ctx, bin, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}

// hasNamespace asks the control plane, as its admin, whether it has the namespace.
func hasNamespace(t *testing.T, p *kubeplane.Plane, name string) bool {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, p.URL+"/api/v1/namespaces/"+name, nil)
	req.Header.Set("Authorization", "Bearer "+p.Token)
	resp, err := p.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// A provider admin pastes a cluster, makes the built-in tenant factory, publishes it and makes
// it the zone's, then creates a tenant provisioned on the cluster and decommissions it.
func TestBrowser_AProviderAdminProvisionsATenantOnTheZonesCluster(t *testing.T) {
	t.Parallel()
	plane := startKube(t)
	a := startApp(t)
	if _, err := component.EnsureBuiltins(context.Background(), component.NewService(a.pool, nil, nil)); err != nil {
		t.Fatal(err)
	}
	root := a.token(t, adminEmail)
	var zone struct {
		ID string `json:"id"`
	}
	apiPost(t, a.url+"/api/v1/landing-zones", root, map[string]any{"name": "k8s", "provider": "kubernetes"}, &zone)
	apiSend(t, http.MethodPut, a.url+"/api/v1/landing-zones/"+zone.ID+"/resolvers/secret_provisioner", root, map[string]any{"length": 32}, &map[string]any{})

	admin := newSession(t, newBrowser(t), a)
	admin.signIn(adminEmail, adminPassword)
	admin.open("/landing-zones/" + zone.ID + "/cluster")
	admin.choose(`#f-kubeconfig`, string(plane.Kubeconfig()))
	if status := admin.submit(`[data-testid="cluster-form"]`); status != 200 || !strings.HasPrefix(admin.text(`[data-testid="cluster-version"]`), "v1.37") {
		t.Fatalf("saving the cluster: status %d on %s", status, admin.path())
	}
	apiPost(t, a.url+"/api/v1/landing-zones/"+zone.ID+"/publish", root, nil, &map[string]any{})

	// The zone's tenant factory: the built-in stack, made as a draft, published, chosen.
	admin.follow(`[data-testid="tenant-factory-link"]`)
	if got := admin.text(`[data-testid="no-factory"]`); !strings.Contains(got, "no tenant factory") {
		t.Fatalf("a zone without a factory says %q", got)
	}
	admin.submitButton(`[data-testid="create-factory"]`)
	stack := admin.path()
	if !strings.HasPrefix(stack, "/stacks/") {
		t.Fatalf("making the factory led to %s", stack)
	}
	admin.fill(`#f-changelog`, "The tenant factory.")
	if status := admin.submit(`[data-testid="publish-form"]`); status != 200 {
		t.Fatalf("publishing the factory: status %d", status)
	}
	admin.open("/landing-zones/" + zone.ID + "/tenant-factory")
	admin.choose(`[data-testid="factory-form"] #f-stack_id`, strings.TrimPrefix(stack, "/stacks/"))
	admin.submit(`[data-testid="factory-form"]`)
	if got := admin.text(`[data-testid="factory-stack"]`); got != "tenant-factory" {
		t.Fatalf("the zone's factory is %q", got)
	}

	// A new tenant, provisioned as it is created.
	admin.open("/tenants")
	admin.fill(`[data-testid="tenant-form"] #f-name`, "Acme")
	admin.choose(`[data-testid="tenant-form"] [name="provision.landing_zone_id"]`, zone.ID)
	admin.choose(`[data-testid="tenant-form"] [name="provision.tier"]`, "small")
	if status := admin.submit(`[data-testid="tenant-form"]`); status != 200 || admin.text("h1") != "Acme" {
		t.Fatalf("creating Acme: status %d on %s", status, admin.path())
	}
	acme := admin.path()
	admin.reloadUntil(acme, `document.querySelector('[data-testid="namespace-acme"] [data-status="active"]') !== null`, 5*time.Minute)
	if !hasNamespace(t, plane, "acme") {
		t.Fatal("the cluster has no namespace acme")
	}
	admin.screenshot("tenant-provisioned")

	// Decommissioned from its page.
	admin.eval(`window.confirm = () => true`)
	admin.submit(`[data-testid="namespace-acme"] form`)
	admin.reloadUntil(acme, `document.querySelector('[data-testid="namespace-acme"] [data-status="destroyed"]') !== null`, 5*time.Minute)
	if hasNamespace(t, plane, "acme") {
		t.Fatal("namespace acme is still on the cluster")
	}

	// Provisioned again from its page, under a name of the admin's.
	admin.choose(`[data-testid="provision-form"] #f-landing_zone_id`, zone.ID)
	admin.choose(`[data-testid="provision-form"] #f-tier`, "medium")
	admin.fill(`[data-testid="provision-form"] #f-namespace`, "acme-web")
	if status := admin.submit(`[data-testid="provision-form"]`); status != 200 {
		t.Fatalf("provisioning acme-web: status %d on %s", status, admin.path())
	}
	admin.reloadUntil(acme, `document.querySelector('[data-testid="namespace-acme-web"] [data-status="active"]') !== null`, 5*time.Minute)
	if !hasNamespace(t, plane, "acme-web") {
		t.Fatal("the cluster has no namespace acme-web")
	}

	// Deleting the tenant decommissions its namespace, then removes it.
	admin.eval(`window.confirm = () => true`)
	// The page it leads to says so, unless the namespace was gone already and the tenant with it.
	if status := admin.submit(`[data-testid="delete-tenant-form"]`); status != http.StatusNotFound {
		if got := admin.text(`[data-testid="tenant-removing"]`); !strings.Contains(got, "namespaces are being decommissioned") {
			t.Fatalf("after asking to delete Acme its page says %q", got)
		}
	}
	// Removed once its namespace is decommissioned: its page is then not found.
	admin.reloadUntil(acme, `document.querySelector('.error-code')?.textContent.trim() === '404'`, 5*time.Minute)
	if hasNamespace(t, plane, "acme-web") {
		t.Fatal("namespace acme-web is still on the cluster")
	}
}
