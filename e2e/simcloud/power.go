package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

// The power states of a machine. A machine is made running; an operator stops and starts it
// with the machine command, outside any deployment, as one would in a real cloud's console.
const (
	running = "running"
	stopped = "stopped"
)

// machineCommand runs "machine stop <id>" or "machine start <id>" against the cloud in dir, or
// "machine create <property>=<value>...", which makes a machine as an operator would in the
// cloud's console, outside any deployment, and prints its ID. Deleting a machine by hand is
// removing its file.
func machineCommand(args []string, dir string) error {
	create := len(args) > 0 && args[0] == "create"
	if !create && (len(args) != 2 || args[0] != "stop" && args[0] != "start") {
		return errors.New("usage: pulumi-resource-simcloud machine stop|start <id>, or machine create name=<name> [<property>=<value>...]")
	}
	if dir == "" {
		return errors.New("simcloud: no state directory: set the environment variable SIMCLOUD_DIR")
	}
	if create {
		id, err := createMachine(dir, args[1:])
		if err == nil {
			fmt.Println(id)
		}
		return err
	}
	state := running
	if args[0] == "stop" {
		state = stopped
	}
	return setPower(dir, args[1], state)
}

// setPower changes a machine's status in its file, under the cloud's lock so that a provider
// updating the machine at the same time does not write over the change.
func setPower(dir, id, state string) error {
	k := machineKind()
	if !validID.MatchString(id) || !strings.HasPrefix(id, k.idPrefix+"-") {
		return fmt.Errorf("simcloud: %q is not a machine ID", id)
	}
	p := &simcloud{dir: dir}
	unlock, err := p.lock()
	if err != nil {
		return err
	}
	defer unlock()
	data, err := os.ReadFile(p.path(k, id))
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("simcloud: no machine %s", id)
	} else if err != nil {
		return err
	}
	var stored map[string]any
	if err := json.Unmarshal(data, &stored); err != nil {
		return fmt.Errorf("simcloud: %s: %w", p.path(k, id), err)
	}
	delete(stored, "id")
	stored["status"] = state
	return p.write(k, id, resource.NewPropertyMapFromMap(stored))
}

// currentPower is the status the machine's file holds, so that an update leaves a stopped
// machine stopped; a machine without a file or a status is running.
func (p *simcloud) currentPower(k *resourceKind, id string) string {
	data, err := os.ReadFile(p.path(k, id))
	if err != nil {
		return running
	}
	var m struct{ Status string }
	if json.Unmarshal(data, &m) != nil || m.Status == "" {
		return running
	}
	return m.Status
}

func machineKind() *resourceKind {
	return kinds[slices.IndexFunc(kinds, func(k *resourceKind) bool { return k.token == machineToken })]
}

// createMachine makes a machine with the inputs given (the defaults for the others) as the
// provider's Create would, and returns its ID.
func createMachine(dir string, args []string) (string, error) {
	k := machineKind()
	news, err := propertiesOf(k, args)
	if err != nil {
		return "", err
	}
	if failures := check(k.token, k.inputs, news); len(failures) > 0 {
		return "", fmt.Errorf("simcloud: %s: %s", failures[0].GetProperty(), failures[0].GetReason())
	}
	p := &simcloud{dir: dir}
	unlock, err := p.lock()
	if err != nil {
		return "", err
	}
	defer unlock()
	id := k.idPrefix + "-" + randomHex()
	if _, err := p.apply(k, id, news, nil, false); err != nil {
		return "", err
	}
	return id, nil
}
