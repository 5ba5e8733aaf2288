package e2e

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"nimbus/app/platform/tracing/otlptest"
)

// The engine's benchmarks run the built binary as an operator does: `nimbus serve` on a fresh
// data directory with its embedded Postgres, the real Pulumi CLI and the simulated cloud. Each
// b.N is one whole round, minutes long: run them with -benchtime 1x, as `go tool task bench` does.

// BenchmarkRequestToEngine measures how long an operation waits before the engine runs it: from
// just before the API request that queues a preview to the start of its first pulumi process,
// over 100 previews of one deployed machine, one after the other.
//
// The start is the kernel's, rather than taken from the operation's first step: the step's
// started_at is written before the runner prepares the stack's workspace, so it would leave out
// part of the wait. The kernel's process events (execs) tell of the pulumi exec with the
// moment it happened, and cost nothing while the server works, as a watcher polling /proc
// would.
//
// Before the previews, a second machine is deployed in a trace of the benchmark's own, whose
// spans the server sends to a collector in this process (OTLP/HTTP, as an operator's would be
// told with OTEL_EXPORTER_OTLP_ENDPOINT); they are printed as a table: where a deploy's time
// goes. The server samples only requests that come in a sampled trace, so the previews are not
// recorded.
//
// What a preview costs the database on this way (statements, round trips, commits that wait
// for the disk), which unlike its time does not move with the machine's load, is counted and
// held to a cut by TestPreview_CostBeforeTheEngineStaysWithinItsCut in app/orchestration/deploy.
func BenchmarkRequestToEngine(b *testing.B) {
	const previews = 100
	spans := otlptest.Start()
	b.Cleanup(spans.Close)
	s := startBench(b, "OTEL_EXPORTER_OTLP_ENDPOINT="+spans.URL, "OTEL_TRACES_SAMPLER=parentbased_always_off", "OTEL_BSP_SCHEDULE_DELAY=100")
	comp := s.machine(b)
	env := s.environment(b, "probe")
	dep, err := s.deploy(comp["id"].(string), env, "probe")
	if err != nil {
		b.Fatal(err)
	}
	s.mustSucceed(b, dep.op)
	// Printed, not logged: a benchmark's log keeps ten lines unless run with -v.
	deployed := s.traced(b, spans, func() string {
		traced, err := s.deploy(comp["id"].(string), env, "traced")
		if err != nil {
			b.Fatal(err)
		}
		return traced.op
	})
	fmt.Printf("one deploy, traced:\n%s", otlptest.Table(spans.Spans(), deployed))
	stackDir, err := filepath.EvalSymlinks(filepath.Join(s.data, "stacks", "d-"+strings.ReplaceAll(dep.id, "-", "")))
	if err != nil {
		b.Fatalf("the deployment's stack directory: %v", err)
	}
	preview := func() string { return s.call(b, "POST", "/api/v1/deployments/"+dep.id+"/preview", nil)["id"].(string) }
	previewed := s.traced(b, spans, preview)
	fmt.Printf("one preview, traced:\n%s", otlptest.Table(spans.Spans(), previewed))
	ex, err := listenExecs()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(ex.Close)
	var waits, claims []time.Duration
	b.ResetTimer()
	for range b.N {
		for range previews {
			ctx, cancel := context.WithTimeout(b.Context(), time.Minute)
			started := ex.watch(func(name, cwd string) bool { return name == "pulumi" && cwd == stackDir })
			start := time.Now()
			op := s.call(b, "POST", "/api/v1/deployments/"+dep.id+"/preview", nil)["id"].(string)
			select {
			case t := <-started:
				waits = append(waits, t.Sub(start))
			case <-ctx.Done():
				b.Fatalf("preview %s: no pulumi process started in a minute\n%s", op, s.logTail())
			}
			cancel()
			done := s.mustSucceed(b, op)
			claims = append(claims, elapsed(b, done, "created_at", "started_at"))
		}
	}
	b.StopTimer()
	p50, p99 := percentile(waits, 0.50), percentile(waits, 0.99)
	b.ReportMetric(p50, "p50-ms")
	b.ReportMetric(p99, "p99-ms")
	b.Logf("request to pulumi process started, %d previews one after another: p50 %.1f ms, p99 %.1f ms, max %.1f ms",
		len(waits), p50, p99, percentile(waits, 1))
	// The part of the wait before a worker took the operation: the transaction that queued it
	// to the one that claimed it, both stamped by Postgres.
	b.Logf("of which queued to claimed by a worker: p50 %.1f ms, p99 %.1f ms, max %.1f ms",
		percentile(claims, 0.50), percentile(claims, 0.99), percentile(claims, 1))

	// Where the wait goes, from the spans of previews traced like the one above (after the
	// timed ones: a traced request costs its spans).
	const tracedPreviews = 30
	parts := map[string][]time.Duration{}
	for range tracedPreviews {
		for part, d := range previewParts(b, s.traced(b, spans, preview), spans) {
			parts[part] = append(parts[part], d)
		}
	}
	fmt.Printf("request to engine started, in parts, over %d traced previews:\n%-34s %9s %9s %9s\n", tracedPreviews, "part", "p50 ms", "p99 ms", "max ms")
	for _, part := range previewPartNames {
		fmt.Printf("%-34s %9.1f %9.1f %9.1f\n", part, percentile(parts[part], 0.5), percentile(parts[part], 0.99), percentile(parts[part], 1))
	}
}

