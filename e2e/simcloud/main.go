// Command pulumi-resource-simcloud is a Pulumi resource provider for a simulated cloud whose
// resources (networks, disks, machines) are JSON files in a state directory: <dir>/<type>/<id>.json.
// It is a test fixture and demo target for Nimbus: deployments need no cloud account, their
// effects can be checked by looking at files, and machines can be told to be slow or to fail.
//
// The cloud also publishes images, which programs look up with the function
// simcloud:index:getImage (fn::invoke in YAML) as they would a real cloud's latest image. The
// current image of a family is the file <dir>/images/<family>, holding the image's ID and
// optionally a newline; a family without a file answers <family>-v1. Publishing a new image
// between a preview and its apply is how tests make the cloud change under a saved plan: write
// the file, or run
//
//	SIMCLOUD_DIR=<dir> pulumi-resource-simcloud image set <family> <id>
//
// Machines have a power state (status: running or stopped) that an operator changes outside
// any deployment, which is what Nimbus's cloud poller watches for:
//
//	SIMCLOUD_DIR=<dir> pulumi-resource-simcloud machine stop <id>
//	SIMCLOUD_DIR=<dir> pulumi-resource-simcloud machine start <id>
//
// A machine made by hand, outside any deployment (which Nimbus's discovery finds unmanaged),
// is made with the machine command too; it prints the new machine's ID:
//
//	SIMCLOUD_DIR=<dir> pulumi-resource-simcloud machine create name=legacy image=debian-12
//
// Deleting a machine by hand is removing its file, <dir>/machine/<id>.json.
//
// A resource changed by hand, outside Pulumi (drift), is one edited in place:
//
//	SIMCLOUD_DIR=<dir> pulumi-resource-simcloud edit machine <id> cores=4
//
// Pulumi finds it as an ambient plugin: an executable named pulumi-resource-simcloud on PATH
// (scripts/simcloud.sh puts one beside the pinned CLI). Pulumi warns "using
// pulumi-resource-simcloud from $PATH" on every run; installing it into the plugin cache
// instead (pulumi plugin install resource simcloud 0.1.0 --file <binary>) is silent.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/provider"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"
)

const version = "0.1.0"

func main() {
	if err := run(os.Args[1:], os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// run serves the engine, which starts the provider with flags and its own address, unless the
// arguments are a command that changes the cloud from outside.
func run(args []string, getenv func(string) string) error {
	if len(args) > 0 && args[0] == "image" {
		return imageCommand(args[1:], getenv("SIMCLOUD_DIR"))
	}
	if len(args) > 0 && args[0] == "machine" {
		return machineCommand(args[1:], getenv("SIMCLOUD_DIR"))
	}
	if len(args) > 0 && args[0] == "edit" {
		return editCommand(args[1:], getenv("SIMCLOUD_DIR"))
	}
	return provider.Main("simcloud", func(*provider.HostClient) (pulumirpc.ResourceProviderServer, error) {
		return newProvider(), nil
	})
}

type simcloud struct {
	pulumirpc.UnimplementedResourceProviderServer

	dir string

	// cancelled is closed by Cancel. The engine calls providers with a context that is never
	// cancelled and reports an interrupted deployment through Cancel instead.
	cancelled  chan struct{}
	cancelOnce sync.Once
}

func newProvider() *simcloud { return &simcloud{cancelled: make(chan struct{})} }

func unmarshal(s *structpb.Struct, allowUnknowns bool) (resource.PropertyMap, error) {
	return plugin.UnmarshalProperties(s, plugin.MarshalOptions{
		KeepUnknowns: true, RejectUnknowns: !allowUnknowns, SkipNulls: true,
	})
}

func marshal(m resource.PropertyMap) (*structpb.Struct, error) {
	return plugin.MarshalProperties(m, plugin.MarshalOptions{KeepUnknowns: true, SkipNulls: true})
}

func (p *simcloud) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: version}, nil
}

func (p *simcloud) GetSchema(context.Context, *pulumirpc.GetSchemaRequest) (*pulumirpc.GetSchemaResponse, error) {
	schema, err := json.Marshal(packageSchema())
	if err != nil {
		return nil, err
	}
	return &pulumirpc.GetSchemaResponse{Schema: string(schema)}, nil
}

