package e2e

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"nimbus/app/domain/stack"
	"nimbus/app/kernel/graph"
	"nimbus/db"
	"nimbus/db/localpg"
)

// BenchmarkStackDeploy deploys a stack of ten slots in two layers — five networks, then five
// machines, each on one of the networks — and measures the wall time from the request to the
// instance being active, against what a user would run instead with the bare pulumi CLI:
//
//   - the ten programs one after another, one `pulumi up` each, the networks first;
//   - the stack's critical path alone, one network then one machine on it: what no
//     orchestration of these ten can beat while it runs each program as the CLI does;
//   - the floor the machine sets: the processor time the ten bare ups spent, over its cores.
//     Where that exceeds the critical path, ten engines cannot run as fast as two on it.
//
// Handing a network's ID on to its machine is not timed in the bare runs, as Nimbus's wiring
// is in its. The server runs as many slots of one graph at once as a layer holds when it takes
// a bound from NIMBUS_GRAPH_PARALLEL, else its built-in bound; the figures say which. One b.N
// is three rounds, whose medians are reported: run it with -benchtime 1x.
func BenchmarkStackDeploy(b *testing.B) {
	const width, rounds = 5, 3
	b.Setenv("NIMBUS_GRAPH_PARALLEL", fmt.Sprint(width))
	s := startBench(b)
	bound := graph.DefaultParallel
	if help, _ := exec.Command(s.cmd.Path, "serve", "-h").CombinedOutput(); strings.Contains(string(help), "NIMBUS_GRAPH_PARALLEL") {
		bound = width
	}
	network, machine := s.shipped(b, "simcloud-network"), s.machine(b)
	stackID := publishStack(b, s.database(b), "layers", layeredStack(network, machine, width))
	env := s.environment(b, "stacks")
	netCLI, machineCLI := s.bareCLI(b, network), s.bareCLI(b, machine)

	var wall, seq, path, floor []time.Duration
	b.ResetTimer()
	for range b.N {
		for range rounds {
			name := fmt.Sprintf("r%d", len(wall))
			start := time.Now()
			id := s.call(b, "POST", "/api/v1/stack-instances", map[string]any{
				"stack_id": stackID, "environment_id": env, "name": name, "parameters": map[string]any{"prefix": name}})["id"].(string)
			s.waitActive(b, id)
			wall = append(wall, time.Since(start))

			b.StopTimer()
			var bare time.Duration
			cpu := netCLI.CPU() + machineCLI.CPU()
			networks := make([]string, width)
			for i := range width {
				stackName := fmt.Sprintf("%s-net%d", name, i)
				bare += netCLI.DeployWith(b, stackName, map[string]string{"name": stackName, "cidr": fmt.Sprintf("10.20.%d.0/24", i)})
				networks[i] = netCLI.Output(b, stackName, "network_id")
			}
			for i := range width {
				stackName := fmt.Sprintf("%s-vm%d", name, i)
				bare += machineCLI.DeployWith(b, stackName, map[string]string{"name": stackName, "network_id": networks[i]})
			}
			seq = append(seq, bare)
			floor = append(floor, (netCLI.CPU()+machineCLI.CPU()-cpu)/time.Duration(runtime.NumCPU()))

			critical := netCLI.DeployWith(b, name+"-cpnet", map[string]string{"name": name + "-cpnet", "cidr": "10.20.0.0/24"})
			critical += machineCLI.DeployWith(b, name+"-cpvm", map[string]string{"name": name + "-cpvm", "network_id": netCLI.Output(b, name+"-cpnet", "network_id")})
			path = append(path, critical)
			b.Logf("round %d: nimbus %.1f s; bare, ten in sequence %.1f s, critical path %.1f s, their processor time over %d cores %.1f s",
				len(wall), wall[len(wall)-1].Seconds(), bare.Seconds(), critical.Seconds(), runtime.NumCPU(), floor[len(floor)-1].Seconds())
			b.StartTimer()
		}
	}
	b.StopTimer()
	// Medians: other work on the machine can slow any one round down.
	wallS, seqS, pathS, floorS := percentile(wall, 0.5)/1000, percentile(seq, 0.5)/1000, percentile(path, 0.5)/1000, percentile(floor, 0.5)/1000
	b.Logf("a stack of %d slots in 2 layers of %d, %d slots at once at most: nimbus request → active %.1f s; "+
		"bare up of the %d programs in sequence %.1f s, ratio %.2f; bare critical path (a network, then a machine) %.1f s, ratio %.2f; "+
		"the ten bare ups' processor time over %d cores %.1f s, ratio %.2f; medians of %d rounds",
		2*width, width, bound, wallS, 2*width, seqS, wallS/seqS, pathS, wallS/pathS, runtime.NumCPU(), floorS, wallS/floorS, len(wall))
	if issues := s.logIssues(); issues != "" {
		b.Logf("server log warnings and errors: %s", issues)
	}
	b.ReportMetric(wallS, "wall-s")
	b.ReportMetric(seqS, "bare-seq-s")
	b.ReportMetric(pathS, "bare-critical-s")
	b.ReportMetric(wallS/seqS, "ratio-seq")
	b.ReportMetric(wallS/pathS, "ratio-critical")
	b.ReportMetric(floorS, "bare-cpu-floor-s")
}

