package pulumix

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"nimbus/app/kernel/objstore"
	"nimbus/app/kernel/objstore/s3test"
	"nimbus/app/kernel/sandbox"
)

// legacyUp deploys st the way Nimbus did before it named the project: the program itself as
// Pulumi.yaml, so that the project, the URNs and the path of the state carry the program's
// name, on the backend at url reached with env.
func legacyUp(t *testing.T, url string, env map[string]string, cloud string, st Stack) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "Pulumi.yaml"), []byte(st.Code), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := toolchain(t)
	environ := []string{"PATH=" + bin + ":" + os.Getenv("PATH"), "HOME=" + dir, "PULUMI_HOME=" + filepath.Join(dir, ".pulumi-home"),
		"PULUMI_BACKEND_URL=" + url, "PULUMI_CONFIG_PASSPHRASE=" + st.Passphrase, "SIMCLOUD_DIR=" + cloud,
		"PULUMI_SKIP_UPDATE_CHECK=true", "PULUMI_DIY_BACKEND_NO_LEGACY_WARNING=true"}
	for k, v := range env {
		environ = append(environ, k+"="+v)
	}
	run := func(args ...string) {
		cmd := exec.Command(filepath.Join(bin, "pulumi"), append([]string{"--non-interactive"}, args...)...)
		cmd.Dir, cmd.Env = dir, environ
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("pulumi %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("stack", "init", st.Name)
	for k, v := range st.Config {
		run("config", "set", k, v.(string), "--stack", st.Name)
	}
	run("up", "--yes", "--stack", st.Name)
}

// carriesOn previews a stack made before the change and finds every resource as it was, then
// destroys it.
func carriesOn(ctx context.Context, t *testing.T, r *Runner, st Stack) {
	t.Helper()
	res, err := r.Preview(ctx, st, nil)
	if err != nil {
		t.Fatalf("preview %s: %v\n%s", st.Name, err, res.Output)
	}
	if res.Changes["same"] != 3 || len(res.Changes) != 1 { // the stack, its disk and its machine
		t.Fatalf("%s under Nimbus's project: changes %v, want its resources as they were\n%s", st.Name, res.Changes, res.Output)
	}
	up, err := r.Up(ctx, st, nil)
	if err != nil || up.Changes["same"] != 3 || len(up.Changes) != 1 {
		t.Fatalf("up %s: %v, changes %v\n%s", st.Name, err, up.Changes, up.Output)
	}
	for _, p := range up.Drift {
		t.Errorf("drift after the move: %+v", p)
	}
	if _, err := r.Destroy(ctx, st, nil); err != nil {
		t.Fatalf("destroy %s: %v", st.Name, err)
	}
}

// emptyCloud fails the test when the cloud holds anything.
func emptyCloud(t *testing.T, cloud string) {
	t.Helper()
	if left := append(cloudFiles(t, cloud, "machine"), cloudFiles(t, cloud, "disk")...); len(left) != 0 {
		t.Fatalf("left in the cloud: %v", left)
	}
}

// Stacks that earlier versions kept in one file backend for all, under the program's own name,
// move into backends of their own under Nimbus's project, and carry on from the state they had.
func TestStack_SharedFileBackendIsSplitPerStack(t *testing.T) {
	data, cloud := t.TempDir(), t.TempDir()
	shared := filepath.Join(data, "state")
	if err := os.MkdirAll(shared, 0o700); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	stacks := []Stack{machineStack(t, "d-one", map[string]any{"name": "one"}), machineStack(t, "d-two", map[string]any{"name": "two"})}
	for _, st := range stacks {
		legacyUp(t, "file://"+shared, nil, cloud, st)
	}
	if _, err := os.Stat(filepath.Join(shared, ".pulumi", "stacks", "simcloud-machine", "d-one.json")); err != nil {
		t.Fatalf("the shared backend does not hold the stack where this test expects: %v", err)
	}
	r, err := NewRunner(toolchain(t), data, map[string]string{"SIMCLOUD_DIR": cloud}, CloudDirs(cloud))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(shared, ".pulumi")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the shared backend is still there: %v", err)
	}
	for _, st := range stacks {
		carriesOn(ctx, t, r, st)
	}
	emptyCloud(t, cloud)
	if entries, _ := os.ReadDir(shared); len(entries) != 0 {
		t.Fatalf("destroyed stacks left state behind: %v", entries)
	}
}

