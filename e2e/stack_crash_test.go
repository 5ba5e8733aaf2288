package e2e

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"nimbus/app/domain/stack"
	"nimbus/app/kernel/freeport"
	"nimbus/db"
	"nimbus/db/dbtest"
)

// The crash tests of stack instances kill `nimbus serve` outright while an instance's run is
// under way, start another on the same database and data directory, and expect the run to go
// on from where it was. The server runs on a test database of its own (--database-url) so the
// test can publish the stack straight into its tables: these tests are about running stacks,
// not about making them.

// crashSite is a server that will be killed, the database it shares with its successor, and an
// admin's token valid on both.
type crashSite struct {
	bin, data, dbURL string
	pool             *pgxpool.Pool
	server           *process
	token            string
}

func startCrashSite(t *testing.T) *crashSite {
	t.Helper()
	s := &crashSite{bin: nimbusBinary(t), data: t.TempDir(), dbURL: dbtest.URL(t)}
	pool, err := db.Open(context.Background(), s.dbURL, 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s.pool = pool
	s.server = startServer(t, s.bin, s.data, freeport.Addr(t), s.env())
	// Until the test kills it, a failure stops it; its successor's cleanup replaces this one's.
	first := s.server
	t.Cleanup(func() {
		_ = first.cmd.Process.Signal(syscall.SIGKILL)
		_ = first.cmd.Wait()
	})
	token := exec.Command(s.bin, "token", "create", "--email", adminEmail, "--name", "crash", "--data-dir", s.data)
	token.Env = append(os.Environ(), s.env())
	out, err := token.Output()
	if err != nil {
		t.Fatalf("token create: %v", err)
	}
	s.token = strings.TrimSpace(string(out))
	return s
}

// env points a server or a command at the test's database: both servers and the token command
// work on it.
func (s *crashSite) env() string { return "NIMBUS_DATABASE_URL=" + s.dbURL }

// restart kills the server with SIGKILL, as a crashed node dies, and starts another.
func (s *crashSite) restart(t *testing.T) {
	t.Helper()
	if err := s.server.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = s.server.cmd.Wait()
	// The killed server's engines lose their output pipe and die too, leaving their plugins to
	// init (they lead process groups of their own): stop them when the test is done.
	t.Cleanup(func() { killStrays(s.data) })
	s.server = startServer(t, s.bin, s.data, freeport.Addr(t), s.env())
	second := s.server
	t.Cleanup(func() {
		_ = second.cmd.Process.Signal(syscall.SIGTERM)
		_ = second.cmd.Wait()
	})
}

func (s *crashSite) api(t *testing.T, method, path string, body any) map[string]any {
	t.Helper()
	return s.server.api(t, s.token, method, path, body)
}

// component is the ID and latest version of a shipped component.
func (s *crashSite) component(t *testing.T, name string) (uuid.UUID, int) {
	t.Helper()
	for _, c := range s.api(t, "GET", "/api/v1/components?search="+name, nil)["components"].([]any) {
		if c := c.(map[string]any); c["name"] == name {
			return uuid.MustParse(c["id"].(string)), int(c["latest_version"].(float64))
		}
	}
	t.Fatalf("no component %s", name)
	return uuid.Nil, 0
}

// deployStack deploys a stack newly published with def into a new environment and returns the
// instance's ID.
func (s *crashSite) deployStack(t *testing.T, def stack.Definition) string {
	t.Helper()
	id := publishStack(t, s.pool, "crash", def)
	tenant := s.api(t, "POST", "/api/v1/tenants", map[string]any{"name": "Crash"})
	env := s.api(t, "POST", "/api/v1/environments", map[string]any{"tenant_id": tenant["id"], "name": "dev"})
	return s.api(t, "POST", "/api/v1/stack-instances", map[string]any{
		"stack_id": id, "environment_id": env["id"], "name": "shop", "parameters": map[string]any{"prefix": "shop"}})["id"].(string)
}

// instance is the stack instance as the API shows it, with its slots by name.
func (s *crashSite) instance(t *testing.T, id string) (map[string]any, map[string]map[string]any) {
	t.Helper()
	inst := s.api(t, "GET", "/api/v1/stack-instances/"+id, nil)
	slots := map[string]map[string]any{}
	for _, sl := range inst["slots"].([]any) {
		slot := sl.(map[string]any)
		slots[slot["name"].(string)] = slot
	}
	return inst, slots
}

// run is the instance's newest run of kind, as the API shows it, with its steps by slot.
func (s *crashSite) run(t *testing.T, id, kind string) (map[string]any, map[string]map[string]any) {
	t.Helper()
	for _, r := range s.api(t, "GET", "/api/v1/stack-instances/"+id+"/runs", nil)["runs"].([]any) {
		if run := r.(map[string]any); run["kind"] == kind {
			steps := map[string]map[string]any{}
			for _, st := range run["steps"].([]any) {
				step := st.(map[string]any)
				steps[step["slot"].(string)] = step
			}
			return run, steps
		}
	}
	return nil, nil
}

// await polls until ready holds, failing with what the server logged after within.
func (s *crashSite) await(t *testing.T, what string, within time.Duration, ready func() bool) {
	t.Helper()
	for deadline := time.Now().Add(within); !ready(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s\n%s", what, within, s.server.out)
		}
	}
}

