package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"nimbus/app/kernel/freeport"
	"nimbus/db/localpg"
)

// built is nimbus as users run it, built once for every test that starts it: linking it is
// most of a build, and the tests that kill servers would each pay for it.
var built struct {
	once     sync.Once
	dir, bin string
	err      error
}

// nimbusBinary returns nimbus as users run it.
func nimbusBinary(t testing.TB) string {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "nimbus-e2e-bin-"); built.err != nil {
			return
		}
		built.bin = filepath.Join(built.dir, "nimbus")
		if out, err := exec.Command("go", "build", "-o", built.bin, "nimbus").CombinedOutput(); err != nil {
			built.err = fmt.Errorf("%w\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatalf("build nimbus: %v", built.err)
	}
	return built.bin
}

// withBinary removes the binary the tests built once they have run.
type withBinary struct{ m *testing.M }

func (w withBinary) Run() int {
	defer func() {
		if built.dir != "" {
			os.RemoveAll(built.dir)
		}
	}()
	return w.m.Run()
}

// serveBinary starts nimbus serve on a data directory of its own, with its embedded Postgres,
// and waits until it is ready. Its log is kept where the test can read it while it runs.
// exited is closed once the process has exited; then cmd.ProcessState may be read.
func serveBinary(t *testing.T, bin, data string, env ...string) (cmd *exec.Cmd, url string, exited <-chan struct{}, logs *lockedBuffer) {
	t.Helper()
	url = "http://" + freeport.Addr(t)
	cmd = exec.Command(bin, "serve", "--addr", strings.TrimPrefix(url, "http://"), "--data-dir", data)
	cmd.Env = append(append(os.Environ(), "NIMBUS_ADMIN_PASSWORD="+adminPassword, "NIMBUS_ADMIN_EMAIL="+adminEmail), env...)
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-done
		killStrays(data)
		if t.Failed() {
			t.Logf("server log:\n%s", out)
		}
	})
	if !pollUntil(time.Minute, func() bool { return httpStatus(t, url+"/readyz", "") == http.StatusOK }) {
		t.Fatalf("nimbus did not become ready:\n%s", out)
	}
	return cmd, url, done, out
}

