package component

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"nimbus/app/kernel/problem"
)

// A program runs on the Nimbus server with the server's rights, so what it may reach is an
// allow-list, read the way the Pulumi YAML engine (pulumi-language-yaml v1.25.0) reads it: the
// engine recognises function names after strings.ToLower and resource fields and options with
// strings.EqualFold, so a keyword in any spelling is the same keyword here. Behind this wall the
// engine also runs in a sandbox (see the sandbox package); neither wall is meant to be enough
// alone.

// Scope says whose program is read, which decides what it may reach.
type Scope struct {
	// ProviderLevel is true for components provider admins write for every tenant.
	ProviderLevel bool
	// Package is the Pulumi package of the component's provider (simcloud, proxmoxve, …): a
	// tenant's program may create resources and call functions of that package only.
	Package string
}

// The rules a program can break by reaching too far; the README lists them with their reasons.
const (
	RuleFileAccess   = "file_access"       // reads files on the server
	RuleNetworkFetch = "network_fetch"     // fetches URLs from the server
	RulePluginURL    = "plugin_url"        // names where to download a provider plugin
	RuleStackRef     = "stack_reference"   // reads another stack's outputs
	RuleForeign      = "foreign_provider"  // uses a provider other than the component's
	RuleExisting     = "existing_resource" // adopts or reads a resource the program did not create
	RuleFunction     = "function"          // a fn:: the engine does not know, or one not allowed
)

// ReachRules are the rules above: a program refused only by these is one Pulumi accepts but
// Nimbus does not let run.
var ReachRules = []string{RuleFileAccess, RuleNetworkFetch, RulePluginURL, RuleStackRef, RuleForeign, RuleExisting, RuleFunction}

// function is a Pulumi YAML built-in: as the engine spells it, and the rule that refuses it
// ("" when every program may use it).
type function struct {
	name          string
	rule          string
	why           string
	providerLevel bool // allowed in provider-level programs despite the rule
}

// functions are every built-in function of the pinned engine, by the engine's lower-cased name.
// A key starting fn:: that is neither here nor the fn::<package>:<module>:<function> shorthand
// of fn::invoke is refused.
var functions = map[string]function{
	"fn::invoke":       {name: "fn::invoke"},
	"fn::join":         {name: "fn::join"},
	"fn::split":        {name: "fn::split"},
	"fn::select":       {name: "fn::select"},
	"fn::tojson":       {name: "fn::toJSON"},
	"fn::tobase64":     {name: "fn::toBase64"},
	"fn::frombase64":   {name: "fn::fromBase64"},
	"fn::secret":       {name: "fn::secret"},
	"fn::stringasset":  {name: "fn::stringAsset"},
	"fn::assetarchive": {name: "fn::assetArchive"},
	"fn::stackreference": {name: "fn::stackReference", rule: RuleStackRef, providerLevel: true,
		why: "reads the outputs of another stack, which may be another tenant's"},
	"fn::readfile":      {name: "fn::readFile", rule: RuleFileAccess, why: "reads files on the Nimbus server"},
	"fn::fileasset":     {name: "fn::fileAsset", rule: RuleFileAccess, why: "reads files on the Nimbus server"},
	"fn::filearchive":   {name: "fn::fileArchive", rule: RuleFileAccess, why: "reads files on the Nimbus server"},
	"fn::remoteasset":   {name: "fn::remoteAsset", rule: RuleNetworkFetch, why: "fetches from the network through the Nimbus server"},
	"fn::remotearchive": {name: "fn::remoteArchive", rule: RuleNetworkFetch, why: "fetches from the network through the Nimbus server"},
}