func (p *simcloud) CheckConfig(_ context.Context, req *pulumirpc.CheckRequest) (*pulumirpc.CheckResponse, error) {
	news, err := unmarshal(req.GetNews(), true)
	if err != nil {
		return nil, err
	}
	var failures []*pulumirpc.CheckFailure
	if dir, ok := news["dir"]; ok && !dir.IsString() && !dir.ContainsUnknowns() {
		failures = append(failures, &pulumirpc.CheckFailure{Property: "dir", Reason: "must be a string"})
	}
	return &pulumirpc.CheckResponse{Inputs: req.GetNews(), Failures: failures}, nil
}

// DiffConfig treats a new state directory as an in-place change: whoever moves it is
// expected to move the files along, so nothing needs to be replaced.
func (p *simcloud) DiffConfig(_ context.Context, req *pulumirpc.DiffRequest) (*pulumirpc.DiffResponse, error) {
	olds, err := unmarshal(req.GetOlds(), true)
	if err != nil {
		return nil, err
	}
	news, err := unmarshal(req.GetNews(), true)
	if err != nil {
		return nil, err
	}
	if olds["dir"].DeepEquals(news["dir"]) {
		return &pulumirpc.DiffResponse{Changes: pulumirpc.DiffResponse_DIFF_NONE}, nil
	}
	return &pulumirpc.DiffResponse{Changes: pulumirpc.DiffResponse_DIFF_SOME, Diffs: []string{"dir"}}, nil
}

func (p *simcloud) Configure(_ context.Context, req *pulumirpc.ConfigureRequest) (*pulumirpc.ConfigureResponse, error) {
	args, err := unmarshal(req.GetArgs(), true)
	if err != nil {
		return nil, err
	}
	p.dir = os.Getenv("SIMCLOUD_DIR")
	if dir := args["dir"]; dir.IsString() && dir.StringValue() != "" {
		p.dir = dir.StringValue()
	}
	if p.dir == "" {
		return nil, errors.New("simcloud: no state directory: set the config value simcloud:dir or the environment variable SIMCLOUD_DIR")
	}
	// Without SupportsPreview the engine would not call Create and Update during previews.
	return &pulumirpc.ConfigureResponse{SupportsPreview: true}, nil
}

func (p *simcloud) Cancel(context.Context, *emptypb.Empty) (*emptypb.Empty, error) {
	p.cancelOnce.Do(func() { close(p.cancelled) })
	return &emptypb.Empty{}, nil
}

func (p *simcloud) Check(_ context.Context, req *pulumirpc.CheckRequest) (*pulumirpc.CheckResponse, error) {
	k, err := kindOf(req.GetUrn())
	if err != nil {
		return nil, err
	}
	news, err := unmarshal(req.GetNews(), true)
	if err != nil {
		return nil, err
	}
	failures := check(k.token, k.inputs, news)
	inputs, err := marshal(news)
	if err != nil {
		return nil, err
	}
	return &pulumirpc.CheckResponse{Inputs: inputs, Failures: failures}, nil
}

func (p *simcloud) Diff(_ context.Context, req *pulumirpc.DiffRequest) (*pulumirpc.DiffResponse, error) {
	k, err := kindOf(req.GetUrn())
	if err != nil {
		return nil, err
	}
	olds, err := unmarshal(req.GetOlds(), true)
	if err != nil {
		return nil, err
	}
	news, err := unmarshal(req.GetNews(), true)
	if err != nil {
		return nil, err
	}
	diffs, replaces := k.diff(olds, news)
	changes := pulumirpc.DiffResponse_DIFF_NONE
	if len(diffs) > 0 {
		changes = pulumirpc.DiffResponse_DIFF_SOME
	}
	return &pulumirpc.DiffResponse{Changes: changes, Diffs: diffs, Replaces: replaces, DeleteBeforeReplace: false}, nil
}

