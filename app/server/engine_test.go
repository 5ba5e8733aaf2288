package server_test

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"nimbus/app/component"
	"nimbus/app/environment"
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
	must(t, err)
	for _, e := range entries {
		name := e.Name()
		if name == "pulumi" {
			name = "pulumi-language-counted"
		}
		target, err := filepath.EvalSymlinks(filepath.Join(real, e.Name()))
		must(t, err)
		must(t, os.Symlink(target, filepath.Join(dir, name)))
	}
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "pulumi"), "./testdata/countcli")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the counting CLI: %v\n%s", err, out)
	}
	return dir
}

// engineRuns returns the engine processes started since the last call: each one's command
// (up, preview…) and whether it applied a plan.
func (s *site) engineRuns(t *testing.T, seen *int) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(s.cloud, "engine-runs"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(data) == 0 {
		lines = nil
	}
	var runs []string
	for _, l := range lines[*seen:] {
		args := strings.Fields(l)
		for len(args) > 0 && strings.HasPrefix(args[0], "--") {
			args = args[1:]
		}
		run := args[0]
		if slices.Contains(args, "--plan") {
			run += " --plan"
		}
		runs = append(runs, run)
	}
	*seen = len(lines)
	return runs
}

func TestAPI_EngineProcessesPerOperation(t *testing.T) {
	s := newSiteWith(t, siteConfig{backend: "file", toolchain: countingToolchain(t)})
	env, err := environment.NewService(s.pool).Create(t.Context(), s.adminA, s.a.ID, "dev")
	must(t, err)
	user, admin := s.token(t, s.userA), s.token(t, s.adminA)
	seen := 0
	want := func(what string, runs ...string) {
		t.Helper()
		if got := s.engineRuns(t, &seen); !slices.Equal(got, runs) {
			t.Fatalf("%s ran the engine as %q, want %q", what, got, runs)
		}
	}
	ok := func(what string, r reply) map[string]any {
		t.Helper()
		wantStatus(t, r, http.StatusAccepted)
		body := r.json(t)
		id, _ := body["id"].(string)
		if op, nested := body["operation"].(map[string]any); nested {
			id = op["id"].(string)
		}
		op := s.waitOperation(t, user, id)
		if op["status"] != "succeeded" {
			t.Fatalf("%s: %v", what, op)
		}
		return body
	}

	body := ok("deploy", s.call(t, "POST", "/api/v1/deployments", user, map[string]any{
		"component_id": s.shared.ID, "environment_id": env.ID, "name": "web", "parameters": map[string]any{"name": "web-1"}}))
	dep := body["deployment"].(map[string]any)["id"].(string)
	want("a deploy without approval", "up")

	preview := ok("preview", s.call(t, "POST", "/api/v1/deployments/"+dep+"/preview", user, map[string]any{"parameters": map[string]any{"cores": 4}}))
	want("a preview", "preview")
	ok("apply", s.call(t, "POST", "/api/v1/operations/"+preview["id"].(string)+"/apply", user, nil))
	want("applying a preview", "up --plan")
	if d := s.call(t, "GET", "/api/v1/deployments/"+dep, user, nil).json(t); d["parameters"].(map[string]any)["cores"] != float64(4) {
		t.Fatalf("the applied preview did not land: %v", d)
	}

	ok("update", s.call(t, "POST", "/api/v1/deployments/"+dep+"/update", user, map[string]any{"parameters": map[string]any{"cores": 2}}))
	want("an update", "up")
	ok("refresh", s.call(t, "POST", "/api/v1/deployments/"+dep+"/refresh", user, nil))
	want("a refresh", "refresh")
	ok("destroy", s.call(t, "POST", "/api/v1/deployments/"+dep+"/destroy", admin, nil))
	want("a destroy", "destroy")

	// Waiting for approval, the preview saves the plan that the approvers see and the up applies.
	g := &gated{site: s, env: env.ID.String(), as: tokens{user: user, admin: admin, root: s.token(t, s.admin)}}
	g.policy(t, g.as.root, map[string]any{"scope": "component", "scope_id": s.shared.ID, "operations": []string{"deploy"},
		"approver_role": "tenant_admin"})
	r := s.call(t, "POST", "/api/v1/deployments", user, map[string]any{
		"component_id": s.shared.ID, "environment_id": env.ID, "name": "db", "parameters": map[string]any{"name": "db-1"}})
	wantStatus(t, r, http.StatusAccepted)
	op := r.json(t)["operation"].(map[string]any)["id"].(string)
	g.waitStatus(t, admin, op, "awaiting_approval")
	want("a deploy waiting for approval", "preview")
	request := g.requestOf(t, admin, op, "")
	g.decide(t, admin, request["id"].(string), "approve", "fine", http.StatusOK)
	if got := s.waitOperation(t, user, op); got["status"] != "succeeded" {
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
	s := newSiteWith(t, siteConfig{backend: "file"})
	ctx := t.Context()
	c, err := s.components.Create(ctx, s.admin, component.New{Draft: component.Draft{Name: "imaged", Language: "yaml", Code: imaged,
		InputSchema:  []byte(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`),
		OutputSchema: []byte(`{"type":"object","properties":{"image":{"type":"string"}}}`)},
		Provider: "simcloud", SemanticType: "BlockStorage"})
	must(t, err)
	_, err = s.components.Publish(ctx, s.admin, c.ID, c.Revision, "first")
	must(t, err)
	env, err := environment.NewService(s.pool).Create(ctx, s.adminA, s.a.ID, "dev")
	must(t, err)
	user := s.token(t, s.userA)

	r := s.call(t, "POST", "/api/v1/deployments", user, map[string]any{"component_id": c.ID, "environment_id": env.ID,
		"name": "data", "parameters": map[string]any{"name": "data-1"}, "preview_only": true})
	wantStatus(t, r, http.StatusAccepted)
	preview := r.json(t)["operation"].(map[string]any)["id"].(string)
	if op := s.waitOperation(t, user, preview); op["status"] != "succeeded" {
		t.Fatalf("preview: %v", op)
	}
	// The cloud moves on between the preview and its apply: the family has a new image.
	must(t, os.MkdirAll(filepath.Join(s.cloud, "images"), 0o755))
	must(t, os.WriteFile(filepath.Join(s.cloud, "images", "debian-12"), []byte("debian-12-v2"), 0o644))

	r = s.call(t, "POST", "/api/v1/operations/"+preview+"/apply", user, nil)
	wantStatus(t, r, http.StatusAccepted)
	op := s.waitOperation(t, user, r.json(t)["id"].(string))
	if op["status"] != "failed" || !strings.Contains(fmt.Sprint(op["error"]), "violates plan") {
		t.Fatalf("the apply of a preview that no longer holds: %v, want it refused for violating the plan", op)
	}
	if files := s.cloudFiles(t); len(files) != 0 {
		t.Fatalf("the refused apply left %v in the cloud", files)
	}
}
