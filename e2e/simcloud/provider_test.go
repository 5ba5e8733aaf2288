package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/types/known/structpb"
)

const (
	machine = "simcloud:index:Machine"
	disk    = "simcloud:index:Disk"
	network = "simcloud:index:Network"
)

func urn(typ string) string { return string(resource.CreateURN("r", typ, "", "proj", "stack")) }

func pstruct(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := plugin.MarshalProperties(resource.NewPropertyMapFromMap(m), plugin.MarshalOptions{KeepUnknowns: true})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func pmap(t *testing.T, s *structpb.Struct) map[string]any {
	t.Helper()
	m, err := plugin.UnmarshalProperties(s, plugin.MarshalOptions{KeepUnknowns: true})
	if err != nil {
		t.Fatal(err)
	}
	return m.Mappable()
}

func configured(t *testing.T) (*simcloud, string) {
	t.Helper()
	dir := t.TempDir()
	p := newProvider()
	if _, err := p.Configure(t.Context(), &pulumirpc.ConfigureRequest{Args: pstruct(t, map[string]any{"dir": dir})}); err != nil {
		t.Fatal(err)
	}
	return p, dir
}

// stored lists the JSON files of one resource type, by ID.
func stored(t *testing.T, dir, typ string) map[string]map[string]any {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, typ, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[strings.TrimSuffix(filepath.Base(f), ".json")] = m
	}
	return out
}

