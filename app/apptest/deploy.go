package apptest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"nimbus/app/orchestration/deploy"
	"nimbus/app/platform/pulumix"
)

// Deployment is a deployment and the operation that made it, or the last one on it.
type Deployment struct {
	deploy.Deployment
	Op deploy.Operation
}

// deployA has A's user deploy the shared machine into A's environment dev, under name.
func (w *World) deployA(t *testing.T, name string, previewOnly bool) Deployment {
	t.Helper()
	d, op, err := w.Deploys.Deploy(context.Background(), w.UserA, deploy.Request{ComponentID: w.Shared.ID, EnvironmentID: w.Dev(t).ID,
		Name: name, Parameters: map[string]any{"name": name + "-1"}, PreviewOnly: previewOnly})
	Must(t, err)
	return Deployment{Deployment: d, Op: op}
}

// Web is a deployment of tenant A whose first deploy is queued.
func (w *World) Web(t *testing.T) Deployment {
	return Fixture(w, "web", func() Deployment { return w.deployA(t, "web", false) })
}

// Previewed is a deployment of tenant A that was only asked to be previewed: pending, its
// preview queued.
func (w *World) Previewed(t *testing.T) Deployment {
	return Fixture(w, "previewed", func() Deployment { return w.deployA(t, "api", true) })
}

// Live is a deployment of tenant A that is deployed, as a worker leaves it after its first
// deploy succeeded.
func (w *World) Live(t *testing.T) Deployment {
	return Fixture(w, "live", func() Deployment {
		ctx := context.Background()
		d := w.deployA(t, "db", false)
		w.Succeed(t, d.Op.ID)
		_, err := w.Pool.Exec(ctx, `UPDATE deployed_components SET status = 'deployed' WHERE id = $1`, d.ID)
		Must(t, err)
		return d
	})
}

// Succeed ends an operation as a worker does when it succeeded.
func (w *World) Succeed(t *testing.T, id uuid.UUID) {
	t.Helper()
	_, err := w.Pool.Exec(context.Background(),
		`UPDATE operations SET status = 'succeeded', started_at = now(), finished_at = now() WHERE id = $1`, id)
	Must(t, err)
}

// Preview is a preview of the live deployment, by A's user, that succeeded.
func (w *World) Preview(t *testing.T) deploy.Operation {
	return Fixture(w, "preview", func() deploy.Operation {
		op, err := w.Deploys.Preview(context.Background(), w.UserA, w.Live(t).ID, deploy.Change{Parameters: map[string]any{"cores": 3.0}})
		Must(t, err)
		w.Succeed(t, op.ID)
		return op
	})
}

// V2 is the shared machine's second version, which the live deployment may be upgraded to.
func (w *World) V2(t *testing.T) {
	Fixture(w, "v2", func() bool {
		_, err := w.Components.Publish(context.Background(), w.Admin, w.Shared.ID, w.Shared.Revision, "second")
		Must(t, err)
		return true
	})
}

// States is a deploy service with the Pulumi CLI, for the methods that read or write a stack's
// state; exporting and importing state runs the CLI, never a program.
func (w *World) States(t *testing.T) *deploy.Service {
	return Fixture(w, "states", func() *deploy.Service {
		runner, err := pulumix.NewRunner(os.Getenv("NIMBUS_PULUMI_DIR"), t.TempDir(), nil)
		if err != nil {
			t.Fatalf("a stack's state is read and written by the Pulumi CLI: %v", err)
		}
		return deploy.NewService(w.Pool, w.Keys, insertOnly(t, w.Pool), runner, nil)
	})
}

// WaitOperation polls an operation until it ends and returns it.
func (s *Site) WaitOperation(t *testing.T, token, id string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		op := s.Call(t, "GET", "/api/v1/operations/"+id, token, nil).JSON(t)
		switch op["status"] {
		case "succeeded", "failed", "cancelled", "rejected":
			return op
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("operation %s did not end in 3 minutes", id)
	return nil
}

// CloudFiles lists what the simulated cloud holds, by kind.
func (s *Site) CloudFiles(t *testing.T) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(s.Cloud, "*", "*.json"))
	for i, f := range files {
		files[i] = filepath.Base(filepath.Dir(f))
	}
	return files
}