func (p *simcloud) Create(ctx context.Context, req *pulumirpc.CreateRequest) (*pulumirpc.CreateResponse, error) {
	k, err := kindOf(req.GetUrn())
	if err != nil {
		return nil, err
	}
	news, err := unmarshal(req.GetProperties(), req.GetPreview())
	if err != nil {
		return nil, err
	}
	var id string
	if !req.GetPreview() {
		if err := p.simulate(ctx, news, "create"); err != nil {
			return nil, err
		}
		id = k.idPrefix + "-" + randomHex()
		unlock, err := p.lock()
		if err != nil {
			return nil, err
		}
		defer unlock()
	}
	outs, err := p.apply(k, id, news, nil, req.GetPreview())
	if err != nil {
		return nil, err
	}
	return &pulumirpc.CreateResponse{Id: id, Properties: outs}, nil
}

func (p *simcloud) Update(ctx context.Context, req *pulumirpc.UpdateRequest) (*pulumirpc.UpdateResponse, error) {
	k, err := kindOf(req.GetUrn())
	if err != nil {
		return nil, err
	}
	olds, err := unmarshal(req.GetOlds(), true)
	if err != nil {
		return nil, err
	}
	news, err := unmarshal(req.GetNews(), req.GetPreview())
	if err != nil {
		return nil, err
	}
	if !req.GetPreview() {
		if err := p.simulate(ctx, news, "update"); err != nil {
			return nil, err
		}
		unlock, err := p.lock()
		if err != nil {
			return nil, err
		}
		defer unlock()
	}
	outs, err := p.apply(k, req.GetId(), news, olds, req.GetPreview())
	if err != nil {
		return nil, err
	}
	return &pulumirpc.UpdateResponse{Properties: outs}, nil
}