// pollUntil polls cond until it holds or the budget is spent, and says whether it held.
func pollUntil(budget time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(budget)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

// httpCall sends a request with the token and returns its status, headers and body; a request
// that gets no answer at all is status 0.
func httpCall(t *testing.T, method, url, token string, body any) (int, http.Header, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return 0, nil, nil
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, data
}

func httpStatus(t *testing.T, url, token string) int {
	t.Helper()
	code, _, _ := httpCall(t, "GET", url, token, nil)
	return code
}

func postmasterPID(t *testing.T, pgdata string) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(pgdata, "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(data), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// TestDatabase_KilledPostgresComesBackUnderARunningServer kills the embedded Postgres outright
// under a running server. While it is away every request is answered 503 with Retry-After,
// pages and API alike, and /healthz still says the process is alive; then the server brings
// it back by itself: the API answers, River leads and listens again, and a deploy succeeds,
// all from the same process.
func TestDatabase_KilledPostgresComesBackUnderARunningServer(t *testing.T) {
	t.Parallel()
	bin := nimbusBinary(t)
	data := t.TempDir()
	_, url, exited, logs := serveBinary(t, bin, data)
	tokenOut, err := exec.Command(bin, "token", "create", "--email", adminEmail, "--name", "outage", "--data-dir", data).Output()
	if err != nil {
		t.Fatalf("token create: %v", err)
	}
	token := strings.TrimSpace(string(tokenOut))
	api := func(method, path string, body any) map[string]any {
		t.Helper()
		code, _, got := httpCall(t, method, url+path, token, body)
		var out map[string]any
		if code >= 300 || json.Unmarshal(got, &out) != nil {
			t.Fatalf("%s %s: %d %s", method, path, code, got)
		}
		return out
	}
	tenant := api("POST", "/api/v1/tenants", map[string]any{"name": "Outage"})
	env := api("POST", "/api/v1/environments", map[string]any{"tenant_id": tenant["id"], "name": "dev"})
	machine := api("GET", "/api/v1/components?search=simcloud-machine", nil)["components"].([]any)[0].(map[string]any)

	s := newSession(t, newBrowser(t), &app{url: url})
	s.signIn(adminEmail, adminPassword)

	// Postgres refuses a data directory others may read, so every restart fails until the
	// test makes it private again: the outage lasts as long as the test needs to look at it.
	pgdata := filepath.Join(data, "postgres", "pgdata")
	if err := os.Chmod(pgdata, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(pgdata, 0o700) })
	if err := syscall.Kill(postmasterPID(t, pgdata), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}

	var (
		code   int
		header http.Header
		body   []byte
	)
	if !pollUntil(time.Minute, func() bool {
		code, header, body = httpCall(t, "GET", url+"/api/v1/tenants", token, nil)
		return code == http.StatusServiceUnavailable
	}) {
		t.Fatalf("with postgres killed the API answers %d %s, want 503", code, body)
	}
	if header.Get("Retry-After") == "" || !strings.Contains(string(body), "database") {
		t.Fatalf("the API's 503 has Retry-After %q and says %s", header.Get("Retry-After"), body)
	}
	if got := s.open("/deployments"); got != http.StatusServiceUnavailable {
		t.Fatalf("with postgres killed the deployments page answers %d, want 503", got)
	}
	if msg := s.text(".error-page p"); !strings.Contains(msg, "database") || !strings.Contains(msg, "try again") {
		t.Fatalf("the page says %q", msg)
	}
	if got := httpStatus(t, url+"/healthz", ""); got != http.StatusOK {
		t.Fatalf("/healthz answers %d while postgres is being restarted, want 200: the process is alive", got)
	}
	if got := httpStatus(t, url+"/readyz", ""); got != http.StatusServiceUnavailable {
		t.Fatalf("/readyz answers %d without a database, want 503", got)
	}

	if err := os.Chmod(pgdata, 0o700); err != nil {
		t.Fatal(err)
	}
	if !pollUntil(2*time.Minute, func() bool { return httpStatus(t, url+"/api/v1/tenants", token) == http.StatusOK }) {
		t.Fatalf("the API did not come back: %d", httpStatus(t, url+"/api/v1/tenants", token))
	}
	if got := s.open("/deployments"); got != http.StatusOK {
		t.Fatalf("after the restart the deployments page answers %d", got)
	}
	if got := httpStatus(t, url+"/readyz", ""); got != http.StatusOK {
		t.Fatalf("after the restart /readyz answers %d", got)
	}

	// River holds leadership again and its notifier listens, as does the hub of live pages.
	cluster, err := localpg.Start(t.Context(), localpg.Options{Dir: filepath.Join(data, "postgres")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cluster.Close() })
	conn, err := pgx.Connect(t.Context(), cluster.URL(localpg.DatabaseName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	var back time.Time
	if err := conn.QueryRow(t.Context(), "SELECT now()").Scan(&back); err != nil {
		t.Fatal(err)
	}
	listening := func(pattern string) bool {
		var n int
		err := conn.QueryRow(t.Context(), "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'nimbus' AND query LIKE $1", pattern).Scan(&n)
		return err == nil && n > 0
	}
	if !pollUntil(time.Minute, func() bool { return listening(`LISTEN "%river_%`) }) {
		t.Fatal("River's notifier does not listen again")
	}
	if !pollUntil(time.Minute, func() bool { return listening(`LISTEN "nimbus_operation"`) }) {
		t.Fatal("the live pages' notifications are not listened for again")
	}
	// A leader renews its lease every few seconds: one that runs past the restart by more than
	// a lease's length was renewed or won since.
	if !pollUntil(time.Minute, func() bool {
		var renewed bool
		err := conn.QueryRow(t.Context(), "SELECT EXISTS (SELECT 1 FROM river_leader WHERE expires_at > $1::timestamptz + interval '16 seconds')", back).Scan(&renewed)
		return err == nil && renewed
	}) {
		t.Fatal("no River client leads since the restart")
	}

	started := api("POST", "/api/v1/deployments", map[string]any{
		"component_id": machine["id"], "environment_id": env["id"], "name": "after", "parameters": map[string]any{"name": "after-1"},
	})
	opID := started["operation"].(map[string]any)["id"].(string)
	var op map[string]any
	if !pollUntil(engineWait, func() bool {
		op = api("GET", "/api/v1/operations/"+opID, nil)
		return op["status"] != "queued" && op["status"] != "running"
	}) || op["status"] != "succeeded" {
		t.Fatalf("the deploy after the restart: %v", op)
	}

	select {
	case <-exited:
		t.Fatal("nimbus exited")
	default:
	}
	if n := strings.Count(logs.String(), "postgres stopped unexpectedly"); n != 1 {
		t.Fatalf("the crash was logged %d times", n)
	}
	if strings.Contains(logs.String(), `msg="request failed"`) {
		t.Fatal("a request failed with a 500 during the outage")
	}
}

// TestDatabase_ServerExitsWhenPostgresCannotComeBack gives a server a short restart budget and
// a Postgres that cannot start again: it exits with an error, for whatever runs it to start it
// afresh.
func TestDatabase_ServerExitsWhenPostgresCannotComeBack(t *testing.T) {
	t.Parallel()
	bin := nimbusBinary(t)
	data := t.TempDir()
	server, _, exited, logs := serveBinary(t, bin, data, "NIMBUS_DATABASE_RESTART_TIMEOUT=3s")
	pgdata := filepath.Join(data, "postgres", "pgdata")
	if err := os.Chmod(pgdata, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(pgdata, 0o700) })
	if err := syscall.Kill(postmasterPID(t, pgdata), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(2 * time.Minute):
		t.Fatal("nimbus did not exit")
	}
	if server.ProcessState.ExitCode() == 0 || !strings.Contains(logs.String(), "nimbus: embedded database: postgres stopped and could not be restarted") {
		t.Fatalf("nimbus exited with %d, and not saying why", server.ProcessState.ExitCode())
	}
}
