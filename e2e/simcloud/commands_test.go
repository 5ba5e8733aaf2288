package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

func TestConcurrentCreatesGetDistinctAddresses(t *testing.T) {
	first, dir := configured(t)
	// A second provider on the same directory stands in for another deployment's process.
	second := newProvider()
	if _, err := second.Configure(t.Context(), &pulumirpc.ConfigureRequest{Args: pstruct(t, map[string]any{"dir": dir})}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 10 {
		p := []*simcloud{first, second}[i%2]
		wg.Go(func() {
			if _, err := p.Create(t.Context(), &pulumirpc.CreateRequest{Urn: urn(machine), Properties: pstruct(t, map[string]any{"name": "web"})}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	ips := map[any]bool{}
	for _, m := range stored(t, dir, "machine") {
		ips[m["ip"]] = true
	}
	if len(ips) != 10 || !ips["10.0.0.2"] || !ips["10.0.0.11"] {
		t.Errorf("addresses %v, want 10.0.0.2 to 10.0.0.11", ips)
	}
}

func TestGetImage(t *testing.T) {
	p, dir := configured(t)
	invoke := func(args map[string]any) (map[string]any, map[string]string) {
		t.Helper()
		resp, err := p.Invoke(t.Context(), &pulumirpc.InvokeRequest{Tok: "simcloud:index:getImage", Args: pstruct(t, args)})
		if err != nil {
			t.Fatal(err)
		}
		failures := map[string]string{}
		for _, f := range resp.GetFailures() {
			failures[f.GetProperty()] = f.GetReason()
		}
		return pmap(t, resp.GetReturn()), failures
	}
	wantImage := func(family, id string) {
		t.Helper()
		got, failures := invoke(map[string]any{"family": family})
		if want := map[string]any{"id": id, "family": family}; !reflect.DeepEqual(got, want) || len(failures) != 0 {
			t.Errorf("getImage(%s) = %v, failures %v; want %v", family, got, failures, want)
		}
	}

	wantImage("debian-12", "debian-12-v1")
	if err := run([]string{"image", "set", "debian-12", "debian-12-v2"}, func(string) string { return dir }); err != nil {
		t.Fatal(err)
	}
	wantImage("debian-12", "debian-12-v2")
	wantImage("ubuntu-24.04", "ubuntu-24.04-v1")
	// The layout the package documents, for tests that write the file themselves.
	if err := os.WriteFile(filepath.Join(dir, "images", "ubuntu-24.04"), []byte("img-0042\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wantImage("ubuntu-24.04", "img-0042")

	for _, tc := range []struct {
		name         string
		args         map[string]any
		wantFailures map[string]string
	}{
		{name: "missing family", args: map[string]any{}, wantFailures: map[string]string{"family": "missing required property"}},
		{name: "family not a string", args: map[string]any{"family": 12}, wantFailures: map[string]string{"family": "must be a string"}},
		{name: "family outside the cloud", args: map[string]any{"family": "../disk"}, wantFailures: map[string]string{"family": "must match"}},
		{
			name: "unknown argument", args: map[string]any{"family": "debian-12", "arch": "arm64"},
			wantFailures: map[string]string{"arch": "unknown property of simcloud:index:getImage; it has family"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, failures := invoke(tc.args)
			if len(got) != 0 || len(failures) != len(tc.wantFailures) {
				t.Errorf("getImage(%v) = %v, failures %q; want failures %q", tc.args, got, failures, tc.wantFailures)
			}
			for prop, want := range tc.wantFailures {
				if !strings.Contains(failures[prop], want) {
					t.Errorf("failure for %s = %q, want it to contain %q", prop, failures[prop], want)
				}
			}
		})
	}

	if _, err := p.Invoke(t.Context(), &pulumirpc.InvokeRequest{Tok: "simcloud:index:getNothing", Args: pstruct(t, map[string]any{})}); err == nil {
		t.Error("invoking an unknown function succeeded")
	}
}

func TestImageCommand(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string
	}{
		{name: "usage", args: []string{"image", "get", "debian-12"}, env: map[string]string{"SIMCLOUD_DIR": dir}, wantErr: "usage: pulumi-resource-simcloud image set <family> <id>"},
		{name: "no directory", args: []string{"image", "set", "debian-12", "v2"}, wantErr: "set the environment variable SIMCLOUD_DIR"},
		{name: "family outside the cloud", args: []string{"image", "set", "../disk", "v2"}, env: map[string]string{"SIMCLOUD_DIR": dir}, wantErr: "must match"},
		{name: "empty id", args: []string{"image", "set", "debian-12", ""}, env: map[string]string{"SIMCLOUD_DIR": dir}, wantErr: "must be a non-empty word"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := run(tc.args, func(k string) string { return tc.env[k] })
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("err = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("failed commands left %v", entries)
	}
}

func TestMachineCommand_StopsAndStartsOutsideTheEngine(t *testing.T) {
	p, dir := configured(t)
	ctx := t.Context()
	env := func(k string) string { return map[string]string{"SIMCLOUD_DIR": dir}[k] }
	resp, err := p.Create(ctx, &pulumirpc.CreateRequest{Urn: urn(machine), Properties: pstruct(t, map[string]any{"name": "a", "cores": 2})})
	if err != nil {
		t.Fatal(err)
	}
	id, created := resp.GetId(), pmap(t, resp.GetProperties())

	if err := run([]string{"machine", "stop", id}, env); err != nil {
		t.Fatal(err)
	}
	if got := stored(t, dir, "machine")[id]; got["status"] != "stopped" || got["ip"] != "10.0.0.2" || got["id"] != id {
		t.Fatalf("after stop the file holds %v", got)
	}
	// A refresh reads the stopped machine as the same resource, its inputs unchanged.
	read, err := p.Read(ctx, &pulumirpc.ReadRequest{Id: id, Urn: urn(machine)})
	if err != nil {
		t.Fatal(err)
	}
	if read.GetId() != id || pmap(t, read.GetProperties())["status"] != "stopped" || pmap(t, read.GetInputs())["cores"] != 2.0 {
		t.Fatalf("read of a stopped machine = %v", read)
	}
	// An update changes what it was asked to and leaves the machine stopped.
	upd, err := p.Update(ctx, &pulumirpc.UpdateRequest{Id: id, Urn: urn(machine), Olds: pstruct(t, created),
		News: pstruct(t, map[string]any{"name": "a", "cores": 4})})
	if err != nil {
		t.Fatal(err)
	}
	if out := pmap(t, upd.GetProperties()); out["status"] != "stopped" || stored(t, dir, "machine")[id]["cores"] != 4.0 {
		t.Fatalf("after an update of a stopped machine: outputs %v", out)
	}
	if err := run([]string{"machine", "start", id}, env); err != nil {
		t.Fatal(err)
	}
	if got := stored(t, dir, "machine")[id]; got["status"] != "running" || got["cores"] != 4.0 {
		t.Fatalf("after start the file holds %v", got)
	}

	for _, tc := range []struct {
		name    string
		args    []string
		dir     string
		wantErr string
	}{
		{name: "usage", args: []string{"machine", "reboot", id}, dir: dir, wantErr: "usage: pulumi-resource-simcloud machine stop|start <id>"},
		{name: "no directory", args: []string{"machine", "stop", id}, wantErr: "set the environment variable SIMCLOUD_DIR"},
		{name: "no such machine", args: []string{"machine", "stop", "m-00000000"}, dir: dir, wantErr: "no machine m-00000000"},
		{name: "not a machine", args: []string{"machine", "stop", "d-12345678"}, dir: dir, wantErr: "is not a machine ID"},
		{name: "outside the cloud", args: []string{"machine", "stop", "../m-12345678"}, dir: dir, wantErr: "is not a machine ID"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := run(tc.args, func(k string) string { return map[string]string{"SIMCLOUD_DIR": tc.dir}[k] })
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("err = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

// An operator makes a machine outside any deployment: it gets an ID and the lowest free address
// as one the provider made would, with the defaults for what was not given; a machine without
// a name, or with an input no machine has, is refused.
func TestMachineCreateMakesAMachineByHand(t *testing.T) {
	_, dir := configured(t)
	id, err := createMachine(dir, []string{"name=legacy", "image=debian-12"})
	if err != nil {
		t.Fatal(err)
	}
	got := stored(t, dir, "machine")
	m := got[id]
	if len(got) != 1 || m == nil {
		t.Fatalf("the cloud holds %v, want %s alone", got, id)
	}
	if !validID.MatchString(id) || m["id"] != id || m["name"] != "legacy" || m["image"] != "debian-12" || m["cores"] != 2.0 ||
		m["ip"] != "10.0.0.2" || m["status"] != running {
		t.Fatalf("made %s as %v", id, m)
	}
	for _, args := range [][]string{{"image=debian-12"}, {"name=x", "colour=blue"}, {"name=x", "cores=many"}} {
		if _, err := createMachine(dir, args); err == nil {
			t.Errorf("machine create %v was not refused", args)
		}
	}
}
