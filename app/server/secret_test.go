package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"nimbus/app/component"
	"nimbus/app/environment"
)

// secretProgram hands a secret input to a resource; the machine dawdles so that the engine's
// processes can be watched while they run.
const secretProgram = `name: secret-disk
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
  machine:
    type: simcloud:index:Machine
    properties:
      name: ${name}
      diskId: ${disk.id}
      delayMs: 1500
outputs:
  disk_id: ${disk.id}
  token: ${token}
`

// TestSecret_CanaryIsNowhere deploys a component with a secret input and then looks for the
// value everywhere Nimbus writes: every row of every table, the server's and the workers' log,
// the stack's state and work files, and the command line and environment of every process
// while the engine runs. Only the simulated cloud, which is the resource, may hold it.
func TestSecret_CanaryIsNowhere(t *testing.T) {
	onBackends(t, func(t *testing.T, s *site) {
		ctx := context.Background()
		const canary = "canary-7f3a9c1e55d04b2f"
		c, err := s.components.Create(ctx, s.admin, component.New{
			Draft: component.Draft{Name: "secret-disk", Language: "yaml", Code: secretProgram,
				InputSchema: []byte(`{"type": "object", "required": ["name", "token"], "properties": {
				"name": {"type": "string"}, "token": {"type": "string", "x-secret": true}}}`),
				OutputSchema: []byte(`{"type": "object", "properties": {"disk_id": {"type": "string"}, "token": {"type": "string"}}}`)},
			Provider: "simcloud", SemanticType: "VirtualMachine",
		})
		must(t, err)
		_, err = s.components.Publish(ctx, s.admin, c.ID, c.Revision, "first")
		must(t, err)
		env, err := environment.NewService(s.pool).Create(ctx, s.adminA, s.a.ID, "dev")
		must(t, err)
		user := s.token(t, s.userA)

		// Watch every process's command line and environment while the operation runs.
		stop := watchProcesses(canary)
		r := s.call(t, "POST", "/api/v1/deployments", user, map[string]any{
			"component_id": c.ID, "environment_id": env.ID, "name": "vault", "parameters": map[string]any{"name": "vault", "token": canary},
		})
		wantStatus(t, r, http.StatusAccepted)
		body := r.json(t)
		depID := body["deployment"].(map[string]any)["id"].(string)
		op := s.waitOperation(t, user, body["operation"].(map[string]any)["id"].(string))
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
		disks, _ := filepath.Glob(filepath.Join(s.cloud, "disk", "*.json"))
		if len(disks) != 1 || !strings.Contains(readFile(t, disks[0]), canary) {
			t.Fatal("the simulated cloud's disk does not hold the secret: the test proves nothing")
		}

		dep := s.call(t, "GET", "/api/v1/deployments/"+depID, user, nil)
		if strings.Contains(string(dep.body), canary) {
			t.Errorf("the API shows the secret: %s", dep.body)
		}
		var d map[string]any
		_ = json.Unmarshal(dep.body, &d)
		if out := d["outputs"].(map[string]any)["token"]; out != "[secret]" {
			t.Errorf("the secret output shows as %v, want [secret]", out)
		}

		if where := s.tablesHolding(t, canary); len(where) > 0 {
			t.Errorf("tables holding the secret: %v", where)
		}

		if strings.Contains(s.logs.String(), canary) {
			t.Error("the server's log holds the secret")
		}
		if !strings.Contains(s.logs.String(), "operation finished") {
			t.Fatal("the log captured nothing of the operation: the test proves nothing")
		}

		var files int
		err = filepath.WalkDir(s.data, func(path string, e os.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			files++
			if strings.Contains(readFile(t, path), canary) {
				t.Errorf("%s holds the secret", strings.TrimPrefix(path, s.data))
			}
			return nil
		})
		must(t, err)
		if files == 0 {
			t.Fatal("no state or work files to look through")
		}
		if s.bucket != nil {
			keys, err := s.bucket.List(ctx, "")
			must(t, err)
			if len(keys) == 0 {
				t.Fatal("the bucket holds nothing: the state is elsewhere")
			}
			for _, k := range keys {
				r, err := s.bucket.Get(ctx, k)
				must(t, err)
				data, err := io.ReadAll(r)
				r.Close()
				must(t, err)
				if strings.Contains(string(data), canary) {
					t.Errorf("%s in the bucket holds the secret", k)
				}
			}
		}
	})
}

// tablesHolding lists the tables with a row whose text holds value.
func (s *site) tablesHolding(t *testing.T, value string) []string {
	t.Helper()
	ctx := context.Background()
	tables, err := s.pool.Query(ctx, `SELECT format('%I.%I', table_schema, table_name) FROM information_schema.tables
		WHERE table_schema NOT IN ('pg_catalog', 'information_schema') AND table_type = 'BASE TABLE'`)
	must(t, err)
	var names []string
	for tables.Next() {
		var n string
		must(t, tables.Scan(&n))
		names = append(names, n)
	}
	must(t, tables.Err())
	if len(names) < 10 {
		t.Fatalf("only %d tables to look through", len(names))
	}
	var holding []string
	for _, table := range names {
		var n int
		must(t, s.pool.QueryRow(ctx, `SELECT count(*) FROM `+table+` t WHERE t::text LIKE '%' || $1 || '%'`, value).Scan(&n))
		if n > 0 {
			holding = append(holding, fmt.Sprintf("%s (%d rows)", table, n))
		}
	}
	return holding
}

// watchProcesses looks at every process's command line and environment, every 20 ms, until the
// function it returns is called; that says where it saw any of values, and how many looks it
// took, for a test to be sure it looked while the engine ran.
func watchProcesses(values ...string) func() (seen []string, looks int) {
	done := make(chan struct{})
	var (
		mu       sync.Mutex
		seen     []string
		looks    int
		watching sync.WaitGroup
	)
	watching.Add(1)
	go func() {
		defer watching.Done()
		for {
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
			found := processesWith(values)
			mu.Lock()
			looks++
			seen = append(seen, found...)
			mu.Unlock()
		}
	}()
	return func() ([]string, int) {
		close(done)
		watching.Wait()
		return seen, looks
	}
}

// processesWith lists the processes whose command line or environment holds any of values.
func processesWith(values []string) []string {
	var found []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range dirs {
		for _, f := range []string{"cmdline", "environ"} {
			data, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				continue
			}
			for _, v := range values {
				if strings.Contains(string(data), v) {
					cmd, _ := os.ReadFile(filepath.Join(dir, "cmdline"))
					found = append(found, f+" of "+strings.ReplaceAll(string(cmd), "\x00", " "))
				}
			}
		}
	}
	return found
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