// previewPartNames are the parts of a preview's wait for its engine, in order.
var previewPartNames = []string{"request until queued", "queued until picked up", "picked up until claimed", "claimed until engine started", "request until engine started"}

// previewParts splits the wait of the preview traced in trace by the moments its spans note:
// the request's start, the job's (when it was queued), its pick-up, its claim's end and its
// engine process's start.
func previewParts(b *testing.B, trace string, spans *otlptest.Collector) map[string]time.Duration {
	var request, queued, picked, claimed, started time.Time
	for _, sp := range spans.Spans() {
		if sp.TraceID != trace {
			continue
		}
		switch {
		case strings.HasPrefix(sp.Name, "POST "):
			request = sp.Start
		case sp.Name == "job operation":
			queued = sp.Start
			for _, e := range sp.Events {
				if e.Name == "picked up" {
					picked = e.At
				}
			}
		case sp.Name == "claim":
			claimed = sp.End
		case sp.Name == "pulumi preview":
			for _, e := range sp.Events {
				if e.Name == "started" {
					started = e.At
				}
			}
		}
	}
	for _, t := range []time.Time{request, queued, picked, claimed, started} {
		if t.IsZero() {
			b.Fatalf("trace %s lacks a moment of a preview's wait:\n%s", trace, otlptest.Table(spans.Spans(), trace))
		}
	}
	return map[string]time.Duration{previewPartNames[0]: queued.Sub(request), previewPartNames[1]: picked.Sub(queued),
		previewPartNames[2]: claimed.Sub(picked), previewPartNames[3]: started.Sub(claimed), previewPartNames[4]: started.Sub(request)}
}

// traced runs the operation request asks for in a trace of its own and returns the trace's id,
// once the span of the job that ran it has come.
func (s *benchServer) traced(b *testing.B, spans *otlptest.Collector, request func() string) string {
	id := make([]byte, 24)
	_, _ = rand.Read(id)
	trace := hex.EncodeToString(id[:16])
	s.traceparent = "00-" + trace + "-" + hex.EncodeToString(id[16:]) + "-01"
	op := request()
	s.traceparent = ""
	s.mustSucceed(b, op)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if slices.ContainsFunc(spans.Spans(), func(sp otlptest.Span) bool { return sp.TraceID == trace && sp.Name == "job operation" }) {
			return trace
		}
		if time.Now().After(deadline) {
			b.Fatalf("the operation's job span did not reach the collector in a minute; spans of its trace:\n%s", otlptest.Table(spans.Spans(), trace))
		}
	}
}

