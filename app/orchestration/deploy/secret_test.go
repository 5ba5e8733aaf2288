package deploy_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/domain/component"
	"nimbus/app/orchestration/environment"
)

// TestSecret_CanaryIsNowhere deploys a component with a secret input and then looks for the
// value everywhere Nimbus writes: every row of every table, the server's and the workers' log,
// the stack's state and work files, and the command line and environment of every process
// while the engine runs. Only the simulated cloud, which is the resource, may hold it.
func TestSecret_CanaryIsNowhere(t *testing.T) {
	apptest.OnBackends(t, func(t *testing.T, s *apptest.Site) {
		ctx := context.Background()
		const canary = "canary-7f3a9c1e55d04b2f"
		c, err := s.Components.Create(ctx, s.Admin, component.New{
			Draft: component.Draft{Name: "secret-disk", Language: "yaml", Code: apptest.SecretProgram,
				InputSchema: []byte(`{"type": "object", "required": ["name", "token"], "properties": {
				"name": {"type": "string"}, "token": {"type": "string", "x-secret": true}}}`),
				OutputSchema: []byte(`{"type": "object", "properties": {"disk_id": {"type": "string"}, "token": {"type": "string"}}}`)},
			Provider: "simcloud", SemanticType: "VirtualMachine",
		})
		apptest.Must(t, err)
		_, err = s.Components.Publish(ctx, s.Admin, c.ID, c.Revision, "first")
		apptest.Must(t, err)
		env, err := environment.NewService(s.Pool).Create(ctx, s.AdminA, s.A.ID, "dev")
		apptest.Must(t, err)
		user := s.Token(t, s.UserA)

		// Watch every process's command line and environment while the operation runs.
		stop := apptest.WatchProcesses(canary)
		r := s.Call(t, "POST", "/api/v1/deployments", user, map[string]any{
			"component_id": c.ID, "environment_id": env.ID, "name": "vault", "parameters": map[string]any{"name": "vault", "token": canary},
		})
		apptest.WantStatus(t, r, http.StatusAccepted)
		body := r.JSON(t)
		depID := body["deployment"].(map[string]any)["id"].(string)
		op := s.WaitOperation(t, user, body["operation"].(map[string]any)["id"].(string))
		seen, polls := stop()
		if op["status"] != "succeeded" {
			t.Fatalf("deploy: %v", op)
		}
		if polls < 10 {
			t.Fatalf("only %d looks at the processes while the engine ran", polls)
		}
		if len(seen) > 0 {
			t.Errorf("the secret is in the command line or environment of: %v", seen)
		}

		// The cloud got it: the value did travel, so finding it nowhere else means something.
		disks, _ := filepath.Glob(filepath.Join(s.Cloud, "disk", "*.json"))
		if len(disks) != 1 || !strings.Contains(apptest.ReadFile(t, disks[0]), canary) {
			t.Fatal("the simulated cloud's disk does not hold the secret: the test proves nothing")
		}

		dep := s.Call(t, "GET", "/api/v1/deployments/"+depID, user, nil)
		if strings.Contains(string(dep.Body), canary) {
			t.Errorf("the API shows the secret: %s", dep.Body)
		}
		var d map[string]any
		_ = json.Unmarshal(dep.Body, &d)
		if out := d["outputs"].(map[string]any)["token"]; out != "[secret]" {
			t.Errorf("the secret output shows as %v, want [secret]", out)
		}

		if where := s.TablesHolding(t, canary); len(where) > 0 {
			t.Errorf("tables holding the secret: %v", where)
		}

		if strings.Contains(s.Logs.String(), canary) {
			t.Error("the server's log holds the secret")
		}
		if !strings.Contains(s.Logs.String(), "operation finished") {
			t.Fatal("the log captured nothing of the operation: the test proves nothing")
		}

		var files int
		err = filepath.WalkDir(s.Data, func(path string, e os.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			files++
			if strings.Contains(apptest.ReadFile(t, path), canary) {
				t.Errorf("%s holds the secret", strings.TrimPrefix(path, s.Data))
			}
			return nil
		})
		apptest.Must(t, err)
		if files == 0 {
			t.Fatal("no state or work files to look through")
		}
		if s.Bucket != nil {
			keys, err := s.Bucket.List(ctx, "")
			apptest.Must(t, err)
			if len(keys) == 0 {
				t.Fatal("the bucket holds nothing: the state is elsewhere")
			}
			for _, k := range keys {
				r, err := s.Bucket.Get(ctx, k)
				apptest.Must(t, err)
				data, err := io.ReadAll(r)
				r.Close()
				apptest.Must(t, err)
				if strings.Contains(string(data), canary) {
					t.Errorf("%s in the bucket holds the secret", k)
				}
			}
		}
	})
}
