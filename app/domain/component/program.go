package component

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"nimbus/app/kernel/problem"
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
	// topLevelKeys are the sections a component's program may have, spelled exactly so: the
	// engine reads them in any case, the CLI only as written, and a section one of them reads
	// and the other skips must not exist.
	topLevelKeys = []string{"name", "runtime", "description", "config", "configuration", "variables", "resources", "outputs"}
	rootName     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*`)
)

// ParseYAML reads a Pulumi YAML program, recording under "code" every place it breaks the
// structure Pulumi YAML accepts, with its line and column. Programs run on the Nimbus server, so
// what would let them act beyond their stack is refused (see Scope and the rules in contain.go):
// runtime options (which name a command to run), functions that read files or fetch URLs, and
// in tenants' programs plugin download locations, other stacks, other providers and resources
// the program did not create.
func ParseYAML(code string, scope Scope, v *problem.ValidationError) *Program {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(code), &doc); err != nil {
		line, col, msg := yamlError(code, err)
		v.AddAt("code", line, col, "yaml", "%s", msg)
		return nil
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		v.AddAt("code", 1, 1, "pulumi_yaml", "a Pulumi YAML program is a mapping with name, runtime and resources")
		return nil
	}
	root := doc.Content[0]
	for i := 1; i < len(root.Content); i += 2 {
		duplicateKeys(root.Content[i], v) // the top level's own are told apart below
	}
	r := reach{scope: scope, v: v}
	r.walk(root)
	p := &Program{Config: map[string]ConfigEntry{}, Resources: map[string]string{}, Outputs: map[string]position{}}
	names := map[string]bool{"pulumi": true}
	var variables []*yaml.Node
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		key, val := root.Content[i], root.Content[i+1]
		switch known := fold(key.Value, topLevelKeys); {
		case known == "":
			v.AddAt("code", key.Line, key.Column, "pulumi_yaml", "unknown top-level key %q%s; a component's program may have %s",
				key.Value, suggest(key.Value, topLevelKeys), strings.Join(topLevelKeys, ", "))
		case known != key.Value:
			v.AddAt("code", key.Line, key.Column, "pulumi_yaml", "write %q as %q", key.Value, known)
		case seen[known] != nil:
			v.AddAt("code", key.Line, key.Column, "pulumi_yaml", "%s appears twice", known)
		default:
			seen[known] = val
		}
	}
	if n := seen["name"]; n == nil || n.Kind != yaml.ScalarNode || n.Value == "" {
		v.AddAt("code", 1, 1, "pulumi_yaml", "the program needs a name")
	} else if pkg := packageNamed(n.Value, scope); pkg != "" {
		v.AddAt("code", n.Line, n.Column, RuleForeign, "name %q is the name of the %s package: a program named after a package would configure it; choose another name", n.Value, pkg)
	}
	switch rt := seen["runtime"]; {
	case rt == nil:
		v.AddAt("code", 1, 1, "pulumi_yaml", "the program needs runtime: yaml")
	case rt.Kind != yaml.ScalarNode:
		v.AddAt("code", rt.Line, rt.Column, "unsafe", "runtime must be just yaml: runtime options are not allowed")
	case rt.Value != "yaml":
		v.AddAt("code", rt.Line, rt.Column, "pulumi_yaml", "runtime must be yaml for a YAML program, not %q", rt.Value)
	}
	for _, section := range []string{"config", "configuration"} {
		if cfg := seen[section]; cfg != nil {
			forEachEntry(cfg, section, v, func(key, val *yaml.Node) {
				r.config(key)
				p.Config[key.Value] = readConfig(section, key, val, v)
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
			if val.Kind == yaml.MappingNode {
				r.resource(key.Value, val)
			}
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
		switch fold(k.Value, resourceFields) {
		case "":
			v.AddAt("code", k.Line, k.Column, "pulumi_yaml", "resource %q has unknown key %q%s; a resource accepts %s",
				key.Value, k.Value, suggest(k.Value, resourceFields), strings.Join(resourceFields, ", "))
		case "type":
			typ = vv.Value
		}
	}
	if typ == "" {
		v.AddAt("code", key.Line, key.Column, "pulumi_yaml", "resource %q has no type, such as simcloud:index:Machine", key.Value)
	}
	return typ
}

// configFields are what a config entry may say. Under config the CLI checks them, as written;
// under configuration (the older name) only the engine reads them, in any case.
var configFields = map[string][]string{
	"config":        {"type", "default", "secret", "items", "description", "value"},
	"configuration": {"type", "default", "secret", "items", "name", "value"},
}

func readConfig(section string, key, val *yaml.Node, v *problem.ValidationError) ConfigEntry {
	e := ConfigEntry{position: position{key.Line, key.Column}}
	switch val.Kind {
	case yaml.ScalarNode:
		// A bare value is a default whose type Pulumi infers.
		e.HasDefault, e.Type = true, scalarType(val)
		return e
	case yaml.SequenceNode:
		e.HasDefault, e.Type = true, "array"
		return e
	case yaml.MappingNode:
	default:
		v.AddAt("code", key.Line, key.Column, "pulumi_yaml", "%s %q must be a mapping with a type or a default", section, key.Value)
		return e
	}
	known := configFields[section]
	for i := 0; i+1 < len(val.Content); i += 2 {
		k, vv := val.Content[i], val.Content[i+1]
		field := k.Value
		if section == "configuration" {
			field = fold(k.Value, known)
		}
		switch field {
		case "type":
			t, ok := configType(section, vv.Value)
			if !ok {
				v.AddAt("code", vv.Line, vv.Column, "pulumi_yaml", "%s %q has unknown type %q; use %s", section, key.Value, vv.Value, configTypeNames[section])
			}
			e.Type = t
		case "default", "value":
			e.HasDefault = true
		case "secret":
			e.Secret = vv.Value == "true"
		default:
			if !slices.Contains(known, field) {
				v.AddAt("code", k.Line, k.Column, "pulumi_yaml", "%s %q has unknown key %q%s; an entry accepts %s",
					section, key.Value, k.Value, suggest(k.Value, known), strings.Join(known, ", "))
			}
		}
	}
	return e
}

var configTypeNames = map[string]string{
	"config":        "string, integer, boolean, array or object",
	"configuration": "string, integer, number, boolean, object or List<…>",
}

// configType normalises a config type to JSON Schema's, accepting what the reader of its
// section accepts: under config the CLI's exact names, under configuration the engine's names
// in any case.
func configType(section, t string) (string, bool) {
	if section == "config" {
		switch t {
		case "string", "integer", "boolean", "array", "object":
			return t, true
		}
		return "", false
	}
	l := strings.ToLower(t)
	switch {
	case l == "string" || l == "number" || l == "object":
		return l, true
	case l == "int" || l == "integer":
		return "integer", true
	case l == "bool" || l == "boolean":
		return "boolean", true
	case strings.HasPrefix(l, "list<") && strings.HasSuffix(l, ">"):
		_, ok := configType(section, strings.TrimSpace(l[len("list<"):len(l)-1]))
		return "array", ok
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
		_, refs := interpolation(n.Value)
		for _, at := range refs {
			name := rootName.FindString(n.Value[at+2:])
			if name == "" || names[name] {
				continue
			}
			known := make([]string, 0, len(names))
			for k := range names {
				known = append(known, k)
			}
			sort.Strings(known)
			line, col := n.Line, n.Column
			switch {
			case n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0:
				line, col = n.Line+1+strings.Count(n.Value[:at], "\n"), 1 // block scalars start below their key
			case n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0:
				col += at + 1
			default:
				col += at
			}
			v.AddAt("code", line, col, "reference", "${%s} refers to nothing the program declares%s", name, suggest(name, known))
		}
		return
	}
	for _, c := range n.Content {
		checkReferences(c, names, v)
	}
}

// duplicateKeys flags every key written twice in one mapping, at n or below: the parser
// keeps the last quietly, and the author rarely means it.
func duplicateKeys(n *yaml.Node, v *problem.ValidationError) {
	if n.Kind == yaml.MappingNode {
		first := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := n.Content[i]
			if key.Kind != yaml.ScalarNode {
				continue
			}
			if line, dup := first[key.Value]; dup {
				v.AddAt("code", key.Line, key.Column, "duplicate", "%q appears twice here (first on line %d): remove or rename one", key.Value, line)
			} else {
				first[key.Value] = key.Line
			}
		}
	}
	for _, c := range n.Content {
		duplicateKeys(c, v)
	}
}

// maxYAMLSearch bounds how many lines past where the parser points yamlError looks for the
// line that broke.
const maxYAMLSearch = 400

// yamlError says where the program stops being YAML, and why, in words. The parser names the
// line where the construct it was reading began (a mapping that starts on "resources:"), not
// the line that broke it; that line is the first whose text, read up to and including it, no
// longer parses.
func yamlError(code string, err error) (line, column int, msg string) {
	text := strings.TrimPrefix(err.Error(), "yaml: ")
	line = 1
	if rest, ok := strings.CutPrefix(text, "line "); ok {
		num, problem, _ := strings.Cut(rest, ": ")
		if n, err := strconv.Atoi(num); err == nil {
			line, text = n, problem
		}
	}
	lines := strings.SplitAfter(code, "\n")
	for l := max(line, 1); l <= len(lines) && l < line+maxYAMLSearch; l++ {
		var doc yaml.Node
		if yaml.Unmarshal([]byte(strings.Join(lines[:l], "")), &doc) != nil {
			line = l
			break
		}
	}
	column = 1
	if line <= len(lines) {
		column += len(lines[line-1]) - len(strings.TrimLeft(lines[line-1], " \t"))
	}
	return line, column, yamlWords(text)
}

// yamlWords says a parser's complaint in words an author acts on.
func yamlWords(problem string) string {
	switch {
	case strings.Contains(problem, "did not find expected key"):
		return "this line is not indented in step with the lines above it"
	case strings.Contains(problem, "mapping values are not allowed"):
		return "a colon (:) where none may be: is the line above missing its colon, or does a value with \": \" need quotes?"
	case strings.Contains(problem, "could not find expected ':'"):
		return "a key without its colon (:)"
	case strings.Contains(problem, "expected ',' or ']'"):
		return "a list opened with [ is not closed with ]"
	case strings.Contains(problem, "expected ',' or '}'"):
		return "a mapping opened with { is not closed with }"
	case strings.Contains(problem, "expected '-' indicator"):
		return "this line must be a list item (- …), as the lines above it are"
	case strings.Contains(problem, "block sequence entries are not allowed"):
		return "a list item (- …) cannot start here: put it on a line of its own, under its key"
	case strings.Contains(problem, "tab"), strings.Contains(problem, "cannot start any token"):
		return "a character that cannot start a value, such as a tab: indent with spaces, and quote values that start with @ or `"
	case strings.Contains(problem, "end of stream"), strings.Contains(problem, "unexpected end"):
		return "a quoted value is not closed: end it with the quote it opened with"
	case strings.Contains(problem, "escape"):
		return "a backslash in a double-quoted value starts no known escape: write \\\\ or use single quotes"
	case strings.Contains(problem, "anchor"), strings.Contains(problem, "alias"):
		return "an anchor (&) or alias (*) is not written right"
	}
	return "this line is not valid YAML"
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
