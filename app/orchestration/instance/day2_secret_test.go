package instance_test

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"nimbus/app/apptest"
	"nimbus/app/domain/component"
	"nimbus/app/domain/stack"
	"nimbus/app/orchestration/environment"
)

// vaultProgram gives its secret input to a disk of the simulated cloud, where a test can see
// that the value arrived.
const vaultProgram = `name: vault-disk
runtime: yaml
config:
  name:
    type: string
  token:
    type: string
    secret: true
resources:
  disk:
    type: simcloud:index:Disk
    properties:
      name: ${name}
      image: ${token}
outputs:
  disk_id: ${disk.id}
`

// vaultStack is one slot of a component holding a secret, its token wired from a secret
// parameter, and a day-2 operation rotate that gives it a new one, its secret input fresh (a
// name the audit's own redaction would not hide).
func vaultStack(t *testing.T, s *apptest.Site) stack.Definition {
	t.Helper()
	ctx := context.Background()
	c, err := s.Components.Create(ctx, s.Admin, component.New{
		Draft: component.Draft{Name: "vault-disk", Language: "yaml", Code: vaultProgram,
			InputSchema: []byte(`{"type": "object", "required": ["name", "token"], "properties": {
				"name": {"type": "string"}, "token": {"type": "string", "x-secret": true}}}`),
			OutputSchema: []byte(`{"type": "object", "properties": {"disk_id": {"type": "string"}}}`)},
		Provider: "simcloud", SemanticType: "VirtualMachine",
	})
	apptest.Must(t, err)
	_, err = s.Components.Publish(ctx, s.Admin, c.ID, c.Revision, "first")
	apptest.Must(t, err)
	return stack.Definition{
		Parameters: json.RawMessage(`{"type":"object","required":["token"],"properties":{"token":{"type":"string","x-secret":true}}}`),
		Slots: []stack.Slot{{Name: "vault", Component: c.ID, Version: 1, Inputs: map[string]stack.Wiring{
			"name":  {Kind: stack.Literal, Value: "vault"},
			"token": {Kind: stack.Param, Param: "token"},
		}}},
		Machine: stack.Machine{States: []stack.State{{Name: "active", Initial: true}}},
		Operations: []stack.Operation{{Name: "rotate", RequiredStates: []string{"active"},
			InputSchema: json.RawMessage(`{"type":"object","required":["fresh"],"properties":{"fresh":{"type":"string","x-secret":true}}}`),
			Actions:     []stack.Action{{Slot: "vault", Do: stack.Update, Inputs: map[string]string{"token": "inputs.fresh"}}}}},
	}
}

// TestStack_SecretDay2InputReachesTheSlotAndIsKeptNowhere runs a day-2 operation with a
// secret input: the slot's secret input gets it (the simulated cloud holds it), and no table,
// log, API answer or page does.
func TestStack_SecretDay2InputReachesTheSlotAndIsKeptNowhere(t *testing.T) {
	s := apptest.NewSite(t)
	ctx := context.Background()
	const canary = "canary-day2-5e81b0c47d2a"
	stackID := apptest.PublishedStack(t, s, "vault", vaultStack(t, s))
	env, err := environment.NewService(s.Pool).Create(ctx, s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	user := s.Token(t, s.UserA)
	r := s.Call(t, "POST", "/api/v1/stack-instances", user, map[string]any{
		"stack_id": stackID, "environment_id": env.ID, "name": "vault", "parameters": map[string]any{"token": "first-token"}})
	apptest.WantStatus(t, r, http.StatusAccepted)
	id := r.JSON(t)["id"].(string)
	if inst := s.WaitInstance(t, user, id, apptest.Status("active", "failed")); inst["status"] != "active" {
		t.Fatalf("deploy: %v", inst)
	}

	// The day-2 form asks for the secret as a password.
	page := s.Call(t, "GET", "/stack-instances/"+id, user, nil)
	apptest.WantStatus(t, page, http.StatusOK)
	apptest.WantIn(t, page, `name="rotate.p.fresh" type="password"`)

	r = s.Call(t, "POST", "/api/v1/stack-instances/"+id+"/operations/rotate", user, map[string]any{"inputs": map[string]any{"fresh": canary}})
	apptest.WantStatus(t, r, http.StatusAccepted)
	runID := r.JSON(t)["id"].(string)
	if run := s.WaitRun(t, user, id, runID); run["status"] != "succeeded" {
		t.Fatalf("rotate: %v", run)
	}
	// The value did travel, so finding it nowhere else means something.
	disks, _ := filepath.Glob(filepath.Join(s.Cloud, "disk", "*.json"))
	if len(disks) != 1 || !strings.Contains(apptest.ReadFile(t, disks[0]), canary) {
		t.Fatalf("the slot's disk does not hold the rotated token: %v", disks)
	}
	var sealed []byte
	var plain string
	apptest.Must(t, s.Pool.QueryRow(ctx, `SELECT secret_inputs, inputs::text FROM stack_runs WHERE id = $1`, uuid.MustParse(runID)).Scan(&sealed, &plain))
	if len(sealed) == 0 || strings.Contains(plain, "fresh") {
		t.Fatalf("the run keeps its inputs as %s, and %d sealed bytes", plain, len(sealed))
	}

	tables, err := s.Pool.Query(ctx, `SELECT format('%I.%I', table_schema, table_name) FROM information_schema.tables
		WHERE table_schema NOT IN ('pg_catalog', 'information_schema') AND table_type = 'BASE TABLE'`)
	apptest.Must(t, err)
	var names []string
	for tables.Next() {
		var n string
		apptest.Must(t, tables.Scan(&n))
		names = append(names, n)
	}
	apptest.Must(t, tables.Err())
	for _, want := range []string{"public.stack_runs", "public.stack_state_history", "public.audit_events", "public.operation_logs"} {
		if !strings.Contains(strings.Join(names, " "), want) {
			t.Fatalf("no table %s to look through", want)
		}
	}
	for _, table := range names {
		var n int
		apptest.Must(t, s.Pool.QueryRow(ctx, `SELECT count(*) FROM `+table+` t WHERE t::text LIKE '%' || $1 || '%'`, canary).Scan(&n))
		if n > 0 {
			t.Errorf("%d rows of %s hold the secret", n, table)
		}
	}
	var audited string
	apptest.Must(t, s.Pool.QueryRow(ctx, `SELECT diff::text FROM audit_events WHERE action = 'stack_instance.run_operation' AND target_id = $1`, id).Scan(&audited))
	if !strings.Contains(audited, `"fresh": "[secret]"`) {
		t.Errorf("the audit does not say the input was set: %s", audited)
	}
	if strings.Contains(s.Logs.String(), canary) {
		t.Error("the server's log holds the secret")
	}
	for _, path := range []string{"/api/v1/stack-instances/" + id, "/api/v1/stack-instances/" + id + "/runs",
		"/api/v1/stack-instances/" + id + "/history", "/stack-instances/" + id} {
		if r := s.Call(t, "GET", path, user, nil); r.Status != http.StatusOK || strings.Contains(string(r.Body), canary) {
			t.Errorf("%s (%d) shows the secret", path, r.Status)
		}
	}
}