// layeredStack is width networks, and width machines each on one of them.
func layeredStack(network, machine map[string]any, width int) stack.Definition {
	slot := func(name string, comp map[string]any, inputs map[string]stack.Wiring) stack.Slot {
		return stack.Slot{Name: name, Component: uuid.MustParse(comp["id"].(string)), Version: int(comp["latest_version"].(float64)), Inputs: inputs}
	}
	named := func(slot string) stack.Wiring {
		return stack.Wiring{Kind: stack.Expression, Expr: `params.prefix + "-` + slot + `"`}
	}
	var nets, machines []stack.Slot
	for i := range width {
		net, vm := fmt.Sprintf("net%d", i), fmt.Sprintf("vm%d", i)
		nets = append(nets, slot(net, network, map[string]stack.Wiring{
			"name": named(net), "cidr": {Kind: stack.Literal, Value: fmt.Sprintf("10.20.%d.0/24", i)}}))
		machines = append(machines, slot(vm, machine, map[string]stack.Wiring{
			"name": named(vm), "network_id": {Kind: stack.Output, Slot: net, Output: "network_id"}}))
	}
	return stack.Definition{
		Parameters: json.RawMessage(`{"type":"object","required":["prefix"],"properties":{"prefix":{"type":"string"}}}`),
		Slots:      slices.Concat(nets, machines),
		Machine:    stack.Machine{States: []stack.State{{Name: "running", Initial: true}}},
	}
}

// shipped is the shipped component called name.
func (s *benchServer) shipped(b *testing.B, name string) map[string]any {
	b.Helper()
	for _, c := range s.call(b, "GET", "/api/v1/components?search="+name, nil)["components"].([]any) {
		if c := c.(map[string]any); c["name"] == name {
			return c
		}
	}
	b.Fatalf("no component %s", name)
	return nil
}

// database is a pool on the server's embedded database, so the benchmark can publish a stack
// straight into its tables: it measures running stacks, not making them.
func (s *benchServer) database(b *testing.B) *pgxpool.Pool {
	b.Helper()
	pg, err := localpg.Start(b.Context(), localpg.Options{Dir: filepath.Join(s.data, "postgres")})
	if err != nil {
		b.Fatalf("the server's database: %v", err)
	}
	pool, err := db.Open(b.Context(), pg.URL(localpg.DatabaseName), 2)
	if err != nil {
		pg.Close()
		b.Fatalf("the server's database: %v", err)
	}
	// Before the server stops (cleanups run in reverse): the server is the one to stop Postgres.
	b.Cleanup(func() {
		pool.Close()
		_ = pg.Close()
	})
	return pool
}

// waitActive polls the stack instance until it is active, and fails if it fails.
func (s *benchServer) waitActive(b *testing.B, id string) {
	b.Helper()
	for deadline := time.Now().Add(10 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		got := s.call(b, "GET", "/api/v1/stack-instances/"+id, nil)
		switch got["status"] {
		case "active":
			return
		case "failed":
			b.Fatalf("stack instance %s failed: %v", id, got["error"])
		}
	}
	b.Fatalf("stack instance %s was not active in 10 minutes:\n%s", id, s.logTail())
}
