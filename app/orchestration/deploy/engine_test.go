package deploy_test

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/domain/component"
	"nimbus/app/orchestration/environment"
)

// countingToolchain is the toolchain with its CLI behind a stand-in (testdata/countcli, built
// static as the engine's sandbox wants) that notes each run's arguments in the simulated
// cloud's directory before it becomes the real one: engine processes counted from outside
// Nimbus.
func countingToolchain(t *testing.T) string {
	t.Helper()
	real := os.Getenv("NIMBUS_PULUMI_DIR")
	if real == "" {
		t.Fatal("NIMBUS_PULUMI_DIR is needed: the real toolchain")
	}
	dir := t.TempDir()
	entries, err := os.ReadDir(real)
	apptest.Must(t, err)
	for _, e := range entries {
		name := e.Name()
		if name == "pulumi" {
			name = "pulumi-language-counted"
		}
		target, err := filepath.EvalSymlinks(filepath.Join(real, e.Name()))
		apptest.Must(t, err)
		apptest.Must(t, os.Symlink(target, filepath.Join(dir, name)))
	}
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "pulumi"), "./testdata/countcli")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the counting CLI: %v\n%s", err, out)
	}
	return dir
}

func TestAPI_EngineProcessesPerOperation(t *testing.T) {
	s := apptest.NewSiteWith(t, apptest.SiteConfig{Backend: "file", Toolchain: countingToolchain(t)})
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	user, admin := s.Token(t, s.UserA), s.Token(t, s.AdminA)
	seen := 0
	want := func(what string, runs ...string) {
		t.Helper()
		if got := s.EngineRuns(t, &seen); !slices.Equal(got, runs) {
			t.Fatalf("%s ran the engine as %q, want %q", what, got, runs)
		}
	}
	ok := func(what string, r apptest.Reply) map[string]any {
		t.Helper()
		apptest.WantStatus(t, r, http.StatusAccepted)
		body := r.JSON(t)
		id, _ := body["id"].(string)
		if op, nested := body["operation"].(map[string]any); nested {
			id = op["id"].(string)
		}
		op := s.WaitOperation(t, user, id)
		if op["status"] != "succeeded" {
			t.Fatalf("%s: %v", what, op)
		}
		return body
	}

	body := ok("deploy", s.Call(t, "POST", "/api/v1/deployments", user, map[string]any{
		"component_id": s.Shared.ID, "environment_id": env.ID, "name": "web", "parameters": map[string]any{"name": "web-1"}}))
	dep := body["deployment"].(map[string]any)["id"].(string)
	want("a deploy without approval", "up")

	preview := ok("preview", s.Call(t, "POST", "/api/v1/deployments/"+dep+"/preview", user, map[string]any{"parameters": map[string]any{"cores": 4}}))
	want("a preview", "preview")
	ok("apply", s.Call(t, "POST", "/api/v1/operations/"+preview["id"].(string)+"/apply", user, nil))
	want("applying a preview", "up --plan")
	if d := s.Call(t, "GET", "/api/v1/deployments/"+dep, user, nil).JSON(t); d["parameters"].(map[string]any)["cores"] != float64(4) {
		t.Fatalf("the applied preview did not land: %v", d)
	}

	ok("update", s.Call(t, "POST", "/api/v1/deployments/"+dep+"/update", user, map[string]any{"parameters": map[string]any{"cores": 2}}))
	want("an update", "up")
	ok("refresh", s.Call(t, "POST", "/api/v1/deployments/"+dep+"/refresh", user, nil))
	want("a refresh", "refresh")
	ok("destroy", s.Call(t, "POST", "/api/v1/deployments/"+dep+"/destroy", admin, nil))
	want("a destroy", "destroy")

	// Waiting for approval, the preview saves the plan that the approvers see and the up applies.
	g := &apptest.Gated{Site: s, Env: env.ID.String(), As: apptest.Tokens{User: user, Admin: admin, Root: s.Token(t, s.Admin)}}
	g.Policy(t, g.As.Root, map[string]any{"scope": "component", "scope_id": s.Shared.ID, "operations": []string{"deploy"},
		"approver_role": "tenant_admin"})
	r := s.Call(t, "POST", "/api/v1/deployments", user, map[string]any{
		"component_id": s.Shared.ID, "environment_id": env.ID, "name": "db", "parameters": map[string]any{"name": "db-1"}})
	apptest.WantStatus(t, r, http.StatusAccepted)
	op := r.JSON(t)["operation"].(map[string]any)["id"].(string)
	g.WaitStatus(t, admin, op, "awaiting_approval")
	want("a deploy waiting for approval", "preview")
	request := g.RequestOf(t, admin, op, "")
	g.Decide(t, admin, request["id"].(string), "approve", "fine", http.StatusOK)
	if got := s.WaitOperation(t, user, op); got["status"] != "succeeded" {
		t.Fatalf("approved deploy: %v", got)
	}
	want("an approved deploy", "up --plan")
}

