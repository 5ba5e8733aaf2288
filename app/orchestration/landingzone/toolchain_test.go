package landingzone_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"nimbus/app/apptest"
)

// withoutKubernetes is the real toolchain but for the Kubernetes provider, as on a new
// installation whose provider is still being built in the background, with the build's log.
func withoutKubernetes(t *testing.T) string {
	t.Helper()
	real := os.Getenv("NIMBUS_PULUMI_DIR")
	if real == "" {
		t.Fatal("NIMBUS_PULUMI_DIR is needed: the real toolchain")
	}
	dir := t.TempDir()
	entries, err := os.ReadDir(real)
	apptest.Must(t, err)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "pulumi-resource-kubernetes") {
			continue
		}
		target, err := filepath.EvalSymlinks(filepath.Join(real, e.Name()))
		apptest.Must(t, err)
		apptest.Must(t, os.Symlink(target, filepath.Join(dir, e.Name())))
	}
	apptest.Must(t, os.WriteFile(filepath.Join(dir, "pulumi-resource-kubernetes.build.log"),
		[]byte("kubernetes-provider: resolving the module\nkubernetes-provider: building pulumi-resource-kubernetes (takes several minutes the first time)\n"), 0o644))
	return dir
}

func TestZones_AKubernetesZoneWaitsForItsProvidersBuild(t *testing.T) {
	s := apptest.NewSiteWith(t, apptest.SiteConfig{Backend: "file", Toolchain: withoutKubernetes(t)})
	root := s.Token(t, s.Admin)

	r := s.Call(t, "POST", "/api/v1/landing-zones", root, map[string]any{"name": "kube-eu", "provider": "kubernetes"})
	apptest.WantStatus(t, r, http.StatusCreated)
	r = s.Call(t, "POST", "/api/v1/landing-zones/"+r.JSON(t)["id"].(string)+"/publish", root, nil)
	if r.Status != http.StatusUnprocessableEntity || !strings.Contains(string(r.Body), "the Kubernetes provider is not built yet") {
		t.Fatalf("publishing a Kubernetes zone before its provider is built: %d %s", r.Status, r.Body)
	}

	b := apptest.NewBrowser(t, s.URL)
	apptest.WantStatus(t, b.SignIn(t, s.Admin.Email, "correct horse battery"), http.StatusSeeOther)
	page := string(b.Get(t, "/admin/system").Body)
	if !strings.Contains(page, "being built") || !strings.Contains(page, "takes several minutes the first time") {
		t.Fatalf("the system page does not tell how the Kubernetes provider's build goes:\n%s", page)
	}
}