// A stack a replica kept in the shared bucket under the program's own name moves to Nimbus's
// key the first time a replica opens it, and carries on.
func TestStack_SharedBucketStackMovesToNimbussProject(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	store, err := objstore.NewS3(ctx, s3test.Shared(t))
	if err != nil {
		t.Fatal(err)
	}
	cloud := t.TempDir()
	st := machineStack(t, "d-legacy-"+randomHex(4), map[string]any{"name": "old"})
	legacyUp(t, store.BackendURL(), store.BackendEnv(), cloud, st)
	old := checkpointKey("simcloud-machine", st.Name)
	if _, err := get(ctx, store, old); err != nil {
		t.Fatalf("the bucket does not hold the stack where this test expects: %v", err)
	}
	r, err := NewRunner(toolchain(t), t.TempDir(), map[string]string{"SIMCLOUD_DIR": cloud}, WithSharedState(store), CloudDirs(cloud))
	if err != nil {
		t.Fatal(err)
	}
	// Reading the stack, without holding it, leaves the bucket as it was.
	res, err := r.Preview(ctx, st, nil)
	if err != nil || res.Changes["same"] != 3 || len(res.Changes) != 1 {
		t.Fatalf("preview: %v, changes %v\n%s", err, res.Changes, res.Output)
	}
	if _, err := get(ctx, store, old); err != nil {
		t.Fatalf("a preview moved the stack: %v", err)
	}
	// The first run that holds the stack moves it.
	st.Exclusive = true
	if res, err := r.Refresh(ctx, st, nil); err != nil {
		t.Fatalf("refresh: %v\n%s", err, res.Output)
	}
	if _, err := get(ctx, store, old); !errors.Is(err, objstore.ErrNotFound) {
		t.Fatalf("the stack is still under the program's name: %v", err)
	}
	moved, err := get(ctx, store, checkpointKey(project, st.Name))
	if err != nil || !strings.Contains(string(moved), "urn:pulumi:"+st.Name+"::nimbus::simcloud:index:Machine::machine") {
		t.Fatalf("the stack under Nimbus's project: %v\n%.400s", err, moved)
	}
	carriesOn(ctx, t, r, st)
	emptyCloud(t, cloud)
	if _, err := get(ctx, store, checkpointKey(project, st.Name)); !errors.Is(err, objstore.ErrNotFound) {
		t.Fatalf("the destroyed stack is still in the bucket: %v", err)
	}
}

