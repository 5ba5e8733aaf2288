package component

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"nimbus/app/domain/resolver"
	"nimbus/app/kernel/problem"
)

// Draft is everything an author writes: the program and its contract.
type Draft struct {
	Name             string          `json:"name"`
	DisplayName      string          `json:"display_name"`
	Description      string          `json:"description"`
	Language         string          `json:"language"`
	Code             string          `json:"code"`
	InputSchema      json.RawMessage `json:"input_schema"`
	OutputSchema     json.RawMessage `json:"output_schema"`
	ResolverBindings json.RawMessage `json:"resolver_bindings"`
}

// MaxCodeBytes caps a program; the editor says so before it is reached.
const MaxCodeBytes = 256 << 10

var componentName = regexp.MustCompile(`^[a-z][a-z0-9-]{1,62}$`)

// Languages a component may be written in.
var Languages = []string{"yaml", "typescript", "python"}

// languageHost names the Pulumi language host a language needs.
func languageHost(lang string) string {
	if lang == "typescript" {
		return "nodejs"
	}
	return lang
}

// Validate checks a draft completely: names, sizes, the program's structure, the schemas, and
// that program and schemas agree. hosts says which languages the operator lets run here; scope
// says whose program it is, which decides what it may reach (see ParseYAML). It returns the
// parsed schemas for reuse.
func Validate(d *Draft, hosts map[string]bool, scope Scope) (in, out *Schema, err error) {
	v := &problem.ValidationError{}
	switch {
	case !componentName.MatchString(d.Name):
		v.Add("name", "pattern", "must be 2–63 characters of lower-case letters, digits and -, starting with a letter")
	case utf8.RuneCountInString(d.DisplayName) > 200:
		v.Add("display_name", "max_length", "must be at most 200 characters")
	case utf8.RuneCountInString(d.Description) > 4000:
		v.Add("description", "max_length", "must be at most 4000 characters")
	}
	if strings.TrimSpace(d.DisplayName) == "" {
		d.DisplayName = d.Name
	}
	switch {
	case !slices.Contains(Languages, d.Language):
		v.Add("language", "one_of", "must be one of yaml, typescript, python")
	case !hosts[languageHost(d.Language)]:
		v.Add("language", "host", "%s programs cannot run here: the operator has not enabled them, or the pulumi-language-%s host is not installed", d.Language, languageHost(d.Language))
	case d.Language != "yaml" && !scope.ProviderLevel:
		// Only YAML can be read before it runs; a program in a general-purpose language can do
		// anything the engine's sandbox lets it.
		v.Add("language", "provider_level", "only provider-level components may be written in %s; write tenant components in YAML", d.Language)
	}
	switch {
	case strings.TrimSpace(d.Code) == "":
		v.Add("code", "required", "write the Pulumi program")
	case len(d.Code) > MaxCodeBytes:
		v.Add("code", "max_size", "is %d KiB; a program may be at most %d KiB", len(d.Code)>>10, MaxCodeBytes>>10)
	}
	in = ParseSchema("input_schema", d.InputSchema, v)
	out = ParseSchema("output_schema", d.OutputSchema, v)
	bindings := map[string]string{}
	if len(d.ResolverBindings) > 0 && string(d.ResolverBindings) != "null" {
		if err := json.Unmarshal(d.ResolverBindings, &bindings); err != nil {
			v.Add("resolver_bindings", "json", "must be an object mapping input names to resolver types, such as {\"ip_address\": \"ipam\"}")
		}
	}
	for input, target := range bindings {
		if in != nil && in.Properties[input] == nil {
			v.Add("resolver_bindings", "input", "binds %q, which is not an input", input)
		} else if err := resolver.CheckBinding(input, target); err != nil {
			v.Add("resolver_bindings", "resolver", "%v", err)
		}
	}
	if d.Language == "yaml" && len(d.Code) <= MaxCodeBytes && strings.TrimSpace(d.Code) != "" {
		if prog := ParseYAML(d.Code, scope, v); prog != nil && in != nil && out != nil {
			agree(prog, in, out, v)
		}
	}
	return in, out, v.Err()
}

// agree checks that the program's config matches the input schema and that it produces every
// output the output schema promises.
func agree(p *Program, in, out *Schema, v *problem.ValidationError) {
	for _, name := range in.Names() {
		cfg, ok := p.Config[name]
		if !ok {
			v.Add("input_schema", "program", "input %q is not declared in the program's config", name)
			continue
		}
		want := in.Properties[name].Type
		if cfg.Type != "" && !compatible(cfg.Type, want) {
			v.AddAt("code", cfg.Line, cfg.Column, "program", "config %q is %s, but the input schema says %s", name, cfg.Type, want)
		}
		// Deploys seal and pass as secrets the inputs the schema marks; the engine refuses any
		// other value for config the program declares secret.
		if cfg.Secret && !in.Properties[name].Secret {
			v.AddAt("code", cfg.Line, cfg.Column, "program", "config %q is secret, but the input schema does not mark it secret (x-secret)", name)
		}
	}
	for name, cfg := range p.Config {
		if _, ok := in.Properties[name]; !ok && !cfg.HasDefault {
			v.AddAt("code", cfg.Line, cfg.Column, "program", "config %q is not an input and has no default, so nothing would set it", name)
		}
	}
	for _, name := range out.Names() {
		if _, ok := p.Outputs[name]; !ok {
			v.Add("output_schema", "program", "output %q is not among the program's outputs", name)
		}
	}
}

func compatible(configType, schemaType string) bool {
	return configType == schemaType || configType == "number" && schemaType == "integer" || configType == "integer" && schemaType == "number"
}

// ValidateChangelog checks a publish's changelog.
func ValidateChangelog(changelog string) error {
	switch n := utf8.RuneCountInString(strings.TrimSpace(changelog)); {
	case n == 0:
		return problem.Invalid("changelog", "required", "say what changed in this version")
	case n > 4000:
		return problem.Invalid("changelog", "max_length", "must be at most 4000 characters, not %d", n)
	}
	return nil
}
