package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"nimbus/app/kernel/freeport"
	"nimbus/e2e/barecli"
)

// startBench builds nimbus and serves it on a fresh data directory, with the number of job
// workers it has by default. Everything it starts is stopped when the benchmark ends.
func startBench(b *testing.B, env ...string) *benchServer {
	b.Helper()
	dir := b.TempDir()
	bin := filepath.Join(dir, "nimbus")
	// Built as the Taskfile and the image build it: its memory is the one users see.
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, "nimbus")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build nimbus: %v\n%s", err, out)
	}
	help, _ := exec.Command(bin, "serve", "-h").CombinedOutput()
	workers := regexp.MustCompile(`NIMBUS_JOB_WORKERS, default "(\d+)"`).FindSubmatch(help)
	if workers == nil {
		b.Fatalf("serve -h does not say how many job workers it runs:\n%s", help)
	}
	addr := freeport.Addr(b)
	s := &benchServer{exited: make(chan struct{}), url: "http://" + addr, data: filepath.Join(dir, "data"),
		logPath: filepath.Join(dir, "server.log"), workers: string(workers[1]), http: &http.Client{Timeout: time.Minute}}
	logFile, err := os.Create(s.logPath)
	if err != nil {
		b.Fatal(err)
	}
	defer logFile.Close() // the server holds its own descriptor
	s.cmd = exec.Command(bin, "serve", "--addr", addr, "--data-dir", s.data)
	s.cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "NIMBUS_JOB_WORKERS=") }),
		append([]string{"NIMBUS_ADMIN_PASSWORD=" + adminPassword, "NIMBUS_ADMIN_EMAIL=" + adminEmail}, env...)...)
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	if err := s.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	go func() { _ = s.cmd.Wait(); close(s.exited) }()
	b.Cleanup(s.stop)

	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if resp, err := s.http.Get(s.url + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-s.exited:
			b.Fatalf("nimbus serve exited:\n%s", s.logTail())
		default:
		}
		if time.Now().After(deadline) {
			b.Fatalf("nimbus did not become ready in a minute:\n%s", s.logTail())
		}
	}
	out, err := exec.Command(bin, "token", "create", "--email", adminEmail, "--name", "bench", "--data-dir", s.data).Output()
	if err != nil {
		b.Fatalf("token create: %v", err)
	}
	s.token = strings.TrimSpace(string(out))
	return s
}

