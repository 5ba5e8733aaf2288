package main

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// property describes one input or output. A single table drives the schema, Check, Diff and
// the checks of function arguments, so what Pulumi's type checker is told always matches what
// the provider enforces.
type property struct {
	name, typ, description string // typ is a schema type: "string" or "integer"
	required               bool
	replaceOnChanges       bool
	def                    any            // applied by Check when the input is absent
	oneOf                  []string       // allowed values of a string
	pattern                *regexp.Regexp // what a string must match
}

type resourceKind struct {
	token, description string
	dir                string // subdirectory of the state directory holding one JSON file per resource
	idPrefix           string
	inputs             []property
	computed           []property // outputs beyond the inputs, which are echoed back
}

const machineToken = "simcloud:index:Machine"

var kinds = []*resourceKind{
	{
		token:       "simcloud:index:Network",
		description: "A pretend network.",
		dir:         "network",
		idPrefix:    "n",
		inputs: []property{
			{name: "name", typ: "string", required: true, description: "Display name."},
			{name: "cidr", typ: "string", required: true, replaceOnChanges: true, description: "Address range, e.g. 10.0.0.0/16."},
		},
	},
	{
		token:       "simcloud:index:Disk",
		description: "A pretend block device.",
		dir:         "disk",
		idPrefix:    "d",
		inputs: []property{
			{name: "name", typ: "string", required: true, description: "Display name."},
			{name: "sizeGb", typ: "integer", def: 10, description: "Size in GiB."},
			{name: "image", typ: "string", replaceOnChanges: true, description: "Image the disk is created from."},
		},
	},
	{
		token:       machineToken,
		description: "A pretend virtual machine. failOn and delayMs let tests provoke slow or failing operations.",
		dir:         "machine",
		idPrefix:    "m",
		inputs: []property{
			{name: "name", typ: "string", required: true, description: "Display name."},
			{name: "cores", typ: "integer", def: 2, description: "Number of CPU cores."},
			{name: "memoryMb", typ: "integer", def: 2048, description: "Memory in MiB."},
			{name: "image", typ: "string", replaceOnChanges: true, description: "Boot image."},
			{name: "diskId", typ: "string", description: "ID of an attached Disk."},
			{name: "networkId", typ: "string", description: "ID of the Network the machine joins."},
			{name: "ipAddress", typ: "string", description: "Fixed address; when absent the lowest free 10.0.x.y is picked."},
			{name: "failOn", typ: "string", oneOf: []string{"", "create", "update", "delete"},
				description: `Operation ("create", "update" or "delete") that fails after delayMs, changing nothing.`},
			{name: "delayMs", typ: "integer", description: "Milliseconds each create, update and delete takes."},
		},
		computed: []property{
			{name: "ip", typ: "string", description: "The machine's address."},
			{name: "status", typ: "string", description: `"running", or "stopped" while an operator has it stopped; an update leaves it as it is.`},
		},
	},
}

// function is a data source: a look-up a program calls (fn::invoke in YAML) that reads the
// cloud and changes nothing.
type function struct {
	token, description string
	inputs, outputs    []property
	call               func(p *simcloud, args resource.PropertyMap) (resource.PropertyMap, error)
}

var functions = []*function{
	{
		token: "simcloud:index:getImage",
		description: "The cloud's current image of a family, like a real cloud's latest-image look-up: " +
			"the answer changes whenever the cloud publishes a new image of the family.",
		inputs: []property{
			{name: "family", typ: "string", required: true, pattern: imageFamily, description: "Image family, e.g. debian-12."},
		},
		outputs: []property{
			{name: "id", typ: "string", description: "ID of the family's current image."},
			{name: "family", typ: "string", description: "The family asked for."},
		},
		call: (*simcloud).getImage,
	},
	{
		token: "simcloud:index:probe",
		description: "For Nimbus's tests only, and refused unless they turn it on: tries to run a command, " +
			"connect to a TCP address and write a file on the machine the provider runs on, and says how each went.",
		inputs: []property{
			{name: "exec", typ: "string", description: "A command and its arguments, split at spaces."},
			{name: "connect", typ: "string", description: "A host:port to open a TCP connection to."},
			{name: "write", typ: "string", description: "A file to write."},
			{name: "report", typ: "string", oneOf: []string{"", "result", "error"}, description: `"error" makes the findings the call's error.`},
		},
		outputs: []property{
			{name: "result", typ: "string", description: "One line for each thing tried: done, or refused and why."},
		},
		call: (*simcloud).probe,
	},
}

func functionOf(token string) (*function, error) {
	for _, f := range functions {
		if f.token == token {
			return f, nil
		}
	}
	return nil, fmt.Errorf("simcloud: unknown function %q", token)
}

func kindOf(urn string) (*resourceKind, error) {
	token := string(resource.URN(urn).Type())
	for _, k := range kinds {
		if k.token == token {
			return k, nil
		}
	}
	return nil, fmt.Errorf("simcloud: unknown resource type %q", token)
}

