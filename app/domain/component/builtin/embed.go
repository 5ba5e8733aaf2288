// Package builtin holds the system components every Nimbus ships with: for each, a Pulumi YAML
// program (<name>.yaml) and its input and output schemas (<name>.inputs.json,
// <name>.outputs.json), listed with what they are in components.json. component.EnsureBuiltins
// publishes them.
package builtin

import "embed"

// FS holds components.json and every component's program and schemas.
//
//go:embed components.json *.yaml *.inputs.json *.outputs.json
var FS embed.FS