// imaged is a component whose disk takes the simulated cloud's current image of a family, as a
// program would take a cloud's latest machine image.
const imaged = `name: imaged
runtime: yaml
config:
  name:
    type: string
variables:
  image:
    fn::invoke:
      function: simcloud:index:getImage
      arguments:
        family: debian-12
      return: id
resources:
  disk:
    type: simcloud:index:Disk
    properties:
      name: ${name}
      image: ${image}
outputs:
  image: ${disk.image}
`

func TestAPI_ApplyRefusesWhatThePreviewDidNotShow(t *testing.T) {
	s := apptest.NewSiteWith(t, apptest.SiteConfig{Backend: "file"})
	ctx := t.Context()
	c, err := s.Components.Create(ctx, s.Admin, component.New{Draft: component.Draft{Name: "imaged", Language: "yaml", Code: imaged,
		InputSchema:  []byte(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`),
		OutputSchema: []byte(`{"type":"object","properties":{"image":{"type":"string"}}}`)},
		Provider: "simcloud", SemanticType: "BlockStorage"})
	apptest.Must(t, err)
	_, err = s.Components.Publish(ctx, s.Admin, c.ID, c.Revision, "first")
	apptest.Must(t, err)
	env, err := environment.NewService(s.Pool).Create(ctx, s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	user := s.Token(t, s.UserA)

	r := s.Call(t, "POST", "/api/v1/deployments", user, map[string]any{"component_id": c.ID, "environment_id": env.ID,
		"name": "data", "parameters": map[string]any{"name": "data-1"}, "preview_only": true})
	apptest.WantStatus(t, r, http.StatusAccepted)
	preview := r.JSON(t)["operation"].(map[string]any)["id"].(string)
	if op := s.WaitOperation(t, user, preview); op["status"] != "succeeded" {
		t.Fatalf("preview: %v", op)
	}
	// The cloud moves on between the preview and its apply: the family has a new image.
	apptest.Must(t, os.MkdirAll(filepath.Join(s.Cloud, "images"), 0o755))
	apptest.Must(t, os.WriteFile(filepath.Join(s.Cloud, "images", "debian-12"), []byte("debian-12-v2"), 0o644))

	r = s.Call(t, "POST", "/api/v1/operations/"+preview+"/apply", user, nil)
	apptest.WantStatus(t, r, http.StatusAccepted)
	op := s.WaitOperation(t, user, r.JSON(t)["id"].(string))
	if op["status"] != "failed" || !strings.Contains(fmt.Sprint(op["error"]), "violates plan") {
		t.Fatalf("the apply of a preview that no longer holds: %v, want it refused for violating the plan", op)
	}
	if files := s.CloudFiles(t); len(files) != 0 {
		t.Fatalf("the refused apply left %v in the cloud", files)
	}
}