// usable lists the functions every program may use, for messages.
var usable = func() string {
	var names []string
	for _, f := range functions {
		if f.rule == "" {
			names = append(names, f.name)
		}
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}()

// invokeShorthand is the engine's test (on the lower-cased key) for fn::<package>:<function>.
var invokeShorthand = regexp.MustCompile("fn::[^:]+:[^:]+(:[^:]+)?$")

// The fields of a resource, its options and an invoke's options, as the engine spells them.
var (
	resourceFields = []string{"type", "name", "defaultProvider", "properties", "options", "get"}
	resourceOpts   = []string{"additionalSecretOutputs", "aliases", "customTimeouts", "deleteBeforeReplace", "dependsOn",
		"ignoreChanges", "import", "parent", "protect", "provider", "providers", "version", "pluginDownloadURL",
		"replaceOnChanges", "retainOnDelete", "deletedWith", "hideDiffs"}
	invokeFields = []string{"function", "arguments", "options", "return"}
	invokeOpts   = []string{"dependsOn", "parent", "provider", "version", "pluginDownloadURL"}
)

// stackReference is the resource type that reads another stack.
const stackReference = "pulumi:pulumi:StackReference"

// fold returns the word of known that key spells in some case, as the engine's EqualFold
// matching does, or "".
func fold(key string, known []string) string {
	for _, k := range known {
		if strings.EqualFold(key, k) {
			return k
		}
	}
	return ""
}

// reach checks what a program may reach, node by node.
type reach struct {
	scope Scope
	v     *problem.ValidationError
}

// walk checks every mapping key under n for functions: the engine reads a one-key mapping
// whose key names a function as a call, and an asset or archive key in any mapping as one.
// Keys that only look like calls (in a mapping of several keys, or naming a resource) are
// refused too: a name starting fn:: is never needed, and refusing it costs nothing.
func (r reach) walk(n *yaml.Node) {
	if n.Kind == yaml.AliasNode {
		r.v.AddAt("code", n.Line, n.Column, "yaml", "aliases (*%s) are not allowed: Pulumi YAML does not read them", n.Value)
		return
	}
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			r.function(n.Content[i], n.Content[i+1])
		}
	}
	for _, c := range n.Content {
		r.walk(c)
	}
}

// function checks a mapping key that may call a function. The engine reads asset names after
// unescaping $$, other functions before; either way a name it reads as a function starts with
// fn::, and every such key that is not exactly one on the list is refused.
func (r reach) function(key, val *yaml.Node) {
	name := strings.ToLower(key.Value)
	if !strings.HasPrefix(name, "fn::") {
		return
	}
	f, known := functions[name]
	switch {
	case known && f.rule != "" && !(f.providerLevel && r.scope.ProviderLevel):
		r.v.AddAt("code", key.Line, key.Column, f.rule, "%s is not allowed: it %s", key.Value, f.why)
	case known && name == "fn::invoke":
		r.invoke(val)
	case known:
	case invokeShorthand.MatchString(name):
		r.token(key, key.Value[len("fn::"):], "function")
	default:
		r.v.AddAt("code", key.Line, key.Column, RuleFunction, "%s is not a Pulumi YAML function a program may use; the functions are %s", key.Value, usable)
	}
}

// invoke checks the arguments of fn::invoke: which function, and its options.
func (r reach) invoke(args *yaml.Node) {
	if args.Kind != yaml.MappingNode {
		return // the engine refuses it
	}
	for i := 0; i+1 < len(args.Content); i += 2 {
		k, val := args.Content[i], args.Content[i+1]
		switch fold(k.Value, invokeFields) {
		case "function":
			if val.Kind != yaml.ScalarNode {
				r.v.AddAt("code", val.Line, val.Column, "pulumi_yaml", "fn::invoke's function must be a name such as simcloud:index:getImage")
				continue
			}
			r.token(val, val.Value, "function")
		case "options":
			r.options(val, invokeOpts, "fn::invoke")
		}
	}
}

// resource checks one resource's fields for what it may reach.
func (r reach) resource(name string, fields *yaml.Node) {
	for i := 0; i+1 < len(fields.Content); i += 2 {
		k, val := fields.Content[i], fields.Content[i+1]
		switch fold(k.Value, resourceFields) {
		case "type":
			if _, refs := interpolation(val.Value); val.Kind != yaml.ScalarNode || len(refs) > 0 {
				r.v.AddAt("code", val.Line, val.Column, "pulumi_yaml", "resource %q: type must be written out, such as simcloud:index:Machine", name)
				continue
			}
			r.token(val, val.Value, "resource type")
		case "get":
			if !r.scope.ProviderLevel {
				r.v.AddAt("code", k.Line, k.Column, RuleExisting, "resource %q: %s is not allowed in tenant components: it reads a resource the program did not create", name, k.Value)
			}
		case "options":
			r.options(val, resourceOpts, fmt.Sprintf("resource %q", name))
		}
	}
}

