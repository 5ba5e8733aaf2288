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

// TestPulumi drives the provider through the real Pulumi CLI and a YAML program, the way
// Nimbus deploys components.
func TestPulumi(t *testing.T) {
	toolchain := pulumiDir(t)
	tmp := t.TempDir()
	bin, home, state, program, cloud := filepath.Join(tmp, "bin"), filepath.Join(tmp, "home"),
		filepath.Join(tmp, "state"), filepath.Join(tmp, "program"), filepath.Join(tmp, "cloud")
	for _, dir := range []string{program, state} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(bin, "pulumi-resource-simcloud"), ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Logf("go build of the provider: %v", time.Since(start).Round(time.Millisecond))

	// The caller's Pulumi settings (a backend URL, an access token, another home) and state
	// directory must not leak in. Pulumi finds the provider as pulumi-resource-simcloud on
	// PATH; the fresh build comes first so it wins over one that scripts/simcloud.sh may
	// have put into the toolchain directory.
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "PULUMI_") || strings.HasPrefix(kv, "SIMCLOUD_") || strings.HasPrefix(kv, "PATH=")
	})
	env = append(env,
		"PATH="+bin+string(os.PathListSeparator)+toolchain+string(os.PathListSeparator)+os.Getenv("PATH"),
		"PULUMI_HOME="+home,
		"PULUMI_CONFIG_PASSPHRASE=test",
		"PULUMI_SKIP_UPDATE_CHECK=true",
		"PULUMI_DIY_BACKEND_NO_LEGACY_WARNING=true",
	)
	pulumi := func(args ...string) (string, error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, filepath.Join(toolchain, "pulumi"), append(args, "--non-interactive")...)
		cmd.Dir, cmd.Env = program, env
		start := time.Now()
		out, err := cmd.CombinedOutput()
		t.Logf("pulumi %s: %v", strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
		return string(out), err
	}
	mustPulumi := func(args ...string) string {
		t.Helper()
		out, err := pulumi(args...)
		if err != nil {
			t.Fatalf("pulumi %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
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
	mustPulumi("login", "file://"+state)
	mustPulumi("stack", "init", "dev")
	mustPulumi("config", "set", "simcloud:dir", cloud)

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