// cloud counts what the simulated cloud holds, by kind.
func (s *crashSite) cloud() map[string]int {
	out := map[string]int{}
	for _, kind := range []string{"network", "machine", "disk"} {
		files, _ := filepath.Glob(filepath.Join(s.data, "simcloud", kind, "*.json"))
		if len(files) > 0 {
			out[kind] = len(files)
		}
	}
	return out
}

// crashStack is a network, two machines on it that deploy at once, each taking delayMs per
// create and delete, and a third machine after both.
func crashStack(t *testing.T, s *crashSite, delayMs int) stack.Definition {
	t.Helper()
	network, netVersion := s.component(t, "simcloud-network")
	machine, machineVersion := s.component(t, "simcloud-machine")
	onNet := func(name string, delay int) stack.Slot {
		return stack.Slot{Name: name, Component: machine, Version: machineVersion, Inputs: map[string]stack.Wiring{
			"name":       {Kind: stack.Expression, Expr: `params.prefix + "-` + name + `"`},
			"network_id": {Kind: stack.Output, Slot: "net", Output: "network_id"},
			"delay_ms":   {Kind: stack.Literal, Value: delay},
		}}
	}
	c := onNet("c", 0)
	c.DependsOn = []string{"a", "b"}
	return stack.Definition{
		Parameters: json.RawMessage(`{"type":"object","required":["prefix"],"properties":{"prefix":{"type":"string"}}}`),
		Slots: []stack.Slot{
			{Name: "net", Component: network, Version: netVersion, Inputs: map[string]stack.Wiring{
				"name": {Kind: stack.Expression, Expr: `params.prefix + "-net"`},
				"cidr": {Kind: stack.Literal, Value: "10.30.0.0/16"},
			}},
			onNet("a", delayMs), onNet("b", delayMs), c,
		},
		Machine: stack.Machine{States: []stack.State{{Name: "running", Initial: true}}},
	}
}