// check validates news, the inputs of the resource or function named token, in place, filling
// in defaults. The reasons leave out the property name because the engine prints each failure
// as "property <name> value <v> has a problem: <reason>".
func check(token string, inputs []property, news resource.PropertyMap) []*pulumirpc.CheckFailure {
	var failures []*pulumirpc.CheckFailure
	fail := func(prop, format string, args ...any) {
		failures = append(failures, &pulumirpc.CheckFailure{Property: prop, Reason: fmt.Sprintf(format, args...)})
	}
	names := make([]string, len(inputs))
	for i, p := range inputs {
		names[i] = p.name
	}
	for _, key := range news.StableKeys() {
		if !slices.Contains(names, string(key)) {
			fail(string(key), "unknown property of %s; it has %s", token, strings.Join(names, ", "))
		}
	}
	for _, p := range inputs {
		key := resource.PropertyKey(p.name)
		v, ok := news[key]
		switch {
		case !ok && p.required:
			fail(p.name, "missing required property")
		case !ok && p.def != nil:
			news[key] = resource.NewPropertyValue(p.def)
		case !ok || v.ContainsUnknowns():
			// Unknowns only occur in previews; the real value is checked before it is applied.
		case p.typ == "string" && !v.IsString():
			fail(p.name, "must be a string, not %s", v.TypeString())
		case p.typ == "string" && p.oneOf != nil && !slices.Contains(p.oneOf, v.StringValue()):
			fail(p.name, "must be one of %q", p.oneOf)
		case p.typ == "string" && p.pattern != nil && !p.pattern.MatchString(v.StringValue()):
			fail(p.name, "must match %s", p.pattern)
		case p.typ == "integer" && (!v.IsNumber() || v.NumberValue() < 0 || v.NumberValue() != math.Trunc(v.NumberValue())):
			fail(p.name, "must be a non-negative integer")
		}
	}
	return failures
}

// diff lists the inputs that differ and, of those, the ones that force a replacement.
// olds may be the previous outputs: only input keys are compared.
func (k *resourceKind) diff(olds, news resource.PropertyMap) (diffs, replaces []string) {
	for _, p := range k.inputs {
		key := resource.PropertyKey(p.name)
		if olds[key].DeepEquals(news[key]) {
			continue
		}
		diffs = append(diffs, p.name)
		if p.replaceOnChanges {
			replaces = append(replaces, p.name)
		}
	}
	return diffs, replaces
}

func (p property) schema() map[string]any {
	s := map[string]any{"type": p.typ, "description": p.description}
	if p.def != nil {
		s["default"] = p.def
	}
	if p.replaceOnChanges {
		s["willReplaceOnChanges"] = true
	}
	return s
}

// packageSchema is the Pulumi package schema, which the YAML language host needs to type-check
// programs and SDK generators need to generate code.
func packageSchema() map[string]any {
	dir := map[string]any{"type": "string", "description": "Directory holding the state; defaults to $SIMCLOUD_DIR."}
	resources := map[string]any{}
	for _, k := range kinds {
		inputs, outputs := map[string]any{}, map[string]any{}
		var requiredInputs, required []string
		for _, p := range k.inputs {
			inputs[p.name], outputs[p.name] = p.schema(), p.schema()
			if p.required {
				requiredInputs = append(requiredInputs, p.name)
			}
			if p.required || p.def != nil {
				required = append(required, p.name)
			}
		}
		for _, p := range k.computed {
			outputs[p.name] = p.schema()
			required = append(required, p.name)
		}
		resources[k.token] = map[string]any{
			"description":     k.description,
			"inputProperties": inputs,
			"requiredInputs":  requiredInputs,
			"properties":      outputs,
			"required":        required,
		}
	}
	fns := map[string]any{}
	for _, f := range functions {
		inputs, outputs := map[string]any{}, map[string]any{}
		var requiredInputs, required []string
		for _, p := range f.inputs {
			inputs[p.name] = p.schema()
			if p.required {
				requiredInputs = append(requiredInputs, p.name)
			}
		}
		for _, p := range f.outputs {
			outputs[p.name] = p.schema()
			required = append(required, p.name)
		}
		fns[f.token] = map[string]any{
			"description": f.description,
			"inputs":      map[string]any{"properties": inputs, "required": requiredInputs},
			"outputs":     map[string]any{"properties": outputs, "required": required},
		}
	}
	return map[string]any{
		"name":        "simcloud",
		"version":     version,
		"description": "A simulated cloud whose resources are JSON files in a directory.",
		"config":      map[string]any{"variables": map[string]any{"dir": dir}},
		"provider":    map[string]any{"inputProperties": map[string]any{"dir": dir}},
		"resources":   resources,
		"functions":   fns,
	}
}