func TestConfigure(t *testing.T) {
	for _, tc := range []struct {
		name, config, env, want, wantErr string
	}{
		{name: "config", config: "/from/config", env: "/from/env", want: "/from/config"},
		{name: "environment", env: "/from/env", want: "/from/env"},
		{name: "neither", wantErr: "set the config value simcloud:dir or the environment variable SIMCLOUD_DIR"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("SIMCLOUD_DIR", tc.env)
			args := map[string]any{}
			if tc.config != "" {
				args["dir"] = tc.config
			}
			p := newProvider()
			_, err := p.Configure(t.Context(), &pulumirpc.ConfigureRequest{Args: pstruct(t, args)})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || p.dir != tc.want {
				t.Fatalf("dir = %q, err = %v; want %q", p.dir, err, tc.want)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	unknown := resource.MakeComputed(resource.NewProperty(""))
	for _, tc := range []struct {
		name, typ    string
		news         map[string]any
		wantInputs   map[string]any
		wantFailures map[string]string // property -> part of the reason
	}{
		{
			name: "machine defaults", typ: machine,
			news:       map[string]any{"name": "web"},
			wantInputs: map[string]any{"name": "web", "cores": 2.0, "memoryMb": 2048.0},
		},
		{
			name: "disk default", typ: disk,
			news:       map[string]any{"name": "data", "image": "debian-12"},
			wantInputs: map[string]any{"name": "data", "image": "debian-12", "sizeGb": 10.0},
		},
		{
			name: "unknown value passes", typ: machine,
			news: map[string]any{"name": "web", "cores": 1, "memoryMb": 512, "diskId": unknown},
		},
		{
			name: "unknown property", typ: machine,
			news:         map[string]any{"name": "web", "cpus": 4},
			wantFailures: map[string]string{"cpus": "unknown property of simcloud:index:Machine; it has name, cores,"},
		},
		{
			name: "missing required", typ: network,
			news:         map[string]any{"cidr": "10.0.0.0/16"},
			wantFailures: map[string]string{"name": "missing required property"},
		},
		{
			name: "wrong types", typ: machine,
			news: map[string]any{"name": 7, "cores": "two", "memoryMb": 1.5, "delayMs": -1},
			wantFailures: map[string]string{
				"name": "must be a string, not number", "cores": "non-negative integer",
				"memoryMb": "non-negative integer", "delayMs": "non-negative integer",
			},
		},
		{
			name: "failOn not an operation", typ: machine,
			news:         map[string]any{"name": "web", "failOn": "sometimes"},
			wantFailures: map[string]string{"failOn": `must be one of ["" "create" "update" "delete"]`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProvider()
			resp, err := p.Check(t.Context(), &pulumirpc.CheckRequest{Urn: urn(tc.typ), News: pstruct(t, tc.news)})
			if err != nil {
				t.Fatal(err)
			}
			failures := map[string]string{}
			for _, f := range resp.GetFailures() {
				failures[f.GetProperty()] = f.GetReason()
			}
			if len(failures) != len(tc.wantFailures) {
				t.Errorf("failures = %q, want %q", failures, tc.wantFailures)
			}
			for prop, want := range tc.wantFailures {
				if !strings.Contains(failures[prop], want) {
					t.Errorf("failure for %s = %q, want it to contain %q", prop, failures[prop], want)
				}
			}
			if got := pmap(t, resp.GetInputs()); tc.wantInputs != nil && !reflect.DeepEqual(got, tc.wantInputs) {
				t.Errorf("inputs = %v, want %v", got, tc.wantInputs)
			}
		})
	}
}

func TestDiff(t *testing.T) {
	vm := map[string]any{"name": "web", "cores": 2, "memoryMb": 2048, "image": "debian-12", "ip": "10.0.0.2", "status": "running"}
	with := func(m map[string]any, k string, v any) map[string]any {
		out := map[string]any{}
		for k, v := range m {
			if k != "ip" && k != "status" { // news are inputs only
				out[k] = v
			}
		}
		if v == nil {
			delete(out, k)
		} else {
			out[k] = v
		}
		return out
	}
	for _, tc := range []struct {
		name, typ     string
		olds, news    map[string]any
		wantDiffs     []string
		wantReplaces  []string
		wantNoChanges bool
	}{
		{name: "outputs alone are no change", typ: machine, olds: vm, news: with(vm, "name", "web"), wantNoChanges: true},
		{name: "cores in place", typ: machine, olds: vm, news: with(vm, "cores", 4), wantDiffs: []string{"cores"}},
		{name: "image replaces", typ: machine, olds: vm, news: with(vm, "image", "ubuntu"), wantDiffs: []string{"image"}, wantReplaces: []string{"image"}},
		{name: "removing image replaces", typ: machine, olds: vm, news: with(vm, "image", nil), wantDiffs: []string{"image"}, wantReplaces: []string{"image"}},
		{
			name: "cidr replaces", typ: network,
			olds: map[string]any{"name": "n", "cidr": "10.0.0.0/16"}, news: map[string]any{"name": "m", "cidr": "10.1.0.0/16"},
			wantDiffs: []string{"name", "cidr"}, wantReplaces: []string{"cidr"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProvider()
			resp, err := p.Diff(t.Context(), &pulumirpc.DiffRequest{Urn: urn(tc.typ), Olds: pstruct(t, tc.olds), News: pstruct(t, tc.news)})
			if err != nil {
				t.Fatal(err)
			}
			wantChanges := pulumirpc.DiffResponse_DIFF_SOME
			if tc.wantNoChanges {
				wantChanges = pulumirpc.DiffResponse_DIFF_NONE
			}
			if resp.GetChanges() != wantChanges || !reflect.DeepEqual(resp.GetDiffs(), tc.wantDiffs) ||
				!reflect.DeepEqual(resp.GetReplaces(), tc.wantReplaces) || resp.GetDeleteBeforeReplace() {
				t.Errorf("diff = %v, want changes %v, diffs %q, replaces %q", resp, wantChanges, tc.wantDiffs, tc.wantReplaces)
			}
		})
	}
}

func TestLifecycle(t *testing.T) {
	p, dir := configured(t)
	ctx := t.Context()
	create := func(props map[string]any) (string, map[string]any) {
		t.Helper()
		resp, err := p.Create(ctx, &pulumirpc.CreateRequest{Urn: urn(machine), Properties: pstruct(t, props)})
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetId(), pmap(t, resp.GetProperties())
	}

	preview, err := p.Create(ctx, &pulumirpc.CreateRequest{Urn: urn(machine), Properties: pstruct(t, map[string]any{"name": "a"}), Preview: true})
	if err != nil {
		t.Fatal(err)
	}
	previewed, err := plugin.UnmarshalProperties(preview.GetProperties(), plugin.MarshalOptions{KeepUnknowns: true})
	if err != nil {
		t.Fatal(err)
	}
	if preview.GetId() != "" || !previewed["ip"].IsComputed() || previewed["status"].StringValue() != "running" {
		t.Errorf("preview: id %q, outputs %v; want no id, an unknown ip and status running", preview.GetId(), previewed)
	}
	if files := stored(t, dir, "machine"); len(files) != 0 {
		t.Errorf("preview wrote %v", files)
	}

	idA, outA := create(map[string]any{"name": "a", "cores": 2})
	_, outB := create(map[string]any{"name": "b", "cores": 2})
	_, outC := create(map[string]any{"name": "c", "cores": 2, "ipAddress": "192.168.1.9"})
	if !strings.HasPrefix(idA, "m-") || len(idA) != len("m-12345678") {
		t.Errorf("id = %q, want m- and 8 hex digits", idA)
	}
	for _, c := range []struct {
		out    map[string]any
		wantIP string
	}{{outA, "10.0.0.2"}, {outB, "10.0.0.3"}, {outC, "192.168.1.9"}} {
		if c.out["ip"] != c.wantIP || c.out["status"] != "running" {
			t.Errorf("outputs %v, want ip %s and status running", c.out, c.wantIP)
		}
	}
	if got := stored(t, dir, "machine")[idA]; got["id"] != idA || got["ip"] != "10.0.0.2" || got["cores"] != 2.0 {
		t.Errorf("stored %v", got)
	}

	upd, err := p.Update(ctx, &pulumirpc.UpdateRequest{
		Id: idA, Urn: urn(machine), Olds: pstruct(t, outA), News: pstruct(t, map[string]any{"name": "a", "cores": 8}),
	})
	if err != nil {
		t.Fatal(err)
	}
	if out := pmap(t, upd.GetProperties()); out["ip"] != "10.0.0.2" || stored(t, dir, "machine")[idA]["cores"] != 8.0 {
		t.Errorf("after update: outputs %v, stored %v; want the same ip and 8 cores", out, stored(t, dir, "machine")[idA])
	}

	read, err := p.Read(ctx, &pulumirpc.ReadRequest{Id: idA, Urn: urn(machine)})
	if err != nil {
		t.Fatal(err)
	}
	if in := pmap(t, read.GetInputs()); read.GetId() != idA || in["cores"] != 8.0 || in["ip"] != nil || pmap(t, read.GetProperties())["ip"] != "10.0.0.2" {
		t.Errorf("read = %v", read)
	}

	for range 2 { // the second time the file is already gone
		if _, err := p.Delete(ctx, &pulumirpc.DeleteRequest{Id: idA, Urn: urn(machine), Properties: pstruct(t, outA)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := stored(t, dir, "machine")[idA]; ok {
		t.Error("file still there after delete")
	}
	if read, err := p.Read(ctx, &pulumirpc.ReadRequest{Id: idA, Urn: urn(machine)}); err != nil || read.GetId() != "" {
		t.Errorf("read of a deleted machine = %v, %v; want an empty ID", read, err)
	}

	// A program may get or import by any ID; one that walks out of the cloud's folder finds
	// nothing and deletes nothing.
	outside := filepath.Join(filepath.Dir(dir), "secret.json")
	if err := os.WriteFile(outside, []byte(`{"id":"x"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	escape := "../../" + strings.TrimSuffix(filepath.Base(outside), ".json")
	if read, err := p.Read(ctx, &pulumirpc.ReadRequest{Id: escape, Urn: urn(machine)}); err != nil || read.GetId() != "" {
		t.Errorf("read of %s = %v, %v; want nothing", escape, read, err)
	}
	if _, err := p.Delete(ctx, &pulumirpc.DeleteRequest{Id: escape, Urn: urn(machine), Properties: pstruct(t, outA)}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(outside); err != nil {
		t.Errorf("a delete by a made-up ID removed a file outside the cloud: %v", err)
	}
}

func TestFailOn(t *testing.T) {
	for _, op := range []string{"create", "update", "delete"} {
		t.Run(op, func(t *testing.T) {
			p, dir := configured(t)
			props := map[string]any{"name": "web", "failOn": op, "delayMs": 20}
			var id string
			if op != "create" {
				created, err := p.Create(t.Context(), &pulumirpc.CreateRequest{Urn: urn(machine), Properties: pstruct(t, map[string]any{"name": "web"})})
				if err != nil {
					t.Fatal(err)
				}
				id = created.GetId()
			}
			before := stored(t, dir, "machine")
			start := time.Now()
			var err error
			switch op {
			case "create":
				_, err = p.Create(t.Context(), &pulumirpc.CreateRequest{Urn: urn(machine), Properties: pstruct(t, props)})
			case "update":
				_, err = p.Update(t.Context(), &pulumirpc.UpdateRequest{Id: id, Urn: urn(machine), News: pstruct(t, props)})
			case "delete":
				_, err = p.Delete(t.Context(), &pulumirpc.DeleteRequest{Id: id, Urn: urn(machine), Properties: pstruct(t, props)})
			}
			if want := "simcloud: injected failure on " + op; err == nil || err.Error() != want {
				t.Errorf("err = %v, want %q", err, want)
			}
			if elapsed := time.Since(start); elapsed < 20*time.Millisecond {
				t.Errorf("failed after %v, before the delay was over", elapsed)
			}
			if after := stored(t, dir, "machine"); !reflect.DeepEqual(after, before) {
				t.Errorf("files changed from %v to %v", before, after)
			}
		})
	}
}

func TestDelayInterrupted(t *testing.T) {
	for _, tc := range []struct {
		name      string
		interrupt func(context.CancelFunc, *simcloud)
	}{
		{"context cancelled", func(cancel context.CancelFunc, _ *simcloud) { cancel() }},
		{"engine cancels", func(_ context.CancelFunc, p *simcloud) { p.Cancel(context.Background(), nil) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, dir := configured(t)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			time.AfterFunc(20*time.Millisecond, func() { tc.interrupt(cancel, p) })
			start := time.Now()
			_, err := p.Create(ctx, &pulumirpc.CreateRequest{Urn: urn(machine), Properties: pstruct(t, map[string]any{"name": "web", "delayMs": 60_000})})
			if err == nil || !strings.Contains(err.Error(), "interrupted") || time.Since(start) > 10*time.Second {
				t.Errorf("err = %v after %v, want an early interruption", err, time.Since(start))
			}
			if files := stored(t, dir, "machine"); len(files) != 0 {
				t.Errorf("interrupted create wrote %v", files)
			}
		})
	}
}
