package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// pulumiDir is the directory holding the pinned pulumi and pulumi-language-yaml binaries.
// Building them is the toolchain script's job; a test that cannot get them fails rather than
// skips, so a broken toolchain is never mistaken for a passing run.
func pulumiDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("NIMBUS_PULUMI_DIR")
	if dir == "" {
		// A cold build of the Pulumi CLI takes minutes; cached, this is instant.
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Minute)
		defer cancel()
		var stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, "../../scripts/pulumi-toolchain.sh")
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("scripts/pulumi-toolchain.sh: %v\n%s", err, stderr.Bytes())
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		dir = lines[len(lines)-1]
	}
	for _, bin := range []string{"pulumi", "pulumi-language-yaml"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			t.Fatalf("pulumi toolchain in %q: %v", dir, err)
		}
	}
	return dir
}

type machineSpec struct {
	cores         int
	image, failOn string
}

func writeProgram(t *testing.T, dir string, m machineSpec) {
	t.Helper()
	program := fmt.Sprintf(`name: simdemo
runtime: yaml
resources:
  disk:
    type: simcloud:index:Disk
    properties:
      name: data
      sizeGb: 20
  vm:
    type: simcloud:index:Machine
    properties:
      name: web
      cores: %d
      image: %q
      failOn: %q
      diskId: ${disk.id}
outputs:
  machineId: ${vm.id}
  ip: ${vm.ip}
`, m.cores, m.image, m.failOn)
	if err := os.WriteFile(filepath.Join(dir, "Pulumi.yaml"), []byte(program), 0o644); err != nil {
		t.Fatal(err)
	}
}

// providerDir holds the provider the tests that run the Pulumi CLI start, built once per test
// run because linking it takes seconds.
var providerDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "simcloud-provider-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	providerDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var buildProvider = sync.OnceValues(func() ([]byte, error) {
	return exec.Command("go", "build", "-o", filepath.Join(providerDir, "pulumi-resource-simcloud"), ".").CombinedOutput()
})

// pulumiCLI runs the real Pulumi CLI on a program in its own directory, with a fresh build
// of the provider, its own Pulumi home, file backend and cloud.
type pulumiCLI struct {
	t                     *testing.T
	toolchain             string
	env                   []string
	program, state, cloud string
}

func newPulumiCLI(t *testing.T) *pulumiCLI {
	t.Helper()
	toolchain := pulumiDir(t)
	tmp := t.TempDir()
	c := &pulumiCLI{
		t: t, toolchain: toolchain,
		program: filepath.Join(tmp, "program"), state: filepath.Join(tmp, "state"), cloud: filepath.Join(tmp, "cloud"),
	}
	for _, dir := range []string{c.program, c.state} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}

	if out, err := buildProvider(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// The caller's Pulumi settings (a backend URL, an access token, another home) and state
	// directory must not leak in. Pulumi finds the provider as pulumi-resource-simcloud on
	// PATH; the fresh build comes first so it wins over one that scripts/simcloud.sh may
	// have put into the toolchain directory.
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "PULUMI_") || strings.HasPrefix(kv, "SIMCLOUD_") || strings.HasPrefix(kv, "PATH=")
	})
	c.env = append(env,
		"PATH="+providerDir+string(os.PathListSeparator)+toolchain+string(os.PathListSeparator)+os.Getenv("PATH"),
		"PULUMI_HOME="+filepath.Join(tmp, "home"),
		"PULUMI_CONFIG_PASSPHRASE=test",
		"PULUMI_SKIP_UPDATE_CHECK=true",
		"PULUMI_DIY_BACKEND_NO_LEGACY_WARNING=true",
	)
	return c
}

func (c *pulumiCLI) run(args ...string) (string, error) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(c.toolchain, "pulumi"), append(args, "--non-interactive")...)
	cmd.Dir, cmd.Env = c.program, c.env
	start := time.Now()
	out, err := cmd.CombinedOutput()
	c.t.Logf("pulumi %s: %v", strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
	return string(out), err
}

