package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"nimbus/app/kernel/freeport"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// process is a nimbus process of the built binary, so that the test can kill it outright.
type process struct {
	cmd *exec.Cmd
	url string
	out *bytes.Buffer
}

// startServer starts nimbus serve of bin on dataDir and addr, with env added to the test's own,
// and waits until it is ready.
func startServer(t *testing.T, bin, dataDir, addr string, env ...string) *process {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--addr", addr, "--data-dir", dataDir)
	cmd.Env = append(append(os.Environ(), "NIMBUS_ADMIN_PASSWORD="+adminPassword, "NIMBUS_ADMIN_EMAIL="+adminEmail), env...)
	out := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &process{cmd: cmd, url: "http://" + addr, out: out}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(s.url + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("nimbus did not become ready:\n%s", out)
	return nil
}

func (s *process) api(t *testing.T, token, method, path string, body any) map[string]any {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.url+path, rd)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 || json.Unmarshal(data, &out) != nil {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, data)
	}
	return out
}

// A server killed while an environment provisions, in the middle of its two machines' ups
// (they deploy at once): the restarted server resumes both, and the environment ends active
// with exactly one of each. The zone's policies check what each resumed up plans anew: an
// advisory policy that flags what is created flags the disks before the crash, and no longer
// once they exist.
func TestCrash_ServerKilledWhileProvisioningResumes(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("takes about two minutes: a dead worker's operation is taken over after a minute of silence")
	}
	bin := nimbusBinary(t)
	data := t.TempDir()
	first := startServer(t, bin, data, freeport.Addr(t))

	tokenOut, err := exec.Command(bin, "token", "create", "--email", adminEmail, "--name", "crash", "--data-dir", data).Output()
	if err != nil {
		t.Fatalf("token create: %v", err)
	}
	token := strings.TrimSpace(string(tokenOut))
	tenant := first.api(t, token, "POST", "/api/v1/tenants", map[string]any{"name": "Crash"})
	cat := first.api(t, token, "GET", "/api/v1/components?search=simcloud-machine", nil)
	comp := cat["components"].([]any)[0].(map[string]any)
	zone := first.api(t, token, "POST", "/api/v1/landing-zones", map[string]any{"name": "crash", "provider": "simcloud"})
	template := first.api(t, token, "POST", "/api/v1/landing-zones/"+zone["id"].(string)+"/templates", map[string]any{
		"name": "pair", "mandatory_components": []map[string]any{
			{"component_id": comp["id"], "name": "slow", "parameters": map[string]any{"name": "slow", "delay_ms": 8000}},
			{"component_id": comp["id"], "name": "quick", "parameters": map[string]any{"name": "quick", "delay_ms": 8000}},
		}})
	first.api(t, token, "POST", "/api/v1/landing-zones/"+zone["id"].(string)+"/policies", map[string]any{
		"name": "made", "level": "advisory", "message": "this is made anew", "expression": `resource.op != "create"`})
	first.api(t, token, "POST", "/api/v1/landing-zones/"+zone["id"].(string)+"/publish", nil)
	env := first.api(t, token, "POST", "/api/v1/environments", map[string]any{"tenant_id": tenant["id"], "name": "dev", "template_id": template["id"]})

	// The two deploy at once. Both ups have begun once both disks are recorded made: each
	// machine is waiting out its delay, so the kill finds no machine made and not yet recorded.
	cloud := filepath.Join(data, "simcloud")
	deadline := time.Now().Add(time.Minute)
	for disksMade(t, first, token) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("up never began:\n%s", first.out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.cmd.Wait()
	// The killed server's engine loses its output pipe and dies too, leaving its plugins to
	// init (they lead process groups of their own): stop them when the test is done.
	t.Cleanup(func() { killStrays(data) })

	second := startServer(t, bin, data, freeport.Addr(t))
	t.Cleanup(func() {
		_ = second.cmd.Process.Signal(syscall.SIGTERM)
		_ = second.cmd.Wait()
	})
	var got map[string]any
	deadline = time.Now().Add(4 * time.Minute)
	for {
		got = second.api(t, token, "GET", "/api/v1/environments/"+env["id"].(string), nil)
		if got["status"] == "active" || got["status"] == "failed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the provisioning did not resume: %v\n%s", got, second.out)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if got["status"] != "active" {
		t.Fatalf("after the crash the environment is %v\n%s", got, second.out)
	}
	machines, _ := filepath.Glob(filepath.Join(cloud, "machine", "*.json"))
	disks, _ := filepath.Glob(filepath.Join(cloud, "disk", "*.json"))
	if len(machines) != 2 || len(disks) != 2 {
		t.Fatalf("after the crash: %d machines and %d disks, want two of each", len(machines), len(disks))
	}
	ops := second.api(t, token, "GET", "/api/v1/operations?kind=deploy&status=succeeded", nil)
	if n := len(ops["operations"].([]any)); n != 2 {
		t.Fatalf("%d succeeded deploys, want one per machine; every operation: %v\n%s", n, second.api(t, token, "GET", "/api/v1/operations", nil), second.out)
	}
	for _, op := range ops["operations"].([]any) {
		check, ok := second.api(t, token, "GET", "/api/v1/operations/"+op.(map[string]any)["id"].(string), nil)["policy"].(map[string]any)
		if !ok {
			t.Fatalf("deploy %v has no policy check", op)
		}
		var flagged []string
		for _, v := range check["violations"].([]any) {
			flagged = append(flagged, v.(map[string]any)["type"].(string))
		}
		// The machine is flagged too, unless the killed engine lived long enough to make it.
		if slices.Contains(flagged, "simcloud:index:Disk") {
			t.Fatalf("the resumed up's plan flagged %v: the disk it had made is made anew: %v", flagged, check)
		}
	}
}

// disksMade counts the deploys running whose up has reported its disk made: the engine saves
// it in the stack's state as it reports it, long before the report reaches the API.
func disksMade(t *testing.T, s *process, token string) int {
	t.Helper()
	made := 0
	for _, op := range s.api(t, token, "GET", "/api/v1/operations?kind=deploy&status=running", nil)["operations"].([]any) {
		detail := s.api(t, token, "GET", "/api/v1/operations/"+op.(map[string]any)["id"].(string), nil)
		for _, r := range detail["resources"].([]any) {
			if r := r.(map[string]any); r["type"] == "simcloud:index:Disk" && r["status"] == "done" {
				made++
			}
		}
	}
	return made
}

// killStrays kills the processes whose environment names dir: plugins of an engine that died
// with the killed server.
func killStrays(dir string) {
	environs, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, path := range environs {
		env, err := os.ReadFile(path)
		if err != nil || !bytes.Contains(env, []byte(dir)) {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(path)))
		if err == nil && pid != os.Getpid() {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