// WaitDrift polls the deployment until its drift status is want, and returns it.
func (s *Site) WaitDrift(t *testing.T, token, id, want string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	var dep map[string]any
	for time.Now().Before(deadline) {
		dep = s.Call(t, "GET", "/api/v1/deployments/"+id, token, nil).JSON(t)
		if dep["drift_status"] == want {
			return dep
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("deployment %s is not %s after 3 minutes: %v", id, want, dep)
	return nil
}

// DriftEvents are the logged events of the type about the deployment.
func (s *Site) DriftEvents(t *testing.T, token, env, typ, deployment string) []map[string]any {
	t.Helper()
	r := s.Call(t, "GET", "/api/v1/events?type="+typ+"&environment_id="+env, token, nil)
	WantStatus(t, r, http.StatusOK)
	var page struct{ Events []map[string]any }
	Must(t, json.Unmarshal(r.Body, &page))
	var out []map[string]any
	for _, e := range page.Events {
		if e["deployment_id"] == deployment {
			out = append(out, e)
		}
	}
	return out
}

// EngineRuns returns the engine processes started since the last call: each one's command
// (up, preview…) and whether it applied a plan.
func (s *Site) EngineRuns(t *testing.T, seen *int) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(s.Cloud, "engine-runs"))
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

// DeployShared asks for a deployment of the shared component in env, its machine's create
// taking delayMs, and returns its first operation's id.
func (s *Site) DeployShared(t *testing.T, token string, env uuid.UUID, name string, delayMs int) string {
	t.Helper()
	params := map[string]any{"name": name}
	if delayMs > 0 {
		params["delay_ms"] = delayMs
	}
	r := s.Call(t, "POST", "/api/v1/deployments", token, map[string]any{
		"component_id": s.Shared.ID, "environment_id": env, "name": name, "parameters": params})
	WantStatus(t, r, http.StatusAccepted)
	return r.JSON(t)["operation"].(map[string]any)["id"].(string)
}

// CancelAtEnd cancels the operations when the test ends, before its server stops, and waits for
// them to end: a server stopping waits for its running jobs.
func (s *Site) CancelAtEnd(t *testing.T, token string, ids ...string) {
	t.Cleanup(func() {
		for _, id := range ids {
			s.Call(t, "POST", "/api/v1/operations/"+id+"/cancel", token, nil)
		}
		for _, id := range ids {
			s.WaitOperation(t, token, id)
		}
	})
}

// RunningOf counts the tenant's operations running now: those whose worker beats.
func (s *Site) RunningOf(t *testing.T, tenant uuid.UUID) int {
	t.Helper()
	var n int
	Must(t, s.Pool.QueryRow(t.Context(), `SELECT count(*) FROM operations o JOIN deployed_components d ON d.id = o.deployment_id
		WHERE d.tenant_id = $1 AND o.status = 'running' AND o.heartbeat_at > now() - interval '1 minute'`, tenant).Scan(&n))
	return n
}

// StatusOf reads an operation's status through the API.
func (s *Site) StatusOf(t *testing.T, token, id string) map[string]any {
	t.Helper()
	r := s.Call(t, "GET", "/api/v1/operations/"+id, token, nil)
	WantStatus(t, r, http.StatusOK)
	return r.JSON(t)
}

// SecretProgram hands a secret input to a resource; the machine dawdles so that the engine's
// processes can be watched while they run.
const SecretProgram = `name: secret-disk
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

// TablesHolding lists the tables with a row whose text holds value.
func (s *Site) TablesHolding(t *testing.T, value string) []string {
	t.Helper()
	ctx := context.Background()
	tables, err := s.Pool.Query(ctx, `SELECT format('%I.%I', table_schema, table_name) FROM information_schema.tables
		WHERE table_schema NOT IN ('pg_catalog', 'information_schema') AND table_type = 'BASE TABLE'`)
	Must(t, err)
	var names []string
	for tables.Next() {
		var n string
		Must(t, tables.Scan(&n))
		names = append(names, n)
	}
	Must(t, tables.Err())
	if len(names) < 10 {
		t.Fatalf("only %d tables to look through", len(names))
	}
	var holding []string
	for _, table := range names {
		var n int
		Must(t, s.Pool.QueryRow(ctx, `SELECT count(*) FROM `+table+` t WHERE t::text LIKE '%' || $1 || '%'`, value).Scan(&n))
		if n > 0 {
			holding = append(holding, fmt.Sprintf("%s (%d rows)", table, n))
		}
	}
	return holding
}

// WatchProcesses looks at every process's command line and environment, every 20 ms, until the
// function it returns is called; that says where it saw any of values, and how many looks it
// took, for a test to be sure it looked while the engine ran.
func WatchProcesses(values ...string) func() (seen []string, looks int) {
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

// ReadFile is the content of the file at path; the test fails when it cannot be read.
func ReadFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
