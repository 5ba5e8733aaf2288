package deploy_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/orchestration/environment"
)

// A tenant's program that doubles a string into outputs of megabytes is deployed and fails
// saying how large its outputs are and what a deployment may hold; the deployment keeps none of
// them. One that doubles it into 64 MiB fails its check saying the engine's event was too large
// to read, without Nimbus holding it.
func TestAPI_HugeOutputsAreRefusedWithAClearMessage(t *testing.T) {
	s := apptest.NewSite(t)
	ctx := t.Context()
	admin, user := s.Token(t, s.AdminA), s.Token(t, s.UserA)
	doubling := func(n int) string {
		var b strings.Builder
		b.WriteString("name: big\nruntime: yaml\nconfig:\n  name:\n    type: string\nvariables:\n  v0: " + strings.Repeat("x", 2048) + "\n")
		for i := 1; i <= n; i++ {
			fmt.Fprintf(&b, "  v%d:\n    fn::join: [\"\", [\"${v%d}\", \"${v%d}\"]]\n", i, i-1, i-1)
		}
		fmt.Fprintf(&b, "outputs:\n  big: ${v%d}\n", n)
		return b.String()
	}
	create := func(name, code string) string {
		r := s.Call(t, "POST", "/api/v1/components", admin, map[string]any{
			"name": name, "provider": "simcloud", "semantic_type": "VirtualMachine", "language": "yaml", "tenant_id": s.A.ID, "code": code,
			"input_schema":  json.RawMessage(`{"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}`),
			"output_schema": json.RawMessage(`{"type": "object", "properties": {"big": {"type": "string"}}}`)})
		apptest.WantStatus(t, r, http.StatusCreated)
		return r.JSON(t)["id"].(string)
	}

	huge := create("huge", doubling(15))
	chk := s.Check(t, admin, huge)
	if out, _ := chk["output"].(string); chk["status"] != "failed" || !strings.Contains(out, "Nimbus reads none over 4.0 MiB") {
		t.Fatalf("the check of 64 MiB outputs: %v %.2000s", chk["status"], out)
	}

	big := create("big", doubling(10))
	if chk := s.Check(t, admin, big); chk["status"] != "succeeded" {
		t.Fatalf("the check of 2 MiB outputs: %v", chk)
	}
	apptest.WantStatus(t, s.Publish(t, s.Token(t, s.Admin), big, "first"), http.StatusCreated)
	env, err := environment.NewService(s.Pool).Create(ctx, s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	r := s.Call(t, "POST", "/api/v1/deployments", user, map[string]any{
		"component_id": big, "environment_id": env.ID, "name": "big", "parameters": map[string]any{"name": "big"}})
	apptest.WantStatus(t, r, http.StatusAccepted)
	body := r.JSON(t)
	op := s.WaitOperation(t, user, body["operation"].(map[string]any)["id"].(string))
	if op["status"] != "failed" || !strings.Contains(fmt.Sprint(op["error"]), "the stack's outputs are 2.0 MiB, and a deployment's may be at most 1.0 MiB") {
		t.Fatalf("deploy of 2 MiB outputs: %v %v", op["status"], op["error"])
	}
	dep := s.Call(t, "GET", "/api/v1/deployments/"+body["deployment"].(map[string]any)["id"].(string), user, nil)
	if len(dep.Body) > 64<<10 {
		t.Fatalf("the deployment holds %d bytes", len(dep.Body))
	}
}

// What a tenant sees of the engine names no directory of the server: a program's
// ${pulumi.cwd} is ".", in its outputs and in the operation's log.
func TestAPI_EngineOutputNamesNoServerPath(t *testing.T) {
	s := apptest.NewSite(t)
	admin, user := s.Token(t, s.AdminA), s.Token(t, s.UserA)
	r := s.Call(t, "POST", "/api/v1/components", admin, map[string]any{
		"name": "paths", "provider": "simcloud", "semantic_type": "VirtualMachine", "language": "yaml", "tenant_id": s.A.ID,
		"code":          "name: paths\nruntime: yaml\nconfig:\n  name:\n    type: string\nresources:\n  net:\n    type: simcloud:index:Network\n    properties:\n      name: ${name}\n      cidr: 10.0.0.0/24\noutputs:\n  cwd: ${pulumi.cwd}\n",
		"input_schema":  json.RawMessage(`{"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}`),
		"output_schema": json.RawMessage(`{"type": "object", "properties": {"cwd": {"type": "string"}}}`)})
	apptest.WantStatus(t, r, http.StatusCreated)
	id := r.JSON(t)["id"].(string)
	chk := s.Check(t, admin, id)
	if chk["status"] != "succeeded" {
		t.Fatalf("check: %v", chk)
	}
	apptest.WantStatus(t, s.Publish(t, s.Token(t, s.Admin), id, "first"), http.StatusCreated)
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	r = s.Call(t, "POST", "/api/v1/deployments", user, map[string]any{
		"component_id": id, "environment_id": env.ID, "name": "paths", "parameters": map[string]any{"name": "paths"}})
	apptest.WantStatus(t, r, http.StatusAccepted)
	body := r.JSON(t)
	op := s.WaitOperation(t, user, body["operation"].(map[string]any)["id"].(string))
	if op["status"] != "succeeded" {
		t.Fatalf("deploy: %v", op)
	}
	dep := s.Call(t, "GET", "/api/v1/deployments/"+body["deployment"].(map[string]any)["id"].(string), user, nil).JSON(t)
	if outs, _ := dep["outputs"].(map[string]any); outs["cwd"] != "." {
		t.Fatalf("outputs %v", dep["outputs"])
	}
	logs := string(s.Call(t, "GET", "/api/v1/operations/"+op["id"].(string)+"/logs", user, nil).Body)
	for _, said := range []string{logs, fmt.Sprint(chk["output"]), fmt.Sprint(dep)} {
		if strings.Contains(said, s.Data) || strings.Contains(said, s.Cloud) {
			t.Errorf("a server path shows:\n%s", said)
		}
	}
}
