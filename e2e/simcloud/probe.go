package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

// probesVariable turns probes on. Only Nimbus's tests set it, in the engine's environment: a
// probe does on the server what a hostile program would try through a provider that let it
// (run a command, connect to a port, write a file), so that the tests can show what the
// engine's sandbox stops with the program validator out of the way.
const probesVariable = "SIMCLOUD_PROBES"

// probe answers simcloud:index:probe: it tries each thing asked for and says, in one line each,
// how it went, as its result or, when asked to report as an error, as the call's error (a
// preview shows what its failures say).
func (p *simcloud) probe(args resource.PropertyMap) (resource.PropertyMap, error) {
	if os.Getenv(probesVariable) != "1" {
		return nil, errors.New("simcloud: probes are for Nimbus's tests, which turn them on")
	}
	var said []string
	if cmd := args["exec"]; cmd.IsString() && cmd.StringValue() != "" {
		fields := strings.Fields(cmd.StringValue())
		out, err := exec.Command(fields[0], fields[1:]...).CombinedOutput()
		if err != nil && len(out) > 0 {
			err = fmt.Errorf("%w: %s", err, strings.Join(strings.Fields(string(out)), " "))
		}
		said = append(said, told("exec "+cmd.StringValue(), strings.TrimSpace(string(out)), err))
	}
	if addr := args["connect"]; addr.IsString() && addr.StringValue() != "" {
		c, err := net.DialTimeout("tcp", addr.StringValue(), 5*time.Second)
		if err == nil {
			c.Close()
		}
		said = append(said, told("connect "+addr.StringValue(), "connected", err))
	}
	if path := args["write"]; path.IsString() && path.StringValue() != "" {
		err := os.WriteFile(path.StringValue(), []byte("written by a probe\n"), 0o644)
		said = append(said, told("write "+path.StringValue(), "written", err))
	}
	result := strings.Join(said, "\n")
	if r := args["report"]; r.IsString() && r.StringValue() == "error" {
		return nil, fmt.Errorf("simcloud: probe found:\n%s", result)
	}
	return resource.PropertyMap{"result": resource.NewProperty(result)}, nil
}

func told(what, done string, err error) string {
	if err != nil {
		return fmt.Sprintf("%s: refused: %v", what, err)
	}
	return fmt.Sprintf("%s: %s", what, done)
}