func (c *pulumiCLI) must(args ...string) string {
	c.t.Helper()
	out, err := c.run(args...)
	if err != nil {
		c.t.Fatalf("pulumi %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// initStack creates the stack dev of the program already written, with its cloud in c.cloud.
func (c *pulumiCLI) initStack() {
	c.t.Helper()
	c.must("login", "file://"+c.state)
	c.must("stack", "init", "dev")
	c.must("config", "set", "simcloud:dir", c.cloud)
}

// TestPulumi drives the provider through the real Pulumi CLI and a YAML program, the way
// Nimbus deploys components.
func TestPulumi(t *testing.T) {
	c := newPulumiCLI(t)
	program, cloud, pulumi, mustPulumi := c.program, c.cloud, c.run, c.must
	up := func() { t.Helper(); mustPulumi("up", "--yes", "--skip-preview") }
	outputs := func() (machineID, ip string) {
		t.Helper()
		var o struct{ MachineID, IP string }
		if err := json.Unmarshal([]byte(mustPulumi("stack", "output", "--json")), &o); err != nil {
			t.Fatal(err)
		}
		return o.MachineID, o.IP
	}
	only := func(typ string) (id string, props map[string]any) {
		t.Helper()
		files := stored(t, cloud, typ)
		if len(files) != 1 {
			t.Fatalf("%s files: %v, want one", typ, files)
		}
		id = slices.Collect(maps.Keys(files))[0]
		return id, files[id]
	}

	writeProgram(t, program, machineSpec{cores: 2, image: "debian-12"})
	c.initStack()

	up()
	id, ip := outputs()
	diskID, _ := only("disk")
	machineID, vm := only("machine")
	if id != machineID || ip != "10.0.0.2" || vm["diskId"] != diskID || vm["cores"] != 2.0 || vm["status"] != "running" {
		t.Fatalf("outputs %s %s, stored machine %v (disk %s)", id, ip, vm, diskID)
	}

	writeProgram(t, program, machineSpec{cores: 4, image: "debian-12"})
	up()
	if id, _ := outputs(); id != machineID || stored(t, cloud, "machine")[machineID]["cores"] != 4.0 {
		t.Fatalf("after changing cores: machine %s, files %v; want %s updated in place", id, stored(t, cloud, "machine"), machineID)
	}

	writeProgram(t, program, machineSpec{cores: 4, image: "ubuntu-24.04"})
	up()
	// Replacement creates the new machine before deleting the old one, so it gets the next address.
	newID, ip := outputs()
	if id, vm := only("machine"); newID == machineID || id != newID || vm["image"] != "ubuntu-24.04" || ip != "10.0.0.3" {
		t.Fatalf("after changing image: machine %s (%s), files %v; want a new machine replacing %s", newID, ip, vm, machineID)
	}

	// A disk deleted behind Pulumi's back drops out of the state on refresh and comes back on up.
	if err := os.Remove(filepath.Join(cloud, "disk", diskID+".json")); err != nil {
		t.Fatal(err)
	}
	mustPulumi("refresh", "--yes", "--skip-preview")
	var export struct {
		Deployment struct{ Resources []struct{ Type, ID string } }
	}
	if err := json.Unmarshal([]byte(mustPulumi("stack", "export")), &export); err != nil {
		t.Fatal(err)
	}
	for _, r := range export.Deployment.Resources {
		if r.ID == diskID {
			t.Fatalf("disk %s still in the state after refresh", diskID)
		}
	}
	up()
	if newDiskID, _ := only("disk"); newDiskID == diskID || stored(t, cloud, "machine")[newID]["diskId"] != newDiskID {
		t.Fatalf("after up: disk %s, machine %v; want a new disk attached to %s", newDiskID, stored(t, cloud, "machine"), newID)
	}

	mustPulumi("destroy", "--yes", "--skip-preview")
	if disks, machines := stored(t, cloud, "disk"), stored(t, cloud, "machine"); len(disks)+len(machines) != 0 {
		t.Fatalf("left after destroy: %v %v", disks, machines)
	}

	// A failed create leaves what was created before it: the disk, for Nimbus to clean up.
	writeProgram(t, program, machineSpec{cores: 2, image: "debian-12", failOn: "create"})
	out, err := pulumi("up", "--yes", "--skip-preview")
	if err == nil || !strings.Contains(out, "simcloud: injected failure on create") {
		t.Fatalf("up with failOn create: err %v, want the injected failure in:\n%s", err, out)
	}
	only("disk")
	if machines := stored(t, cloud, "machine"); len(machines) != 0 {
		t.Fatalf("failed create left machines %v", machines)
	}
	mustPulumi("destroy", "--yes", "--skip-preview")
	if disks := stored(t, cloud, "disk"); len(disks) != 0 {
		t.Fatalf("left after destroy: %v", disks)
	}
}

// imageProgram creates a disk from the cloud's current debian-12 image.
const imageProgram = `name: simimage
runtime: yaml
variables:
  image:
    fn::invoke:
      function: simcloud:index:getImage
      arguments:
        family: debian-12
      return: id
resources:
  disk:
    type: simcloud:index:Disk
    properties:
      name: data
      image: ${image}
outputs:
  image: ${disk.image}
`

// startImageProgram is a stack of imageProgram; the function it returns is the one disk's ID
// and image as stored in the cloud.
func startImageProgram(t *testing.T) (*pulumiCLI, func() (id, image string)) {
	t.Helper()
	c := newPulumiCLI(t)
	if err := os.WriteFile(filepath.Join(c.program, "Pulumi.yaml"), []byte(imageProgram), 0o644); err != nil {
		t.Fatal(err)
	}
	c.initStack()
	return c, func() (string, string) {
		t.Helper()
		disks := stored(t, c.cloud, "disk")
		if len(disks) != 1 {
			t.Fatalf("disk files: %v, want one", disks)
		}
		id := slices.Collect(maps.Keys(disks))[0]
		image, _ := disks[id]["image"].(string)
		return id, image
	}
}

func TestPulumi_GetImageFeedsDisk(t *testing.T) {
	c, disk := startImageProgram(t)
	c.must("up", "--yes", "--skip-preview")
	firstID, image := disk()
	if image != "debian-12-v1" || !strings.Contains(c.must("stack", "output", "image"), "debian-12-v1") {
		t.Fatalf("on a fresh cloud the disk has image %q; want debian-12-v1", image)
	}

	// The cloud publishes a new image; the next up picks it and replaces the disk.
	if err := os.MkdirAll(filepath.Join(c.cloud, "images"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.cloud, "images", "debian-12"), []byte("debian-12-v2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.must("up", "--yes", "--skip-preview")
	if id, image := disk(); id == firstID || image != "debian-12-v2" {
		t.Fatalf("after a new image: disk %s with image %q; want a new disk replacing %s with debian-12-v2", id, image, firstID)
	}
}

// TestPulumi_NewImageViolatesSavedPlan shows what a deploy that applies a saved preview plan
// relies on: when the cloud changes between the preview and the apply, so that the program
// asks for something the preview did not show, the engine refuses to apply it.
func TestPulumi_NewImageViolatesSavedPlan(t *testing.T) {
	c, disk := startImageProgram(t)
	plan := filepath.Join(t.TempDir(), "plan.json")
	publish := func(id string) {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), filepath.Join(providerDir, "pulumi-resource-simcloud"), "image", "set", "debian-12", id)
		cmd.Env = append(os.Environ(), "SIMCLOUD_DIR="+c.cloud)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("image set: %v\n%s", err, out)
		}
	}

	c.must("preview", "--save-plan", plan)
	publish("debian-12-v2")
	out, err := c.run("up", "--yes", "--skip-preview", "--plan", plan)
	if err == nil || !strings.Contains(out, "violates plan") || !strings.Contains(out, "image[{debian-12-v1}!={debian-12-v2}]") {
		t.Fatalf("up of a plan made before the image changed: err %v, want the plan violated by the image in:\n%s", err, out)
	}
	if disks := stored(t, c.cloud, "disk"); len(disks) != 0 {
		t.Fatalf("the refused up created %v", disks)
	}

	// Nothing changes between this preview and its apply, so the plan holds.
	c.must("preview", "--save-plan", plan)
	c.must("up", "--yes", "--skip-preview", "--plan", plan)
	if _, image := disk(); image != "debian-12-v2" {
		t.Fatalf("disk image %q after applying the plan, want debian-12-v2", image)
	}
}