// stop asks the server to shut down as an operator would, then removes whatever a server that
// did not stop cleanly leaves behind: its engines' plugins and its Postgres.
func (s *benchServer) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(time.Minute): // the jobs' grace period is 30 s
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	killStrays(s.data)
	pidFile := filepath.Join(s.data, "postgres", "pgdata", "postmaster.pid")
	if pid := postmaster(pidFile); pid > 0 {
		_ = syscall.Kill(pid, syscall.SIGINT) // Postgres's fast shutdown
		for deadline := time.Now().Add(30 * time.Second); postmaster(pidFile) > 0 && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// postmaster is the pid of the live Postgres that pidFile names, or 0.
func postmaster(pidFile string) int {
	content, err := os.ReadFile(pidFile)
	if err != nil {
		return 0
	}
	line, _, _ := bytes.Cut(content, []byte("\n"))
	pid, err := strconv.Atoi(string(line))
	if err != nil {
		return 0
	}
	// A file left by a crash may name a pid taken since by another process.
	if cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err != nil || !bytes.Contains(cmdline, []byte("postgres")) {
		return 0
	}
	return pid
}

func (s *benchServer) do(method, path string, body any) (map[string]any, error) {
	var rd io.Reader
	if body != nil {
		data, _ := json.Marshal(body)
		rd = bytes.NewReader(data)
	}
	req, _ := http.NewRequest(method, s.url+path, rd)
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Content-Type", "application/json")
	if s.traceparent != "" {
		req.Header.Set("traceparent", s.traceparent)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if resp.StatusCode >= 300 || json.Unmarshal(data, &out) != nil {
		return nil, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, data)
	}
	return out, nil
}

func (s *benchServer) call(b *testing.B, method, path string, body any) map[string]any {
	b.Helper()
	out, err := s.do(method, path, body)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// machine is the shipped simcloud-machine component.
func (s *benchServer) machine(b *testing.B) map[string]any {
	b.Helper()
	found := s.call(b, "GET", "/api/v1/components?search=simcloud-machine", nil)["components"].([]any)
	if len(found) != 1 {
		b.Fatalf("%d components named simcloud-machine", len(found))
	}
	return found[0].(map[string]any)
}

// bareCLI readies the bare pulumi CLI to deploy the latest version of comp on a file backend
// of its own.
func (s *benchServer) bareCLI(b *testing.B, comp map[string]any) *barecli.CLI {
	version := s.call(b, "GET", fmt.Sprintf("/api/v1/components/%s/versions/%v", comp["id"], comp["latest_version"]), nil)
	return barecli.New(b, os.Getenv("NIMBUS_PULUMI_DIR"), version["code"].(string), "file://"+b.TempDir(), nil)
}

// environment creates a tenant and an environment in it, and returns the environment's id.
func (s *benchServer) environment(b *testing.B, name string) string {
	b.Helper()
	tenant := s.call(b, "POST", "/api/v1/tenants", map[string]any{"name": name})
	return s.call(b, "POST", "/api/v1/environments", map[string]any{"tenant_id": tenant["id"], "name": name})["id"].(string)
}

func (s *benchServer) deploy(component, env, name string) (deployment, error) {
	r, err := s.do("POST", "/api/v1/deployments", map[string]any{
		"component_id": component, "environment_id": env, "name": name, "parameters": map[string]any{"name": name},
	})
	if err != nil {
		return deployment{}, err
	}
	return deployment{id: r["deployment"].(map[string]any)["id"].(string), op: r["operation"].(map[string]any)["id"].(string)}, nil
}

func (s *benchServer) mustSucceed(b *testing.B, op string) map[string]any {
	b.Helper()
	for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		got := s.call(b, "GET", "/api/v1/operations/"+op, nil)
		switch got["status"] {
		case "succeeded":
			return got
		case "failed", "cancelled":
			b.Fatalf("operation %s %s: %v", op, got["status"], got["error"])
		}
	}
	b.Fatalf("operation %s did not end in 3 minutes", op)
	return nil
}

// waitDeployments polls the environment's deployments until n of them are deployed or failed,
// and returns the failed ones. One listing per poll: the benchmark should not load the server
// it measures with a request per deployment.
func (s *benchServer) waitDeployments(b *testing.B, env string, n int) []string {
	b.Helper()
	for deadline := time.Now().Add(20 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		var done int
		var failed []string
		for _, d := range s.call(b, "GET", "/api/v1/deployments?environment_id="+env, nil)["deployments"].([]any) {
			d := d.(map[string]any)
			switch d["status"] {
			case "deployed":
				done++
			case "failed":
				done++
				failed = append(failed, d["id"].(string))
			}
		}
		if done == n {
			return failed
		}
	}
	b.Fatalf("the deployments did not all end in 20 minutes:\n%s", s.logTail())
	return nil
}

// failure says why the deployment's last operation failed.
func (s *benchServer) failure(b *testing.B, dep string) string {
	ops := s.call(b, "GET", "/api/v1/operations?deployment_id="+dep, nil)["operations"].([]any)
	if len(ops) == 0 {
		return dep + ": no operation"
	}
	return fmt.Sprintf("%s: %v", dep, ops[0].(map[string]any)["error"])
}

func mib(kib int) float64 { return float64(kib) / 1024 }

// memory reads the server's resident memory, and the proportional memory of its Postgres:
// its processes share their buffers, which a sum of their RSS would count once per process.
func (s *benchServer) memory() memory {
	m := memory{server: procKiB(s.cmd.Process.Pid, "status", "VmRSS:")}
	pm := postmaster(filepath.Join(s.data, "postgres", "pgdata", "postmaster.pid"))
	if pm == 0 {
		return m
	}
	m.postgres = procKiB(pm, "smaps_rollup", "Pss:")
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, path := range stats {
		stat, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		// The fields after the parenthesised command are the state, then the parent's pid.
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pm) {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(path)))
			m.postgres += procKiB(pid, "smaps_rollup", "Pss:")
		}
	}
	return m
}

// procKiB reads a field in kB from /proc/<pid>/<file>, or 0 once the process is gone.
func procKiB(pid int, file, field string) int {
	content, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, file))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(content)) {
		if v, ok := strings.CutPrefix(line, field); ok {
			kib, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return kib
		}
	}
	return 0
}

// sampleMemory samples memory every 100 ms until the returned func is called, which returns
// the highest readings.
func (s *benchServer) sampleMemory() func() memory {
	done, peak := make(chan struct{}), make(chan memory)
	go func() {
		var p memory
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			m := s.memory()
			p.server, p.postgres = max(p.server, m.server), max(p.postgres, m.postgres)
			select {
			case <-done:
				peak <- p
				return
			case <-tick.C:
			}
		}
	}()
	return func() memory { close(done); return <-peak }
}

// logIssues counts the server's warnings and errors by message.
func (s *benchServer) logIssues() string {
	f, err := os.Open(s.logPath)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	issue := regexp.MustCompile(`level=(WARN|ERROR) msg=("(?:[^"\\]|\\.)*"|\S+)`)
	counts := map[string]int{}
	lines := bufio.NewScanner(f)
	lines.Buffer(nil, 1<<20)
	for lines.Scan() {
		if m := issue.FindStringSubmatch(lines.Text()); m != nil {
			counts[m[1]+" "+m[2]]++
		}
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		out = append(out, fmt.Sprintf("%s ×%d", k, counts[k]))
	}
	return strings.Join(out, "; ")
}

// logTail is the end of the server's log, for a failure's message.
func (s *benchServer) logTail() string {
	data, _ := os.ReadFile(s.logPath)
	return string(data[max(0, len(data)-8000):])
}
