package pulumix

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"nimbus/app/kernel/sandbox"
)

// envProbe asks the simulated cloud's test-only probe to print two variables of its own
// environment, the provider plugin's, and to report what it printed as the run's error, so
// that nothing of it is an output kept in the state.
const envProbe = `name: probe
runtime: yaml
variables:
  found:
    fn::invoke:
      function: simcloud:index:probe
      arguments:
        exec: /usr/bin/printenv PROXMOX_VE_ENDPOINT PROXMOX_VE_API_TOKEN
        report: error
      return: result
outputs:
  result: ${found}
`

// Credentials given in the environment reach the provider plugin the engine starts; no
// setting, state or work file keeps them, and what the engine says hides their secret. The probe runs a command, which only an unconfined
// engine may: the sandbox is off here, as it is for nothing but diagnosis.
func TestStack_EnvReachesTheProviderAndNothingKeepsIt(t *testing.T) {
	memory := t.TempDir()
	before := memoryDir
	memoryDir = memory
	t.Cleanup(func() { memoryDir = before })
	data, cloud := t.TempDir(), t.TempDir()
	r, err := NewRunner(toolchain(t), data, map[string]string{"SIMCLOUD_DIR": cloud, "SIMCLOUD_PROBES": "1"},
		CloudDirs(cloud), WithSandbox(sandbox.Off))
	if err != nil {
		t.Fatal(err)
	}
	const endpoint, token = "https://pve.example:8006", "nimbus@pve!deploy=canary-6d1f0e2b9a"
	st := Stack{Name: "d-env", Code: envProbe, Passphrase: "p",
		Env: map[string]string{"PROXMOX_VE_ENDPOINT": endpoint, "PROXMOX_VE_API_TOKEN": token}, Hidden: []string{"canary-6d1f0e2b9a"}}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	_, err = r.Up(ctx, st, nil)
	var engine *EngineError
	if !errors.As(err, &engine) {
		t.Fatalf("up: %v, want the probe's report as the engine's error", err)
	}
	// The probe printed both, and what the engine says hides the secret it echoed.
	if !strings.Contains(engine.Output, "printenv PROXMOX_VE_ENDPOINT PROXMOX_VE_API_TOKEN: "+endpoint) ||
		!strings.Contains(engine.Output, "nimbus@pve!deploy=[secret]") || strings.Contains(engine.Error(), "canary") {
		t.Fatalf("the provider's environment, as the probe found it:\n%s", engine.Output)
	}
	err = filepath.WalkDir(data, func(path string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		if body, _ := os.ReadFile(path); strings.Contains(string(body), "canary-6d1f0e2b9a") {
			t.Errorf("%s holds the token", strings.TrimPrefix(path, data))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(memory, "*")); len(left) > 0 {
		t.Errorf("the run's directory in memory outlived it: %v", left)
	}

	// The engine's own variables are Nimbus's.
	for _, name := range []string{"PULUMI_CONFIG_PASSPHRASE", "PULUMI_BACKEND_URL", "HOME", "LD_PRELOAD", "SSL_CERT_FILE", "path"} {
		st.Env = map[string]string{name: "x"}
		if _, err := r.Up(ctx, st, nil); err == nil || !strings.Contains(err.Error(), "not a provider's environment variable") {
			t.Errorf("Env %s: %v", name, err)
		}
	}
}
