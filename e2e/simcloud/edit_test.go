package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

func TestEditCommand_ChangesAMachineBehindPulumisBack(t *testing.T) {
	dir := t.TempDir()
	p := &simcloud{dir: dir}
	k, err := kindOf("urn:pulumi:dev::p::" + machineToken + "::web")
	if err != nil {
		t.Fatal(err)
	}
	machine := resource.NewPropertyMapFromMap(map[string]any{"name": "web", "cores": 2, "memoryMb": 2048, "ip": "10.0.0.2", "status": "running"})
	if err := p.write(k, "m-0a0b0c0d", machine); err != nil {
		t.Fatal(err)
	}
	env := func(k string) string { return map[string]string{"SIMCLOUD_DIR": dir}[k] }
	if err := run([]string{"edit", "machine", "m-0a0b0c0d", "cores=4", "name=renamed"}, env); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "machine", "m-0a0b0c0d.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if got["cores"] != 4.0 || got["name"] != "renamed" || got["memoryMb"] != 2048.0 || got["ip"] != "10.0.0.2" || got["id"] != "m-0a0b0c0d" {
		t.Fatalf("after the edit the machine is %v; want 4 cores, renamed, the rest as it was", got)
	}

	for _, tc := range []struct {
		name    string
		args    []string
		env     func(string) string
		wantErr string
	}{
		{"usage", []string{"edit", "machine"}, env, "usage: pulumi-resource-simcloud edit"},
		{"unknown kind", []string{"edit", "router", "m-0a0b0c0d", "cores=4"}, env, "usage: pulumi-resource-simcloud edit"},
		{"no directory", []string{"edit", "machine", "m-0a0b0c0d", "cores=4"}, func(string) string { return "" }, "set the environment variable SIMCLOUD_DIR"},
		{"no such machine", []string{"edit", "machine", "m-ffffffff", "cores=4"}, env, "no machine m-ffffffff"},
		{"an ID outside the cloud", []string{"edit", "machine", "../../etc/passwd", "cores=4"}, env, "no machine ../../etc/passwd"},
		{"unknown property", []string{"edit", "machine", "m-0a0b0c0d", "gpus=1"}, env, "is not <property>=<value>"},
		{"output, not input", []string{"edit", "machine", "m-0a0b0c0d", "ip=10.9.9.9"}, env, "is not <property>=<value>"},
		{"not a number", []string{"edit", "machine", "m-0a0b0c0d", "cores=many"}, env, "must be a non-negative integer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := run(tc.args, tc.env)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("err = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}