// BenchmarkEngineProcesses counts the processes the server starts for each kind of operation,
// one operation at a time: pulumi CLI processes, and the plugins they start (the language host,
// the provider). A machine is previewed as a new deployment, that preview applied, then the
// machine previewed with a change, updated, refreshed and destroyed; a second machine is
// deployed without a preview first. The server's descendants are seen by polling /proc every
// millisecond: a process that lives less than that may be missed.
func BenchmarkEngineProcesses(b *testing.B) {
	s := startBench(b)
	comp := s.machine(b)["id"].(string)
	env := s.environment(b, "count")
	type counted struct {
		kind  string
		procs map[string]int
	}
	var ops []counted
	// count runs the operation that request asks for, until it succeeds, and notes what it started.
	count := func(kind string, request func() string) {
		stop := watchDescendants(s.cmd.Process.Pid)
		op := request()
		s.mustSucceed(b, op)
		ops = append(ops, counted{kind, stop()})
	}
	for round := range b.N {
		name := fmt.Sprintf("c%d", round)
		ops = ops[:0] // the last round's counts are reported
		var dep, preview string
		count("preview (new)", func() string {
			r := s.call(b, "POST", "/api/v1/deployments", map[string]any{
				"component_id": comp, "environment_id": env, "name": name, "parameters": map[string]any{"name": name}, "preview_only": true,
			})
			dep, preview = r["deployment"].(map[string]any)["id"].(string), r["operation"].(map[string]any)["id"].(string)
			return preview
		})
		count("deploy (applied preview)", func() string {
			return s.call(b, "POST", "/api/v1/operations/"+preview+"/apply", nil)["id"].(string)
		})
		change := map[string]any{"parameters": map[string]any{"cores": 3}}
		for _, kind := range []string{"preview", "update", "refresh", "destroy"} {
			var body any
			if kind == "preview" || kind == "update" {
				body = change
			}
			count(kind, func() string { return s.call(b, "POST", "/api/v1/deployments/"+dep+"/"+kind, body)["id"].(string) })
		}
		count("deploy", func() string {
			d, err := s.deploy(comp, env, name+"-direct")
			if err != nil {
				b.Fatal(err)
			}
			return d.op
		})
	}
	b.StopTimer()
	for _, o := range ops {
		pulumi := o.procs["pulumi"]
		var plugins []string
		for _, name := range slices.Sorted(maps.Keys(o.procs)) {
			if name != "pulumi" {
				plugins = append(plugins, fmt.Sprintf("%s %d", name, o.procs[name]))
			}
		}
		b.Logf("%s: %d pulumi processes; what they started: %s", o.kind, pulumi, strings.Join(plugins, ", "))
		unit := strings.NewReplacer(" (", "-", ")", "", " ", "-").Replace(o.kind)
		b.ReportMetric(float64(pulumi), "pulumi/"+unit)
	}
}

