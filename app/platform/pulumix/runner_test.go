package pulumix

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// toolchain returns the pinned toolchain directory with the simulated cloud's provider built
// into a temporary directory beside it on PATH.
func toolchain(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("NIMBUS_PULUMI_DIR")
	if dir == "" {
		out, err := exec.Command("../../../scripts/pulumi-toolchain.sh").Output()
		if err != nil {
			t.Fatalf("the Pulumi toolchain is needed: go tool task toolchain (%v)", err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		dir = lines[len(lines)-1]
	}
	if _, err := os.Stat(filepath.Join(dir, "pulumi-resource-simcloud")); err == nil {
		return dir // the Taskfile built the simulated cloud beside the toolchain
	}
	plugins := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(plugins, "pulumi-resource-simcloud"), "../../../e2e/simcloud")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the simulated cloud: %v\n%s", err, out)
	}
	t.Setenv("PATH", plugins+string(os.PathListSeparator)+os.Getenv("PATH"))
	return dir
}

const network = `name: check-test
runtime: yaml
config:
  name:
    type: string
resources:
  net:
    type: simcloud:index:Network
    properties:
      name: ${name}
      cidr: 10.1.0.0/24
outputs:
  id: ${net.id}
`

func TestCheck_PreviewsAValidProgram(t *testing.T) {
	r, err := NewRunner(toolchain(t), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	res, err := r.Check(ctx, Stack{Code: network, Config: map[string]any{"name": "probe"}}, &progress)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Succeeded || res.Changes["create"] < 1 {
		t.Fatalf("check failed or planned nothing: %+v\nprogress:\n%s", res, progress.String())
	}
	if entries, _ := os.ReadDir(r.workDir()); len(entries) != 0 {
		t.Fatalf("the scratch workspace was left behind: %v", entries)
	}
}

// A program's secret config reaches the check as a secret, as a deploy sets it: the check's
// output never shows it, where the same value given plainly is shown.
func TestCheck_SetsSecretsAsSecretConfig(t *testing.T) {
	r, err := NewRunner(toolchain(t), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code := strings.Replace(network, "resources:", "  password:\n    type: string\nresources:", 1)
	code += "  shown: ${password}\n"
	var plainOut bytes.Buffer
	plain, err := r.Check(ctx, Stack{Code: code, Config: map[string]any{"name": "probe", "password": "hunter2"}}, &plainOut)
	if err != nil || !plain.Succeeded {
		t.Fatalf("check with a plain input: %+v %v", plain, err)
	}
	if !strings.Contains(plainOut.String(), "hunter2") {
		t.Fatalf("the plain value is not in the check's output, so its absence below proves nothing:\n%s", plainOut.String())
	}
	var secretOut bytes.Buffer
	res, err := r.Check(ctx, Stack{Code: code, Config: map[string]any{"name": "probe"}, Secrets: map[string]string{"password": "hunter2"}}, &secretOut)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Succeeded {
		t.Fatalf("the check of a program with a secret input failed:\n%s", res.Output)
	}
	if strings.Contains(secretOut.String()+res.Output, "hunter2") {
		t.Fatalf("the secret input shows in the check's output:\n%s", secretOut.String())
	}
}

func TestCheck_LeavesTheSharedBackendAlone(t *testing.T) {
	r, _, _ := stackRunner(t, "s3")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := r.Check(ctx, Stack{Code: network, Config: map[string]any{"name": "probe"}}, &bytes.Buffer{})
	if err != nil || !res.Succeeded {
		t.Fatalf("check: %+v %v", res, err)
	}
	// Every replica shares the bucket: a throwaway stack there would be seen by all of them.
	keys, err := r.shared.List(ctx, ".pulumi/")
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 0 {
		t.Fatalf("the check wrote into the shared backend: %v", keys)
	}
}