// lock makes picking a free address and writing the file that claims it one step, among
// the goroutines of one provider (the engine creates resources in parallel) and among
// providers (each deployment starts its own, and several may share a directory). An flock
// excludes other open files even within a process, so it covers both.
func (p *simcloud) lock() (unlock func(), err error) {
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(p.dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil // closing releases the lock
}

// apply computes the outputs and, unless previewing, stores them.
func (p *simcloud) apply(k *resourceKind, id string, news, olds resource.PropertyMap, preview bool) (*structpb.Struct, error) {
	outs := news.Copy()
	if k.token == machineToken {
		ip, err := p.machineIP(news, olds, preview)
		if err != nil {
			return nil, err
		}
		outs["ip"] = ip
		// A new machine runs; an update leaves its power state as the cloud has it.
		status := running
		switch {
		case olds == nil:
		case !preview:
			status = p.currentPower(k, id) // under the lock, so no stop in between is lost
		case olds["status"].IsString():
			status = olds["status"].StringValue()
		}
		outs["status"] = resource.NewProperty(status)
	}
	if !preview {
		if err := p.write(k, id, outs); err != nil {
			return nil, err
		}
	}
	return marshal(outs)
}

// machineIP is the requested address, else the one the machine already has (an update must
// not renumber it), else the lowest free one, so a fresh directory hands out the same
// addresses in the same order every time.
func (p *simcloud) machineIP(news, olds resource.PropertyMap, preview bool) (resource.PropertyValue, error) {
	if ip, ok := requestedIP(news); ok {
		return ip, nil
	}
	if _, requested := requestedIP(olds); olds["ip"].IsString() && !requested {
		return olds["ip"], nil
	}
	if preview {
		return resource.MakeComputed(resource.NewProperty("")), nil
	}
	used := map[string]bool{}
	files, err := filepath.Glob(filepath.Join(p.dir, "machine", "*.json"))
	if err != nil {
		return resource.PropertyValue{}, err
	}
	for _, f := range files {
		var m struct{ IP string }
		data, err := os.ReadFile(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted since the Glob: deletes do not wait for the lock
		} else if err != nil {
			return resource.PropertyValue{}, err
		}
		if err := json.Unmarshal(data, &m); err != nil {
			return resource.PropertyValue{}, fmt.Errorf("simcloud: %s: %w", f, err)
		}
		used[m.IP] = true
	}
	for i := range 253 * 256 {
		if ip := fmt.Sprintf("10.0.%d.%d", i/253, i%253+2); !used[ip] {
			return resource.NewProperty(ip), nil
		}
	}
	return resource.PropertyValue{}, errors.New("simcloud: no free address left in 10.0.0.0/16")
}

// requestedIP reports the ipAddress input, treating "" as absent because programs that make
// the address optional through a config value with a default pass "" rather than nothing.
func requestedIP(props resource.PropertyMap) (resource.PropertyValue, bool) {
	ip := props["ipAddress"]
	return ip, ip.ContainsUnknowns() || ip.IsString() && ip.StringValue() != ""
}

func (p *simcloud) Read(_ context.Context, req *pulumirpc.ReadRequest) (*pulumirpc.ReadResponse, error) {
	k, err := kindOf(req.GetUrn())
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(p.path(k, req.GetId()))
	if errors.Is(err, fs.ErrNotExist) {
		// An empty ID tells the engine the resource is gone, so a refresh drops it from the state.
		return &pulumirpc.ReadResponse{}, nil
	} else if err != nil {
		return nil, err
	}
	var stored map[string]any
	if err := json.Unmarshal(data, &stored); err != nil {
		return nil, fmt.Errorf("simcloud: %s: %w", p.path(k, req.GetId()), err)
	}
	delete(stored, "id")
	outs := resource.NewPropertyMapFromMap(stored)
	inputs := resource.PropertyMap{}
	for _, in := range k.inputs {
		if v, ok := outs[resource.PropertyKey(in.name)]; ok {
			inputs[resource.PropertyKey(in.name)] = v
		}
	}
	props, err := marshal(outs)
	if err != nil {
		return nil, err
	}
	ins, err := marshal(inputs)
	if err != nil {
		return nil, err
	}
	return &pulumirpc.ReadResponse{Id: req.GetId(), Properties: props, Inputs: ins}, nil
}

func (p *simcloud) Delete(ctx context.Context, req *pulumirpc.DeleteRequest) (*emptypb.Empty, error) {
	k, err := kindOf(req.GetUrn())
	if err != nil {
		return nil, err
	}
	olds, err := unmarshal(req.GetProperties(), false)
	if err != nil {
		return nil, err
	}
	if err := p.simulate(ctx, olds, "delete"); err != nil {
		return nil, err
	}
	// Already gone is fine: someone deleted it by hand, and destroy must still succeed.
	if err := os.Remove(p.path(k, req.GetId())); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return &emptypb.Empty{}, nil
}

// Invoke answers a data source look-up. Arguments that fail the function's checks come back as
// failures, which the engine reports per argument as it does a resource's.
func (p *simcloud) Invoke(_ context.Context, req *pulumirpc.InvokeRequest) (*pulumirpc.InvokeResponse, error) {
	f, err := functionOf(req.GetTok())
	if err != nil {
		return nil, err
	}
	args, err := unmarshal(req.GetArgs(), false)
	if err != nil {
		return nil, err
	}
	if failures := check(f.token, f.inputs, args); len(failures) > 0 {
		return &pulumirpc.InvokeResponse{Failures: failures}, nil
	}
	outs, err := f.call(p, args)
	if err != nil {
		return nil, err
	}
	ret, err := marshal(outs)
	if err != nil {
		return nil, err
	}
	return &pulumirpc.InvokeResponse{Return: ret}, nil
}

// simulate waits delayMs, then fails if failOn names op. Only machines have these inputs.
func (p *simcloud) simulate(ctx context.Context, props resource.PropertyMap, op string) error {
	if d := props["delayMs"]; d.IsNumber() && d.NumberValue() > 0 {
		timer := time.NewTimer(time.Duration(d.NumberValue()) * time.Millisecond)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-ctx.Done():
			return fmt.Errorf("simcloud: %s interrupted: %w", op, ctx.Err())
		case <-p.cancelled:
			return fmt.Errorf("simcloud: %s interrupted: cancelled", op)
		}
	}
	if f := props["failOn"]; f.IsString() && f.StringValue() == op {
		return fmt.Errorf("simcloud: injected failure on %s", op)
	}
	return nil
}

// validID matches the IDs this provider makes. An ID from anywhere else — a program may
// import or get a resource by any ID — must not reach a file path outside the cloud's folder.
var validID = regexp.MustCompile(`^[a-z]+-[0-9a-f]{8,32}$`)
