package component

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"nimbus/app/problem"
)

// Program is what Nimbus reads of a Pulumi YAML program: its config, resources and outputs,
// with where each was written.
type Program struct {
	Config    map[string]ConfigEntry
	Resources map[string]string // name → type
	Outputs   map[string]position
}

// ConfigEntry is one declared config value.
type ConfigEntry struct {
	Type       string // normalised: string, integer, number, boolean, array, object; "" if unstated
	HasDefault bool
	Secret     bool
	position
}

type position struct{ Line, Column int }

var (
	topLevelKeys = []string{"name", "runtime", "description", "config", "configuration", "variables", "resources", "outputs", "pulumi"}
	resourceKeys = []string{"type", "properties", "options", "get", "defaultProvider"}
	configKeys   = []string{"type", "default", "secret", "items", "description"}
	reference    = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_-]*)`)
)

// forbidden are the Pulumi YAML functions a program may not use: they read the server's files
// or fetch from the network, with the server's rights, on behalf of whoever wrote the program.
var forbidden = map[string]string{
	"fn::readFile":      "reads files on the Nimbus server",
	"fn::fileAsset":     "reads files on the Nimbus server",
	"fn::fileArchive":   "reads files on the Nimbus server",
	"fn::remoteAsset":   "fetches from the network through the Nimbus server",
	"fn::remoteArchive": "fetches from the network through the Nimbus server",
}

// ParseYAML reads a Pulumi YAML program, recording under "code" every place it breaks the
// structure Pulumi YAML accepts, with its line and column. Programs run on the Nimbus server,
// so what would let them act beyond their stack is refused: runtime options (which name a
// command to run), functions that read files or fetch URLs, and, unless providerLevel (written
// by provider admins), plugin download locations.
func ParseYAML(code string, providerLevel bool, v *problem.ValidationError) *Program {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(code), &doc); err != nil {
		line, msg := yamlError(err)
		v.AddAt("code", line, 1, "yaml", "%s", msg)
		return nil
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		v.AddAt("code", 1, 1, "pulumi_yaml", "a Pulumi YAML program is a mapping with name, runtime and resources")
		return nil
	}
	root := doc.Content[0]
	p := &Program{Config: map[string]ConfigEntry{}, Resources: map[string]string{}, Outputs: map[string]position{}}
	names := map[string]bool{"pulumi": true}
	var variables []*yaml.Node
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		key, val := root.Content[i], root.Content[i+1]
		if !slices.Contains(topLevelKeys, key.Value) {
			v.AddAt("code", key.Line, key.Column, "pulumi_yaml", "unknown top-level key %q%s; Pulumi YAML accepts %s",
				key.Value, suggest(key.Value, topLevelKeys), strings.Join(topLevelKeys, ", "))
			continue
		}
		seen[key.Value] = val
	}
	if n := seen["name"]; n == nil || n.Kind != yaml.ScalarNode || n.Value == "" {
		v.AddAt("code", 1, 1, "pulumi_yaml", "the program needs a name")
	}
	switch rt := seen["runtime"]; {
	case rt == nil:
		v.AddAt("code", 1, 1, "pulumi_yaml", "the program needs runtime: yaml")
	case rt.Kind != yaml.ScalarNode:
		v.AddAt("code", rt.Line, rt.Column, "unsafe", "runtime must be just yaml: runtime options are not allowed")
	case rt.Value != "yaml":
		v.AddAt("code", rt.Line, rt.Column, "pulumi_yaml", "runtime must be yaml for a YAML program, not %q", rt.Value)
	}
	checkUnsafe(root, providerLevel, v)
	for _, section := range []string{"config", "configuration"} {
		if cfg := seen[section]; cfg != nil {
			forEachEntry(cfg, section, v, func(key, val *yaml.Node) {
				p.Config[key.Value] = readConfig(key, val, v)
				names[key.Value] = true
			})
		}
	}
	if vars := seen["variables"]; vars != nil {
		forEachEntry(vars, "variables", v, func(key, val *yaml.Node) {
			names[key.Value] = true
			variables = append(variables, val)
		})
	}
	if res := seen["resources"]; res != nil {
		forEachEntry(res, "resources", v, func(key, val *yaml.Node) {
			names[key.Value] = true
			p.Resources[key.Value] = readResource(key, val, v)
		})
	}
	if outs := seen["outputs"]; outs != nil {
		forEachEntry(outs, "outputs", v, func(key, _ *yaml.Node) {
			p.Outputs[key.Value] = position{key.Line, key.Column}
		})
	}
	// References to names the program never declares are typos Pulumi would report only at
	// preview; catching them here marks the exact spot.
	for _, n := range append(variables, seen["resources"], seen["outputs"]) {
		checkReferences(n, names, v)
	}
	return p
}

// checkUnsafe marks every use of a forbidden function or, outside provider-level programs, of
// a plugin download location.
func checkUnsafe(n *yaml.Node, providerLevel bool, v *problem.ValidationError) {
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := n.Content[i]
			if why, ok := forbidden[key.Value]; ok {
				v.AddAt("code", key.Line, key.Column, "unsafe", "%s is not allowed: it %s", key.Value, why)
			}
			if key.Value == "pluginDownloadURL" && !providerLevel {
				v.AddAt("code", key.Line, key.Column, "unsafe", "pluginDownloadURL is not allowed in tenant components: providers come from the provider admins")
			}
		}
	}
	for _, c := range n.Content {
		checkUnsafe(c, providerLevel, v)
	}
}

func forEachEntry(n *yaml.Node, section string, v *problem.ValidationError, fn func(key, val *yaml.Node)) {
	if n.Kind != yaml.MappingNode {
		v.AddAt("code", n.Line, n.Column, "pulumi_yaml", "%s must be a mapping of names to entries", section)
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		fn(n.Content[i], n.Content[i+1])
	}
}

func readResource(key, val *yaml.Node, v *problem.ValidationError) string {
	if val.Kind != yaml.MappingNode {
		v.AddAt("code", key.Line, key.Column, "pulumi_yaml", "resource %q must be a mapping with a type", key.Value)
		return ""
	}
	typ := ""
	for i := 0; i+1 < len(val.Content); i += 2 {
		k, vv := val.Content[i], val.Content[i+1]
		if !slices.Contains(resourceKeys, k.Value) {
			v.AddAt("code", k.Line, k.Column, "pulumi_yaml", "resource %q has unknown key %q%s; a resource accepts %s",
				key.Value, k.Value, suggest(k.Value, resourceKeys), strings.Join(resourceKeys, ", "))
		}
		if k.Value == "type" {
			typ = vv.Value
		}
	}
	if typ == "" {
		v.AddAt("code", key.Line, key.Column, "pulumi_yaml", "resource %q has no type, such as simcloud:index:Machine", key.Value)
	}
	return typ
}

func readConfig(key, val *yaml.Node, v *problem.ValidationError) ConfigEntry {
	e := ConfigEntry{position: position{key.Line, key.Column}}
	if val.Kind == yaml.ScalarNode {
		// A bare value is a default whose type Pulumi infers.
		e.HasDefault, e.Type = true, scalarType(val)
		return e
	}
	if val.Kind != yaml.MappingNode {
		v.AddAt("code", key.Line, key.Column, "pulumi_yaml", "config %q must be a mapping with a type or a default", key.Value)
		return e
	}
	for i := 0; i+1 < len(val.Content); i += 2 {
		k, vv := val.Content[i], val.Content[i+1]
		switch k.Value {
		case "type":
			t, ok := configType(vv.Value)
			if !ok {
				v.AddAt("code", vv.Line, vv.Column, "pulumi_yaml", "config %q has unknown type %q; use string, integer, number, boolean or List<…>", key.Value, vv.Value)
			}
			e.Type = t
		case "default":
			e.HasDefault = true
		case "secret":
			e.Secret = vv.Value == "true"
		default:
			if !slices.Contains(configKeys, k.Value) {
				v.AddAt("code", k.Line, k.Column, "pulumi_yaml", "config %q has unknown key %q; config accepts %s", key.Value, k.Value, strings.Join(configKeys, ", "))
			}
		}
	}
	return e
}

// configType normalises Pulumi YAML's config type names to JSON Schema's.
func configType(t string) (string, bool) {
	l := strings.ToLower(t)
	switch {
	case l == "string" || l == "integer" || l == "number" || l == "boolean" || l == "object":
		return l, true
	case l == "int":
		return "integer", true
	case l == "array" || strings.HasPrefix(l, "list<"):
		return "array", true
	}
	return "", false
}

func scalarType(n *yaml.Node) string {
	switch n.Tag {
	case "!!int":
		return "integer"
	case "!!float":
		return "number"
	case "!!bool":
		return "boolean"
	}
	return "string"
}

func checkReferences(n *yaml.Node, names map[string]bool, v *problem.ValidationError) {
	if n == nil {
		return
	}
	if n.Kind == yaml.ScalarNode {
		for _, m := range reference.FindAllStringSubmatchIndex(n.Value, -1) {
			name := n.Value[m[2]:m[3]]
			if !names[name] {
				known := make([]string, 0, len(names))
				for k := range names {
					known = append(known, k)
				}
				sort.Strings(known)
				line, col := n.Line, n.Column
				switch {
				case n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0:
					line, col = n.Line+1+strings.Count(n.Value[:m[0]], "\n"), 1 // block scalars start below their key
				case n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0:
					col += m[0] + 1
				default:
					col += m[0]
				}
				v.AddAt("code", line, col, "reference", "${%s} refers to nothing the program declares%s", name, suggest(name, known))
			}
		}
		return
	}
	for _, c := range n.Content {
		checkReferences(c, names, v)
	}
}

// yamlError pulls the line out of the parser's message ("yaml: line 3: …").
func yamlError(err error) (int, string) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		num, text, _ := strings.Cut(rest, ": ")
		if n, err := strconv.Atoi(num); err == nil {
			return n, "YAML syntax: " + text
		}
	}
	return 1, "YAML syntax: " + msg
}

// suggest offers the closest known word when one is near enough to be a typo.
func suggest(word string, known []string) string {
	best, bestDist := "", 3
	for _, k := range known {
		if d := distance(strings.ToLower(word), strings.ToLower(k)); d < bestDist {
			best, bestDist = k, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// distance is the Levenshtein edit distance.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