// publishStack records a provider stack on the simulated cloud with one published version of
// def, straight in the database, and returns its ID.
func publishStack(tb testing.TB, pool *pgxpool.Pool, name string, def stack.Definition) uuid.UUID {
	tb.Helper()
	ctx := context.Background()
	var id uuid.UUID
	if err := pool.QueryRow(ctx, `INSERT INTO stacks (provider_id, name, display_name)
		SELECT id, $1, $1 FROM semantic_providers WHERE name = 'simcloud' RETURNING id`, name).Scan(&id); err != nil {
		tb.Fatalf("record stack %s: %v", name, err)
	}
	def.Operations = nil // kept in a table of their own; these stacks have none
	raw, err := json.Marshal(def)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO stack_versions (stack_id, version, definition, changelog) VALUES ($1, 1, $2, 'first')`, id, raw); err != nil {
		tb.Fatalf("publish stack %s: %v", name, err)
	}
	return id
}

// A server killed while a stack instance deploys — its network deployed, both machines on it
// in the middle of their up — is followed by one that resumes those ups, deploys the machine
// after them, and ends the instance active with each slot deployed once.
func TestCrash_ServerKilledWhileStackDeploysResumes(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("takes minutes: a dead worker's operation is taken over after a minute of silence")
	}
	s := startCrashSite(t)
	id := s.deployStack(t, crashStack(t, s, 8000))

	// A machine's up has begun once its disk exists: the machine is waiting out its delay.
	s.await(t, "the network deployed and both machines' ups under way", engineWait, func() bool {
		_, slots := s.instance(t, id)
		return slots["net"]["status"] == "deployed" && s.cloud()["disk"] == 2
	})
	if got := s.cloud()["machine"]; got != 0 {
		t.Fatalf("%d machines in the cloud when the server was killed, want both still being made", got)
	}
	s.restart(t)

	var inst map[string]any
	s.await(t, "the instance's deploy ended after the restart", 5*time.Minute, func() bool {
		inst, _ = s.instance(t, id)
		return inst["status"] == "active" || inst["status"] == "failed"
	})
	if inst["status"] != "active" || inst["state"] != "running" {
		t.Fatalf("after the crash the instance is %v in state %q: %v", inst["status"], inst["state"], inst["error"])
	}
	if got, want := s.cloud(), map[string]int{"network": 1, "machine": 3, "disk": 3}; !maps.Equal(got, want) {
		t.Fatalf("after the crash the cloud holds %v, want %v", got, want)
	}
	run, steps := s.run(t, id, "deploy")
	if run["status"] != "succeeded" {
		t.Fatalf("the deploy run is %v: %v", run["status"], run["error"])
	}
	for _, slot := range []string{"net", "a", "b", "c"} {
		if steps[slot]["status"] != "succeeded" {
			t.Fatalf("the deploy run's step %s: %v", slot, steps[slot])
		}
	}
	// Each slot has one deployment, deployed by one deploy operation: the resumed ones went on
	// rather than being asked for again.
	rows, err := s.pool.Query(context.Background(), `
		SELECT d.slot, count(DISTINCT d.id), count(o.id), count(o.id) FILTER (WHERE o.status = 'succeeded')
		FROM deployed_components d LEFT JOIN operations o ON o.deployment_id = d.id AND o.kind = 'deploy'
		WHERE d.stack_instance_id = $1 GROUP BY d.slot ORDER BY d.slot`, id)
	if err != nil {
		t.Fatal(err)
	}
	var slots []string
	for rows.Next() {
		var slot string
		var deployments, deploys, succeeded int
		if err := rows.Scan(&slot, &deployments, &deploys, &succeeded); err != nil {
			t.Fatal(err)
		}
		slots = append(slots, slot)
		if deployments != 1 || deploys != 1 || succeeded != 1 {
			t.Errorf("slot %s: %d deployments, %d deploy operations (%d succeeded); want one of each", slot, deployments, deploys, succeeded)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "b", "c", "net"}; !slices.Equal(slots, want) {
		t.Fatalf("the instance's deployments hold slots %v, want %v", slots, want)
	}
}

// A server killed while a failed first deploy is being taken down — both machines on the
// network in the middle of their destroy — is followed by one that finishes taking everything
// down, the network last.
func TestCrash_ServerKilledWhileStackCompensatesResumes(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("takes minutes: a dead worker's operation is taken over after a minute of silence")
	}
	s := startCrashSite(t)
	def := crashStack(t, s, 8000)
	def.Slots[3].Inputs["fail_on"] = stack.Wiring{Kind: stack.Literal, Value: "create"}
	id := s.deployStack(t, def)

	var dirs []string
	s.await(t, "both machines' destroys under way while what the deploy made is taken down", 2*engineWait, func() bool {
		run, steps := s.run(t, id, "compensate")
		if run == nil || run["status"] != "running" || steps["a"]["status"] != "running" || steps["b"]["status"] != "running" {
			return false
		}
		if dirs == nil {
			_, slots := s.instance(t, id)
			for _, slot := range []string{"a", "b"} {
				dep := strings.ReplaceAll(slots[slot]["deployment_id"].(string), "-", "")
				dir, err := filepath.EvalSymlinks(filepath.Join(s.data, "stacks", "d-"+dep))
				if err != nil {
					t.Fatalf("slot %s's stack directory: %v", slot, err)
				}
				dirs = append(dirs, dir)
			}
		}
		return destroying(dirs[0]) && destroying(dirs[1])
	})
	if got := s.cloud()["machine"]; got != 2 {
		t.Fatalf("%d machines in the cloud when the server was killed, want both still being destroyed", got)
	}
	s.restart(t)

	s.await(t, "what the deploy made taken down after the restart", 5*time.Minute, func() bool {
		run, _ := s.run(t, id, "compensate")
		return run["status"] != "running"
	})
	// Read after the run ended: the run's end and what it says of the instance are one change.
	inst, _ := s.instance(t, id)
	if run, _ := s.run(t, id, "compensate"); run["status"] != "succeeded" {
		t.Fatalf("taking down what was made ended %v: %v", run["status"], run["error"])
	}
	if inst["status"] != "failed" || !strings.Contains(inst["error"].(string), "What it had made was removed.") {
		t.Fatalf("after the crash the instance is %v: %v", inst["status"], inst["error"])
	}
	if got := s.cloud(); len(got) != 0 {
		t.Fatalf("left in the cloud after the crash: %v", got)
	}
	_, slots := s.instance(t, id)
	for name, slot := range slots {
		if slot["status"] != "destroyed" {
			t.Errorf("slot %s is %v after taking down", name, slot["status"])
		}
	}
}

// destroying says whether a pulumi process is destroying the stack whose directory is dir.
func destroying(dir string) bool {
	for _, pid := range pids() {
		if name, _ := program(pid); name != "pulumi" {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + pid + "/cmdline")
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if cwd, _ := os.Readlink("/proc/" + pid + "/cwd"); cwd == dir && slices.Contains(args, "destroy") && slices.Contains(args, "--yes") {
			return true
		}
	}
	return false
}

// A server killed while it takes a step of an instance's graph — the step after the first
// slot's deploy ended, which starts the second — is followed by one that takes that step: the
// end of the first slot's operation asked for it once, and nothing else will.
func TestCrash_ServerKilledDuringGraphStepResumes(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("takes minutes: a dead worker's work is taken over after a minute of silence")
	}
	s := startCrashSite(t)
	machine, version := s.component(t, "simcloud-machine")
	slot := func(name string, after ...string) stack.Slot {
		return stack.Slot{Name: name, Component: machine, Version: version, DependsOn: after, Inputs: map[string]stack.Wiring{
			"name": {Kind: stack.Expression, Expr: `params.prefix + "-` + name + `"`}, "delay_ms": {Kind: stack.Literal, Value: 3000}}}
	}
	id := s.deployStack(t, stack.Definition{
		Parameters: json.RawMessage(`{"type":"object","required":["prefix"],"properties":{"prefix":{"type":"string"}}}`),
		Slots:      []stack.Slot{slot("first"), slot("second", "first")},
		Machine:    stack.Machine{States: []stack.State{{Name: "running", Initial: true}}},
	})
	s.await(t, "the first machine's up under way", engineWait, func() bool { return s.cloud()["disk"] == 1 })

	// Holding the instance in share mode lets the first slot's operation end, and holds up the
	// graph step its end asks for, which locks the instance to change it.
	ctx := context.Background()
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SELECT 1 FROM stack_instances WHERE id = $1 FOR SHARE`, id); err != nil {
		t.Fatal(err)
	}
	s.await(t, "the graph step after the first slot's deploy taken and waiting for the instance", engineWait, func() bool {
		var stepping bool
		if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM river_job WHERE kind = 'graph' AND args->>'id' = $1 AND state = 'running')
			AND EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock')`, id).Scan(&stepping); err != nil {
			t.Fatal(err)
		}
		return stepping
	})
	s.restart(t)
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}

	// As long as a dead worker's operation waits to be taken over, and more.
	var inst map[string]any
	for deadline := time.Now().Add(4 * time.Minute); ; time.Sleep(500 * time.Millisecond) {
		inst, _ = s.instance(t, id)
		if inst["status"] == "active" || inst["status"] == "failed" {
			break
		}
		if time.Now().After(deadline) {
			_, steps := s.run(t, id, "deploy")
			t.Fatalf("the instance is still %v 4 minutes after the restart; its deploy run's steps: first %v, second %v",
				inst["status"], steps["first"]["status"], steps["second"]["status"])
		}
	}
	if inst["status"] != "active" {
		t.Fatalf("after the crash the instance is %v: %v", inst["status"], inst["error"])
	}
	if got := s.cloud()["machine"]; got != 2 {
		t.Fatalf("%d machines in the cloud, want both", got)
	}
}