// A program named after its provider's package, declaring that provider's settings in every
// section and spelling, sets none of them: the project is Nimbus's, and the program's config is
// never the CLI's. Unconfined, the simulated cloud's provider would write wherever its dir
// setting pointed; it writes to the cloud Nimbus gives it.
func TestStack_ProgramSetsNoProviderSetting(t *testing.T) {
	data, cloud, elsewhere := t.TempDir(), t.TempDir(), t.TempDir()
	r, err := NewRunner(toolchain(t), data, map[string]string{"SIMCLOUD_DIR": cloud}, CloudDirs(cloud), WithSandbox(sandbox.Off))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const network = `
resources:
  net:
    type: simcloud:index:Network
    properties:
      name: probe
      cidr: 10.0.0.0/24
`
	for name, sections := range map[string]string{
		"config": `config:
  simcloud:dir:
    type: string
    default: ` + elsewhere + `
  SimCloud:dir:
    default: ` + elsewhere + `
  dir:
    type: string
    default: ` + elsewhere + `
  Dir:
    type: string
    default: ` + elsewhere,
		"configuration": `configuration:
  simcloud:Dir:
    type: String
    default: ` + elsewhere + `
  DIR:
    Type: String
    Default: ` + elsewhere,
		"variables": `variables:
  simcloud:dir: ` + elsewhere + `
  dir: ` + elsewhere,
		"outputs": `outputs:
  simcloud:dir: ` + elsewhere + `
  dir: ` + elsewhere,
	} {
		for _, named := range []string{"simcloud", "SimCloud"} {
			st := Stack{Name: "d-" + name, Code: "name: " + named + "\nruntime: yaml\n" + sections + network, Passphrase: "p"}
			res, err := r.Up(ctx, st, nil)
			if err != nil {
				t.Fatalf("%s, named %s: up: %v\n%s", name, named, err, res.Output)
			}
			if got := cloudFiles(t, elsewhere, "network"); len(got) != 0 {
				t.Fatalf("%s, named %s: the program chose where the provider writes: %v", name, named, got)
			}
			if got := cloudFiles(t, cloud, "network"); len(got) != 1 {
				t.Fatalf("%s, named %s: the network is not in the cloud Nimbus gave: %v", name, named, got)
			}
			if settings, err := os.ReadFile(filepath.Join(data, "stacks", st.Name, "Pulumi.yaml")); err != nil || string(settings) != projectFile {
				t.Fatalf("the project file is not Nimbus's: %v\n%s", err, settings)
			}
			if _, err := r.Destroy(ctx, st, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestAdoptURNs_RenamesTheProjectOfTheStacksURNsOnly(t *testing.T) {
	in := `{"checkpoint":{"stack":"organization/old/d-1","latest":{"resources":[
{"urn":"urn:pulumi:d-1::old::pulumi:pulumi:Stack::old-d-1"},
{"urn":"urn:pulumi:d-1::old::pulumi:providers:simcloud::default","parent":"urn:pulumi:d-1::old::pulumi:pulumi:Stack::old-d-1"},
{"urn":"urn:pulumi:d-1::old::simcloud:index:Disk$simcloud:index:Part::p","provider":"urn:pulumi:d-1::old::pulumi:providers:simcloud::default::04da6b54",
 "dependencies":["urn:pulumi:d-1::old::simcloud:index:Disk::disk"],"outputs":{"n":1.50,"other":"urn:pulumi:d-2::old::x:y:Z::z"}}]}},
"resourcePlans":{"urn:pulumi:d-1::old::simcloud:index:Disk::disk":{}}}`
	out, err := adoptURNs([]byte(in), "d-1")
	if err != nil {
		t.Fatal(err)
	}
	got := string(out)
	for _, want := range []string{
		`"organization/nimbus/d-1"`,
		`"urn:pulumi:d-1::nimbus::pulumi:pulumi:Stack::nimbus-d-1"`,
		`"parent":"urn:pulumi:d-1::nimbus::pulumi:pulumi:Stack::nimbus-d-1"`,
		`"urn:pulumi:d-1::nimbus::simcloud:index:Disk$simcloud:index:Part::p"`,
		`"provider":"urn:pulumi:d-1::nimbus::pulumi:providers:simcloud::default::04da6b54"`,
		`["urn:pulumi:d-1::nimbus::simcloud:index:Disk::disk"]`,
		`"urn:pulumi:d-1::nimbus::simcloud:index:Disk::disk":{}`,
		`"other":"urn:pulumi:d-2::old::x:y:Z::z"`, // another stack's is left alone
		`"n":1.50`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("want %s in\n%s", want, got)
		}
	}
	if strings.Contains(got, "::old::pulumi") || strings.Contains(got, "d-1::old::simcloud") {
		t.Errorf("left the old project in\n%s", got)
	}
}

// What the engine says names no directory of the server: the stack's own is ".", the others
// are named by what they hold, in its progress, its errors and a program's outputs.
func TestStack_EngineOutputNamesNoServerPath(t *testing.T) {
	r, data, cloud := stackRunner(t, "file")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	code := "name: paths\nruntime: yaml\nresources:\n  net:\n    type: simcloud:index:Network\n    properties:\n      name: n\n      cidr: 10.0.0.0/24\n" +
		"outputs:\n  cwd: ${pulumi.cwd}\n  file: ${pulumi.cwd}/Main.yaml\n"
	var progress strings.Builder
	res, err := r.Up(ctx, Stack{Name: "d-paths", Code: code, Passphrase: "p"}, &progress)
	if err != nil {
		t.Fatalf("up: %v\n%s", err, res.Output)
	}
	if res.Outputs["cwd"] != "." || res.Outputs["file"] != "./Main.yaml" {
		t.Fatalf("outputs %v", res.Outputs)
	}
	// A resource's planned inputs too, which policies and the plan page read.
	named := strings.Replace(code, "name: n\n", "name: ${pulumi.cwd}/n\n", 1)
	preview, err := r.Preview(ctx, Stack{Name: "d-paths", Code: named, Passphrase: "p"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range preview.Planned {
		if p.Type == "simcloud:index:Network" && p.Inputs["name"] != "./n" {
			t.Fatalf("planned inputs %v", p.Inputs)
		}
	}
	bad := "name: paths\nruntime: yaml\nresources:\n  net:\n    type: simcloud:index:Netwerk\n"
	failed, err := r.Up(ctx, Stack{Name: "d-paths-2", Code: bad, Passphrase: "p"}, &progress)
	if err == nil {
		t.Fatal("an unknown type deployed")
	}
	said := progress.String() + res.Output + failed.Output + err.Error()
	for _, dir := range []string{data, cloud, r.bin, toolchain(t)} {
		if strings.Contains(said, dir) {
			t.Errorf("the engine's words name %s:\n%s", dir, said)
		}
	}
	if !strings.Contains(said, "<toolchain>/pulumi-resource-simcloud") {
		t.Errorf("the toolchain is not named as such:\n%s", said)
	}
}

// providerSettings lists the settings a provider plugin's schema declares.
func providerSettings(t *testing.T, plugin string) []string {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(filepath.Join(toolchain(t), "pulumi"), "package", "get-schema", plugin)
	cmd.Dir, cmd.Env = home, []string{"HOME=" + home, "PULUMI_HOME=" + home, "PULUMI_SKIP_UPDATE_CHECK=true", "PATH=" + os.Getenv("PATH")}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the schema of %s: %v", plugin, err)
	}
	var schema struct {
		Config struct {
			Variables map[string]any `json:"variables"`
		} `json:"config"`
	}
	if err := json.Unmarshal(out, &schema); err != nil {
		t.Fatal(err)
	}
	var names []string
	for k := range schema.Config.Variables {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// Every setting of every provider plugin the toolchain holds, given by a program named after
// its package — through config and configuration, as the package's key and as its own, in
// several spellings, and through variables and outputs — reaches the provider not at all:
// the provider's inputs in the plan are exactly what Nimbus set.
func TestStack_ProviderSettingsAreOnlyNimbuss(t *testing.T) {
	r, _, _ := stackRunner(t, "file")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	resources := map[string]string{
		"simcloud":   "  r:\n    type: simcloud:index:Network\n    properties:\n      name: n\n      cidr: 10.0.0.0/24\n",
		"kubernetes": "  r:\n    type: kubernetes:core/v1:ConfigMap\n    properties:\n      data:\n        a: b\n",
	}
	const given = "from-the-program"
	for pkg, resource := range resources {
		settings := providerSettings(t, filepath.Join(toolchain(t), "pulumi-resource-"+pkg))
		if len(settings) == 0 {
			t.Fatalf("%s declares no settings", pkg)
		}
		spell := func(s string, i int) string {
			switch i % 3 {
			case 1:
				return strings.ToUpper(s[:1]) + s[1:]
			case 2:
				return strings.ToUpper(s)
			}
			return s
		}
		var config, configuration, variables, outputs strings.Builder
		for i, s := range settings {
			fmt.Fprintf(&config, "  %s:%s:\n    type: string\n    default: %s\n  %s:\n    type: string\n    default: %s\n", spell(pkg, i), spell(s, i), given, spell(s, i+1), given)
			fmt.Fprintf(&configuration, "  %s:%s:\n    type: String\n    default: %s\n", spell(pkg, i+1), s, given)
			fmt.Fprintf(&variables, "  %s:%s: %s\n", pkg, s, given)
			fmt.Fprintf(&outputs, "  %s:%s: %s\n  %s: %s\n", pkg, s, given, s, given)
		}
		for section, body := range map[string]string{
			"config": "config:\n" + config.String(), "Configuration": "Configuration:\n" + configuration.String(),
			"variables": "variables:\n" + variables.String(), "outputs": "outputs:\n" + outputs.String(),
		} {
			st := Stack{Name: "d-" + pkg + "-" + strings.ToLower(section), Passphrase: "p",
				Code: "name: " + pkg + "\nruntime: yaml\n" + body + "resources:\n" + resource}
			if pkg == "kubernetes" {
				st.Settings = map[string]string{"kubernetes:namespace": "given-by-nimbus"}
			}
			res, err := r.Preview(ctx, st, nil)
			var provider *Planned
			for i, p := range res.Planned {
				if p.Type == "pulumi:providers:"+pkg {
					provider = &res.Planned[i]
				}
			}
			if provider == nil {
				t.Fatalf("%s through %s: no provider planned (%v)\n%s", pkg, section, err, res.Output)
			}
			inputs, _ := json.Marshal(provider.Inputs)
			if strings.Contains(string(inputs), given) {
				t.Errorf("%s through %s: the program set the provider's settings: %s", pkg, section, inputs)
			}
			if pkg == "kubernetes" && provider.Inputs["namespace"] != "given-by-nimbus" {
				t.Errorf("%s through %s: Nimbus's setting did not reach the provider: %s", pkg, section, inputs)
			}
		}
	}
}