// options checks resource or invoke options against the engine's list.
func (r reach) options(n *yaml.Node, known []string, of string) {
	if n.Kind != yaml.MappingNode {
		r.v.AddAt("code", n.Line, n.Column, "pulumi_yaml", "the options of %s must be a mapping", of)
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		opt := fold(k.Value, known)
		switch {
		case opt == "":
			r.v.AddAt("code", k.Line, k.Column, "pulumi_yaml", "%s has unknown option %q%s; options are %s",
				of, k.Value, suggest(k.Value, known), strings.Join(known, ", "))
		case opt == "pluginDownloadURL" && !r.scope.ProviderLevel:
			r.v.AddAt("code", k.Line, k.Column, RulePluginURL, "%s: %s is not allowed in tenant components: providers come from the provider admins", of, k.Value)
		case opt == "import" && !r.scope.ProviderLevel:
			r.v.AddAt("code", k.Line, k.Column, RuleExisting, "%s: %s is not allowed in tenant components: it adopts a resource the program did not create", of, k.Value)
		}
	}
}

// token checks that a resource type or function belongs to the component's provider, as the
// engine resolves its package (pulumi:providers:<package> is that package's provider).
func (r reach) token(at *yaml.Node, token, what string) {
	if r.scope.ProviderLevel {
		return
	}
	token = unescape(token)
	if token == stackReference {
		r.v.AddAt("code", at.Line, at.Column, RuleStackRef, "%s is not allowed in tenant components: it reads the outputs of another stack, which may be another tenant's", token)
		return
	}
	parts := strings.Split(token, ":")
	if len(parts) == 3 && parts[0] == "pulumi" && parts[1] == "providers" {
		r.v.AddAt("code", at.Line, at.Column, RuleForeign, "%s %q is not allowed in tenant components: a provider of their own would choose the credentials and the endpoint it reaches, where Nimbus gives the tenant's",
			what, token)
		return
	}
	if parts[0] != r.scope.Package || len(parts) < 2 {
		r.v.AddAt("code", at.Line, at.Column, RuleForeign, "%s %q is not of the %s package: a tenant's component may use only its provider's resources and functions",
			what, token, r.scope.Package)
		return
	}
	module := strings.ToLower(parts[1])
	for _, m := range overlays[parts[0]] {
		if module == m || strings.HasPrefix(module, m+"/") || strings.HasPrefix(module, m+".") {
			r.v.AddAt("code", at.Line, at.Column, RuleNetworkFetch, "%s %q is not allowed in tenant components: it reads manifests or charts from files and URLs on the server",
				what, token)
			return
		}
	}
}

// overlays are the modules of a package whose resources and functions render objects from
// files, URLs or chart repositories rather than take them as properties: what the engine would
// fetch or read on the tenant's behalf, as fn::readFile and fn::remoteAsset would.
var overlays = map[string][]string{
	"kubernetes": {"yaml", "helm", "kustomize"},
}

// packages are the Pulumi packages of the providers Nimbus knows, and Pulumi's own.
var knownPackages = []string{"pulumi", "proxmoxve", "kubernetes", "aws", "oci", "simcloud"}

// packageNamed is the package whose name the program's name is, in any case, or "". The engine
// never sees a program's name as its project (Nimbus names it), so this only says early what
// could never work as meant.
func packageNamed(name string, scope Scope) string {
	for _, p := range append(knownPackages, scope.Package) {
		if p != "" && strings.EqualFold(name, p) {
			return p
		}
	}
	return ""
}

// config checks a config key a program declares: a key of the form <package>:<name> is a
// provider's own setting, and one with a value would set it, credentials included.
func (r reach) config(key *yaml.Node) {
	if !r.scope.ProviderLevel && strings.Contains(key.Value, ":") {
		r.v.AddAt("code", key.Line, key.Column, RuleForeign, "config %q is not allowed in tenant components: it is a provider's own setting, which Nimbus gives", key.Value)
	}
}

// unescape is a string's literal text as the engine reads it: $$ is a $, and ${…} is a
// reference, which adds no text.
func unescape(s string) string {
	text, _ := interpolation(s)
	return text
}

// interpolation reads s as the engine's parseInterpolate does: its literal text, with $$ read
// as $, and the offset in s of each ${…} reference.
func interpolation(s string) (string, []int) {
	var text strings.Builder
	var refs []int
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$$"):
			text.WriteByte('$')
			i += 2
		case strings.HasPrefix(s[i:], "${"):
			refs = append(refs, i)
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return text.String(), refs
			}
			i += end + 1
		default:
			text.WriteByte(s[i])
			i++
		}
	}
	return text.String(), refs
}