// watchDescendants polls /proc every millisecond for processes the process root starts, and
// what those start in turn, until the returned func is called, which returns how many of each
// program were seen. A child is counted by the program it executes: one that still shows its
// parent's program (forked, not executed yet) or the limits wrapper is looked at again.
func watchDescendants(root int) func() map[string]int {
	done, result := make(chan struct{}), make(chan map[string]int)
	ours := map[string]bool{strconv.Itoa(root): true}
	settled := map[string]bool{}
	for _, pid := range pids() {
		settled[pid] = true
	}
	go func() {
		counts := map[string]int{}
		for {
			// In order of pid, so a parent is usually met before its children.
			list := pids()
			slices.SortFunc(list, func(a, b string) int { return cmp.Or(cmp.Compare(len(a), len(b)), strings.Compare(a, b)) })
			for _, pid := range list {
				if settled[pid] {
					continue
				}
				stat, err := os.ReadFile("/proc/" + pid + "/stat")
				if err != nil {
					settled[pid] = true
					continue
				}
				fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
				if len(fields) < 2 || !ours[fields[1]] {
					settled[pid] = true
					continue
				}
				ours[pid] = true
				name, err := program(pid)
				if parent, _ := program(fields[1]); err != nil || name == "" || name == parent || name == "prlimit" {
					continue
				}
				counts[name]++
				settled[pid] = true
			}
			select {
			case <-done:
				result <- counts
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	return func() map[string]int { close(done); return <-result }
}

// BenchmarkConcurrentDeploys asks for 50 machines at once, in one environment, and measures
// the wall time until every one is deployed or failed, against what a user would run instead:
// the same program deployed with the bare pulumi CLI 50 times in sequence (barecli). It samples
// the server's resident memory every 100 ms meanwhile: its own process only, as the engines are
// processes of their own.
func BenchmarkConcurrentDeploys(b *testing.B) {
	const deploys = 50
	s := startBench(b)
	comp := s.machine(b)
	cli := s.bareCLI(b, comp)
	idle := s.memory()
	var (
		peak       memory
		wall, bare time.Duration
		failures   int
		failedWhy  []string
	)
	b.ResetTimer()
	for round := range b.N {
		b.StopTimer()
		env := s.environment(b, fmt.Sprintf("burst-%d", round))
		b.StartTimer()

		stop := s.sampleMemory()
		start := time.Now()
		errs := make([]error, deploys)
		var wg sync.WaitGroup
		for i := range deploys {
			wg.Go(func() { _, errs[i] = s.deploy(comp["id"].(string), env, fmt.Sprintf("m%d", i)) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			b.Fatal(err)
		}
		failed := s.waitDeployments(b, env, deploys)
		wall += time.Since(start)
		m := stop()
		peak.server, peak.postgres = max(peak.server, m.server), max(peak.postgres, m.postgres)
		failures += len(failed)
		for _, d := range failed {
			failedWhy = append(failedWhy, s.failure(b, d))
		}

		for i := range deploys {
			bare += cli.Deploy(b, fmt.Sprintf("bare-%d-%d", round, i))
		}
	}
	b.StopTimer()
	n := time.Duration(b.N)
	wallS, bareS := (wall / n).Seconds(), (bare / n).Seconds()
	b.Logf("%d deploys at once through nimbus serve (%s job workers, its default): all done in %.1f s, %d failed; "+
		"%d bare CLI ups in sequence: %.1f s; ratio %.2f",
		deploys, s.workers, wallS, failures/b.N, deploys, bareS, wallS/bareS)
	b.Logf("server RSS: idle %.1f MiB, peak %.1f MiB; its Postgres, PSS summed over its processes: idle %.1f MiB, peak %.1f MiB",
		mib(idle.server), mib(peak.server), mib(idle.postgres), mib(peak.postgres))
	if issues := s.logIssues(); issues != "" {
		b.Logf("server log warnings and errors: %s", issues)
	}
	b.ReportMetric(wallS, "wall-s")
	b.ReportMetric(float64(failures)/float64(b.N), "failures")
	b.ReportMetric(bareS, "bare-seq-s")
	b.ReportMetric(wallS/bareS, "ratio")
	b.ReportMetric(mib(idle.server), "idle-rss-MiB")
	b.ReportMetric(mib(peak.server), "peak-rss-MiB")
	b.ReportMetric(mib(idle.postgres), "pg-idle-pss-MiB")
	b.ReportMetric(mib(peak.postgres), "pg-peak-pss-MiB")
	if failures > 0 {
		// Nothing in these deploys asks for a failure: one that fails is a fault.
		b.Fatalf("%d deploys failed:\n%s", failures, strings.Join(failedWhy, "\n"))
	}
}

// benchServer is `nimbus serve` in a process of its own, with an API token of the first admin.
type benchServer struct {
	cmd     *exec.Cmd
	exited  chan struct{}
	url     string
	data    string
	logPath string
	token   string
	workers string // how many jobs it runs at once
	http    *http.Client
	// traceparent, when set, goes with each request: the server traces the requests it
	// samples, and the work they queue, in the caller's trace.
	traceparent string
}

type deployment struct{ id, op string }

// memory is resident memory in KiB.
type memory struct{ server, postgres int }

// program is the name of the program the process pid runs, "" while it has none to show.
func program(pid string) (string, error) {
	cmdline, err := os.ReadFile("/proc/" + pid + "/cmdline")
	if err != nil || len(cmdline) == 0 {
		return "", err
	}
	argv0, _, _ := bytes.Cut(cmdline, []byte{0})
	return filepath.Base(string(argv0)), nil
}

func pids() []string {
	proc, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer proc.Close()
	names, _ := proc.Readdirnames(-1)
	return slices.DeleteFunc(names, func(n string) bool { return n[0] < '0' || n[0] > '9' })
}

// elapsed is the time from one timestamp of an API object to another.
func elapsed(b *testing.B, obj map[string]any, from, to string) time.Duration {
	b.Helper()
	var at [2]time.Time
	for i, field := range []string{from, to} {
		s, _ := obj[field].(string)
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			b.Fatalf("%s of %v: %v", field, obj["id"], err)
		}
		at[i] = t
	}
	return at[1].Sub(at[0])
}

// percentile is the p-th of the durations in milliseconds, p from 0 to 1.
func percentile(d []time.Duration, p float64) float64 {
	d = slices.Sorted(slices.Values(d))
	return float64(d[int(p*float64(len(d)-1))].Microseconds()) / 1000
}

// BenchmarkProvisionEnvironment opens an environment from a template of three machines and
// measures the time until it is active, against the same three deployed with the bare pulumi
// CLI one after another, as provisioning deploys them: what the orchestration costs (planning,
// the deploy steps, the environment's steps between them) per component.
func BenchmarkProvisionEnvironment(b *testing.B) {
	const components = 3
	s := startBench(b)
	comp := s.machine(b)
	zone := s.call(b, "POST", "/api/v1/landing-zones", map[string]any{"name": "bench", "provider": "simcloud"})["id"].(string)
	var members []map[string]any
	for i := range components {
		name := fmt.Sprintf("m%d", i)
		members = append(members, map[string]any{"component_id": comp["id"], "name": name, "parameters": map[string]any{"name": name}})
	}
	template := s.call(b, "POST", "/api/v1/landing-zones/"+zone+"/templates", map[string]any{"name": "three", "mandatory_components": members})["id"].(string)
	s.call(b, "POST", "/api/v1/landing-zones/"+zone+"/publish", nil)
	cli := s.bareCLI(b, comp)
	var wall, bare time.Duration
	b.ResetTimer()
	for round := range b.N {
		b.StopTimer()
		tenant := s.call(b, "POST", "/api/v1/tenants", map[string]any{"name": fmt.Sprintf("t%d", round)})["id"].(string)
		b.StartTimer()
		start := time.Now()
		env := s.call(b, "POST", "/api/v1/environments", map[string]any{"tenant_id": tenant, "name": "dev", "template_id": template})["id"].(string)
		for {
			got := s.call(b, "GET", "/api/v1/environments/"+env, nil)
			if got["status"] == "active" {
				break
			}
			if got["status"] == "failed" {
				b.Fatalf("provisioning failed: %v", got["status_reason"])
			}
			if time.Since(start) > 5*time.Minute {
				b.Fatalf("provisioning did not end in 5 minutes: %v", got)
			}
			time.Sleep(20 * time.Millisecond)
		}
		wall += time.Since(start)

		for i := range components {
			bare += cli.Deploy(b, fmt.Sprintf("bare-%d-%d", round, i))
		}
	}
	b.StopTimer()
	n := time.Duration(b.N)
	wallMS, bareMS := float64((wall / n).Milliseconds()), float64((bare / n).Milliseconds())
	b.Logf("an environment of %d machines: open → active in %.0f ms; %d bare ups in sequence: %.0f ms; ratio %.2f, %.0f ms more per component",
		components, wallMS, components, bareMS, wallMS/bareMS, (wallMS-bareMS)/components)
	b.ReportMetric(wallMS, "provision-ms")
	b.ReportMetric(bareMS, "bare-seq-ms")
	b.ReportMetric(wallMS/bareMS, "ratio")
	b.ReportMetric((wallMS-bareMS)/components, "overhead-ms/component")
}
