package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

// editCommand runs "edit <kind> <id> <property>=<value>...": it changes a resource in the cloud
// in dir the way an operator would by hand, outside Pulumi, so that the stack's state no longer
// says what is there (drift). Only inputs can be changed; an integer input takes a number.
func editCommand(args []string, dir string) error {
	const usage = "usage: pulumi-resource-simcloud edit <network|disk|machine> <id> <property>=<value>..."
	if len(args) < 3 {
		return errors.New(usage)
	}
	if dir == "" {
		return errors.New("simcloud: no state directory: set the environment variable SIMCLOUD_DIR")
	}
	i := slices.IndexFunc(kinds, func(k *resourceKind) bool { return k.dir == args[0] })
	if i < 0 {
		return errors.New(usage)
	}
	k := kinds[i]
	p := &simcloud{dir: dir}
	path := p.path(k, args[1])
	changes, err := propertiesOf(k, args[2:])
	if err != nil {
		return err
	}
	unlock, err := p.lock()
	if err != nil {
		return err
	}
	defer unlock()
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("simcloud: no %s %s in %s", k.dir, args[1], dir)
	} else if err != nil {
		return err
	}
	var stored map[string]any
	if err := json.Unmarshal(data, &stored); err != nil {
		return fmt.Errorf("simcloud: %s: %w", path, err)
	}
	delete(stored, "id")
	outs := resource.NewPropertyMapFromMap(stored)
	for key, v := range changes {
		outs[key] = v
	}
	return p.write(k, args[1], outs)
}

// propertiesOf reads <property>=<value> arguments as inputs of a resource of kind k; an integer
// input takes a number.
func propertiesOf(k *resourceKind, args []string) (resource.PropertyMap, error) {
	changes := resource.PropertyMap{}
	for _, arg := range args {
		name, text, ok := strings.Cut(arg, "=")
		j := slices.IndexFunc(k.inputs, func(in property) bool { return in.name == name })
		if !ok || j < 0 {
			names := make([]string, len(k.inputs))
			for n, in := range k.inputs {
				names[n] = in.name
			}
			return nil, fmt.Errorf("simcloud: %q is not <property>=<value> with a property of a %s: %s", arg, k.dir, strings.Join(names, ", "))
		}
		value := resource.NewProperty(text)
		if k.inputs[j].typ == "integer" {
			n, err := strconv.Atoi(text)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("simcloud: %s must be a non-negative integer, not %q", name, text)
			}
			value = resource.NewProperty(float64(n))
		}
		changes[resource.PropertyKey(name)] = value
	}
	return changes, nil
}
