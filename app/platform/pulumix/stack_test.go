package pulumix

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"nimbus/app/kernel/objstore"
	"nimbus/app/kernel/objstore/s3test"
)

// eachBackend runs a test against each kind of state backend: files under the data directory,
// and a bucket on a real S3-compatible server.
func eachBackend(t *testing.T, test func(t *testing.T, backend string)) {
	for _, b := range []string{"file", "s3"} {
		t.Run(b, func(t *testing.T) { test(t, b) })
	}
}

// stackRunner makes a Runner over a fresh data directory and backend, with its simulated cloud
// in a directory of its own so that tests can look at what the engine created.
func stackRunner(t *testing.T, backend string) (r *Runner, data, cloud string) {
	t.Helper()
	data, cloud = t.TempDir(), t.TempDir()
	var opts []Option
	if backend == "s3" {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		store, err := objstore.NewS3(ctx, s3test.Shared(t))
		if err != nil {
			t.Fatal(err)
		}
		opts = append(opts, WithSharedState(store))
	}
	r, err := NewRunner(toolchain(t), data, map[string]string{"SIMCLOUD_DIR": cloud}, append(opts, CloudDirs(cloud))...)
	if err != nil {
		t.Fatal(err)
	}
	return r, data, cloud
}

// machineStack is a deployment of the machine component's program.
func machineStack(t *testing.T, name string, config map[string]any) Stack {
	t.Helper()
	code, err := os.ReadFile("../../domain/component/testdata/machine.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return Stack{Name: name, Code: string(code), Config: config, Passphrase: "passphrase of " + name}
}

// cloudFiles lists the simulated cloud's resources of one kind ("disk", "machine").
func cloudFiles(t *testing.T, cloud, kind string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(cloud, kind, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func machineFile(t *testing.T, cloud, id string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(cloud, "machine", id+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func timed(t *testing.T, what string, f func() (Result, error)) (Result, error) {
	t.Helper()
	start := time.Now()
	res, err := f()
	t.Logf("%s: %s, changes %v", what, time.Since(start).Round(time.Millisecond), res.Changes)
	return res, err
}

func TestStack_UpUpdatePreviewDestroy(t *testing.T) { eachBackend(t, testUpUpdatePreviewDestroy) }

func testUpUpdatePreviewDestroy(t *testing.T, backend string) {
	r, data, cloud := stackRunner(t, backend)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	st := machineStack(t, "d-1", map[string]any{"name": "web", "cores": float64(2)})

	var progress bytes.Buffer
	res, err := timed(t, "first up", func() (Result, error) { return r.Up(ctx, st, &progress) })
	if err != nil {
		t.Fatalf("up: %v\n%s", err, progress.String())
	}
	id, _ := res.Outputs["machine_id"].(string)
	if id == "" || res.Outputs["ip_address"] == "" || res.Outputs["ip_address"] == nil {
		t.Fatalf("outputs %v", res.Outputs)
	}
	// The engine counts the stack itself as a resource, as its own summary does.
	if res.Changes["create"] != 3 {
		t.Errorf("changes %v: want the stack, the disk and the machine created", res.Changes)
	}
	if progress.Len() == 0 || res.Output == "" {
		t.Error("the engine's progress was not passed on")
	}
	if d := cloudFiles(t, cloud, "disk"); len(d) != 1 {
		t.Fatalf("disks %v", d)
	}
	if m := machineFile(t, cloud, id); m["cores"] != float64(2) || m["name"] != "web" {
		t.Fatalf("machine %v", m)
	}
	dir := filepath.Join(data, "stacks", "d-1")
	if info, err := os.Stat(dir); err != nil || info.Mode().Perm() != 0o700 {
		t.Fatalf("working directory: %v %v", info, err)
	}

	st.Config["cores"] = float64(4)
	res, err = timed(t, "preview", func() (Result, error) { return r.Preview(ctx, st, nil) })
	if err != nil {
		t.Fatal(err)
	}
	if res.Changes["update"] != 1 || res.Changes["same"] != 2 {
		t.Errorf("preview changes %v: want the machine updated, the stack and disk the same", res.Changes)
	}
	if m := machineFile(t, cloud, id); m["cores"] != float64(2) {
		t.Fatalf("the preview changed the machine: %v", m)
	}

	res, err = timed(t, "second up", func() (Result, error) { return r.Up(ctx, st, nil) })
	if err != nil {
		t.Fatal(err)
	}
	if res.Outputs["machine_id"] != id || res.Changes["update"] != 1 {
		t.Fatalf("second up: outputs %v, changes %v: want machine %s updated in place", res.Outputs, res.Changes, id)
	}
	if m := machineFile(t, cloud, id); m["cores"] != float64(4) {
		t.Fatalf("machine %v: want 4 cores", m)
	}

	state, err := r.Export(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(state) || !bytes.Contains(state, []byte(id)) {
		t.Fatalf("export is not the stack's state:\n%s", state)
	}
	// Imported back, as a restore does: the engine reads it from a file of Nimbus's.
	if err := r.Import(ctx, st, bytes.NewReader(state)); err != nil {
		t.Fatalf("import the export: %v", err)
	}

	res, err = timed(t, "preview destroy", func() (Result, error) { return r.PreviewDestroy(ctx, st, nil) })
	if err != nil {
		t.Fatal(err)
	}
	if res.Changes["delete"] != 3 {
		t.Errorf("preview destroy changes %v: want the stack, the disk and the machine to be deleted", res.Changes)
	}
	if m := machineFile(t, cloud, id); m["cores"] != float64(4) {
		t.Fatalf("the preview of the destroy changed the machine: %v", m)
	}

	res, err = timed(t, "destroy", func() (Result, error) { return r.Destroy(ctx, st, nil) })
	if err != nil {
		t.Fatal(err)
	}
	if res.Changes["delete"] != 3 {
		t.Errorf("destroy changes %v: want the stack, the disk and the machine deleted", res.Changes)
	}
	if left := append(cloudFiles(t, cloud, "disk"), cloudFiles(t, cloud, "machine")...); len(left) != 0 {
		t.Fatalf("destroy left %v", left)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the working directory is still there: %v", err)
	}
	res, err = timed(t, "destroy again", func() (Result, error) { return r.Destroy(ctx, st, nil) })
	if err != nil {
		t.Fatalf("destroying a destroyed stack: %v", err)
	}
	t.Logf("destroy again: %s", res.Output)
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the second destroy left a working directory: %v", err)
	}
	if res, err := r.PreviewDestroy(ctx, st, nil); err != nil || len(res.Changes) != 0 {
		t.Fatalf("preview of destroying a destroyed stack: %v %v, want nothing to delete", res.Changes, err)
	}
	if _, err := r.Export(ctx, st); !errors.Is(err, ErrNoStack) {
		t.Fatalf("export of a removed stack: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("export of a removed stack left a working directory: %v", err)
	}
}

// Nimbus records each operation itself: the engine's file backend keeps the stack's state and
// nothing that grows with every update (a history, timestamped copies of the state), which
// would be handed to the engine's account file by file before each operation.
func TestStack_StateKeepsNoHistory(t *testing.T) {
	r, data, _ := stackRunner(t, "file")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	st := machineStack(t, "d-history", map[string]any{"name": "first"})
	for _, name := range []string{"first", "second", "third"} {
		st.Config["name"] = name
		if _, err := r.Up(ctx, st, nil); err != nil {
			t.Fatal(err)
		}
	}
	var piled []string
	err := filepath.WalkDir(filepath.Join(data, "state", st.Name), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.Contains(p, "/history/") || strings.Contains(p, "/backups/")) {
			piled = append(piled, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(piled) > 0 {
		t.Fatalf("after three updates the stack's state directory keeps %d files of past updates: %v", len(piled), piled)
	}
}

func TestStack_EngineFailure(t *testing.T) { eachBackend(t, testEngineFailure) }

func testEngineFailure(t *testing.T, backend string) {
	r, _, cloud := stackRunner(t, backend)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	st := machineStack(t, "d-fail", map[string]any{"name": "web", "fail_on": "create"})

	_, err := timed(t, "failing up", func() (Result, error) { return r.Up(ctx, st, nil) })
	var engine *EngineError
	if !errors.As(err, &engine) {
		t.Fatalf("up: %v: want an EngineError", err)
	}
	if engine.Op != "up" || engine.ExitCode == 0 || !strings.Contains(engine.Output, "injected failure") {
		t.Fatalf("engine error %+v", engine)
	}
	t.Logf("error: %v", err)
	// What was created before the failure stays: undoing it is the caller's decision.
	if d, m := cloudFiles(t, cloud, "disk"), cloudFiles(t, cloud, "machine"); len(d) != 1 || len(m) != 0 {
		t.Fatalf("disks %v, machines %v: want the disk only", d, m)
	}
	if _, err := timed(t, "destroy", func() (Result, error) { return r.Destroy(ctx, st, nil) }); err != nil {
		t.Fatal(err)
	}
	if d := cloudFiles(t, cloud, "disk"); len(d) != 0 {
		t.Fatalf("destroy left %v", d)
	}
}

const secretProgram = `name: secret-test
runtime: yaml
config:
  name:
    type: string
  token:
    type: string
resources:
  disk:
    type: simcloud:index:Disk
    properties:
      name: ${name}-${token}
outputs:
  disk_id: ${disk.id}
  token: ${token}
`

func TestStack_SecretsStayEncrypted(t *testing.T) { eachBackend(t, testSecretsStayEncrypted) }

func testSecretsStayEncrypted(t *testing.T, backend string) {
	r, data, cloud := stackRunner(t, backend)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	canary := "canary-" + randomHex(8)
	st := Stack{Name: "d-secret", Code: secretProgram, Config: map[string]any{"name": "vault"},
		Secrets: map[string]string{"token": canary}, Passphrase: "passphrase of d-secret"}

	var progress bytes.Buffer
	res, err := timed(t, "up", func() (Result, error) { return r.Up(ctx, st, &progress) })
	if err != nil {
		t.Fatalf("up: %v\n%s", err, progress.String())
	}
	if res.Outputs["token"] != "[secret]" || res.Outputs["disk_id"] == "" {
		t.Fatalf("outputs %v: want the token masked", res.Outputs)
	}
	// The program did get the value: the simulated cloud stores what it was given.
	disks := cloudFiles(t, cloud, "disk")
	if len(disks) != 1 {
		t.Fatalf("disks %v", disks)
	}
	if b, _ := os.ReadFile(disks[0]); !bytes.Contains(b, []byte(canary)) {
		t.Fatalf("the program did not receive the secret: %s", b)
	}
	if strings.Contains(progress.String(), canary) || strings.Contains(res.Output, canary) {
		t.Fatal("the engine's output shows the secret")
	}
	// The working directory is a cache: without it, the stack's key comes back from the state,
	// and the secret is set again.
	if err := os.RemoveAll(filepath.Join(data, "stacks", st.Name)); err != nil {
		t.Fatal(err)
	}
	res, err = timed(t, "up without the working directory", func() (Result, error) { return r.Up(ctx, st, &progress) })
	if err != nil {
		t.Fatalf("up: %v\n%s", err, res.Output)
	}
	if res.Changes["create"] != 0 || res.Changes["delete"] != 0 {
		t.Fatalf("changes %v: want the disk kept", res.Changes)
	}
	settings, err := os.ReadFile(filepath.Join(data, "stacks", st.Name, "Pulumi."+st.Name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(settings, []byte("secure:")) {
		t.Fatalf("the secret is not stored encrypted:\n%s", settings)
	}
	// Nothing under the data directory — state, stack settings, plugin cache, logs — holds the
	// value in plain text.
	files := 0
	err = filepath.WalkDir(data, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		if bytes.Contains(b, []byte(canary)) {
			t.Errorf("%s holds the secret in plain text", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("searched %d files under the data directory", files)
	if files == 0 {
		t.Fatal("found no files to search")
	}
	// Nor does anything the backend keeps, wherever it keeps it.
	keys, err := bucketOf(t, r, st.Name).List(ctx, ".pulumi/")
	if err != nil {
		t.Fatal(err)
	}
	stacks := 0
	for _, k := range keys {
		if bytes.Contains(readBackendFile(t, r, st.Name, k), []byte(canary)) {
			t.Errorf("the backend's %s holds the secret in plain text", k)
		}
		if strings.HasPrefix(k, ".pulumi/stacks/") {
			stacks++
		}
	}
	t.Logf("searched %d files of the %s backend", len(keys), backend)
	if stacks == 0 {
		t.Fatalf("the backend holds no stack state: %v", keys)
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
