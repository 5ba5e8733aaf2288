package component

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"nimbus/app/kernel/problem"
)

func machineDraft(t *testing.T) Draft {
	t.Helper()
	read := func(name string) []byte {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	return Draft{
		Name: "simcloud-machine", Language: "yaml", Code: string(read("machine.yaml")),
		InputSchema: read("machine.inputs.json"), OutputSchema: read("machine.outputs.json"),
	}
}

var allHosts = map[string]bool{"yaml": true, "nodejs": true}

// yamlEngine runs YAML programs and knows no provider plugin.
type yamlEngine struct{}

func (yamlEngine) LanguageHosts() map[string]bool { return allHosts }
func (yamlEngine) HasProvider(string) bool        { return false }

func TestValidate_MachineIsValid(t *testing.T) {
	d := machineDraft(t)
	in, out, err := Validate(&d, allHosts, simcloud)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(in.Names(), ","); got != "name,cores,memory_mb,image,ip_address,fail_on,delay_ms" {
		t.Fatalf("input order %s", got)
	}
	if len(out.Names()) != 2 {
		t.Fatalf("outputs %v", out.Names())
	}
}

func TestValidate_ReportsWhereAndWhy(t *testing.T) {
	cases := []struct {
		name   string
		edit   func(d *Draft)
		field  string
		line   int
		column int
		says   string
	}{
		{"typo in a top-level key", func(d *Draft) { d.Code = strings.Replace(d.Code, "resources:", "resorces:", 1) }, "code", 25, 1, `did you mean "resources"`},
		{"YAML syntax", func(d *Draft) { d.Code = strings.Replace(d.Code, "  disk:\n", "  disk:\n   bad: [\n", 1) }, "code", 27, 4, "not closed with ]"},
		{"resource without type", func(d *Draft) { d.Code = strings.Replace(d.Code, "    type: simcloud:index:Disk\n", "", 1) }, "code", 26, 3, "has no type"},
		{"unknown resource key", func(d *Draft) {
			d.Code = strings.Replace(d.Code, "    properties:\n      name: ${name}-boot", "    propertes:\n      name: ${name}-boot", 1)
		}, "code", 28, 5, `did you mean "properties"`},
		{"reference to nothing", func(d *Draft) { d.Code = strings.Replace(d.Code, "diskId: ${disk.id}", "diskId: ${dsk.id}", 1) }, "code", 38, 15, "${dsk}"},
		{"input missing from config", func(d *Draft) {
			d.InputSchema = []byte(strings.Replace(string(d.InputSchema), `"properties": {`, `"properties": {"zone": {"type": "string"},`, 1))
		}, "input_schema", 0, 0, `input "zone" is not declared`},
		{"config type disagrees", func(d *Draft) {
			d.Code = strings.Replace(d.Code, "  cores:\n    type: integer", "  cores:\n    type: string", 1)
		}, "code", 7, 3, `config "cores" is string, but the input schema says integer`},
		{"config without input or default", func(d *Draft) {
			d.Code = strings.Replace(d.Code, "config:\n", "config:\n  zone:\n    type: string\n", 1)
		}, "code", 5, 3, "no default"},
		{"secret config the schema does not mark", func(d *Draft) {
			d.Code = strings.Replace(d.Code, "  image:\n    type: string\n", "  image:\n    type: string\n    secret: true\n", 1)
		}, "code", 13, 3, `config "image" is secret, but the input schema does not mark it secret`},
		{"missing output", func(d *Draft) { d.Code = strings.Replace(d.Code, "  ip_address: ${machine.ip}\n", "", 1) }, "output_schema", 0, 0, `output "ip_address"`},
		{"unknown schema keyword", func(d *Draft) {
			d.InputSchema = []byte(strings.Replace(string(d.InputSchema), `"minimum": 1,`, `"minimun": 1,`, 1))
		}, "input_schema", 0, 0, `unknown keyword "minimun"`},
		{"default outside bounds", func(d *Draft) {
			d.InputSchema = []byte(strings.Replace(string(d.InputSchema), `"maximum": 64, "default": 2`, `"maximum": 64, "default": 65`, 1))
		}, "input_schema", 0, 0, "above the maximum"},
		{"nested object in array", func(d *Draft) {
			d.InputSchema = []byte(strings.Replace(string(d.InputSchema), `"properties": {`, `"properties": {"tags": {"type": "array", "items": {"type": "object"}},`, 1))
		}, "input_schema", 0, 0, `needs "items" with a type`},
		{"bad name", func(d *Draft) { d.Name = "Machine!" }, "name", 0, 0, "lower-case"},
		{"huge code", func(d *Draft) { d.Code = strings.Repeat("#", MaxCodeBytes+1) }, "code", 0, 0, "at most 256 KiB"},
		{"missing language host", func(d *Draft) { d.Language = "python" }, "language", 0, 0, "pulumi-language-python host is not installed"},
		{"another language in a tenant's component", func(d *Draft) { d.Language = "typescript" }, "language", 0, 0, "only provider-level components may be written in typescript"},
		{"runtime options", func(d *Draft) {
			d.Code = strings.Replace(d.Code, "runtime: yaml", "runtime:\n  name: yaml\n  options:\n    compiler: sh -c id", 1)
		}, "code", 3, 3, "runtime options are not allowed"},
		{"reading a server file", func(d *Draft) {
			d.Code = strings.Replace(d.Code, "image: ${image}\n      diskId", "image:\n        fn::readFile: /etc/hostname\n      diskId", 1)
		}, "code", 0, 0, "fn::readFile is not allowed"},
		{"plugin download in a tenant component", func(d *Draft) {
			d.Code = strings.Replace(d.Code, "    type: simcloud:index:Disk\n", "    type: simcloud:index:Disk\n    options:\n      pluginDownloadURL: https://example.com/x\n", 1)
		}, "code", 0, 0, "pluginDownloadURL is not allowed"},
		{"binding to no input", func(d *Draft) { d.ResolverBindings = json.RawMessage(`{"hostname": "naming"}`) }, "resolver_bindings", 0, 0, `"hostname"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := machineDraft(t)
			c.edit(&d)
			_, _, err := Validate(&d, allHosts, simcloud)
			var v *problem.ValidationError
			if !errors.As(err, &v) {
				t.Fatalf("got %v, want a validation error", err)
			}
			for _, f := range v.Fields {
				if f.Field == c.field && strings.Contains(f.Message, c.says) {
					if c.line != 0 && (f.Line != c.line || f.Column != c.column) {
						t.Fatalf("reported at %d:%d, want %d:%d (%s)", f.Line, f.Column, c.line, c.column, f.Message)
					}
					return
				}
			}
			t.Fatalf("no %s error saying %q among %+v", c.field, c.says, v.Fields)
		})
	}
}

func TestSchemaApply_DefaultsAndRules(t *testing.T) {
	d := machineDraft(t)
	in, _, err := Validate(&d, allHosts, simcloud)
	if err != nil {
		t.Fatal(err)
	}
	v := &problem.ValidationError{}
	got := in.Apply("parameters", map[string]any{"name": "web-1", "cores": 4.0}, v)
	if v.Err() != nil || got["cores"] != 4.0 || got["memory_mb"] != 2048.0 || got["image"] != "debian-12" {
		t.Fatalf("got %v, %v", got, v.Err())
	}
	v = &problem.ValidationError{}
	in.Apply("parameters", map[string]any{"cores": 65.0, "colour": "red", "fail_on": "sometimes"}, v)
	want := map[string]string{"parameters.name": "required", "parameters.cores": "schema", "parameters.colour": "unknown", "parameters.fail_on": "schema"}
	for _, f := range v.Fields {
		if want[f.Field] == f.Rule {
			delete(want, f.Field)
		}
	}
	if len(want) != 0 {
		t.Fatalf("missing problems %v among %+v", want, v.Fields)
	}
}

// simcloud is the scope of a tenant's component for the simulated cloud.
var simcloud = Scope{Package: "simcloud"}

// A YAML mistake is reported on the line that makes it, in words, without the parser's own.
func TestValidate_YAMLMistakesPointAtTheirLine(t *testing.T) {
	cases := []struct {
		name, program string
		line          int
		says          string
	}{
		{"indented too little", "name: a\nruntime: yaml\nresources:\n  x:\n    type: a\n   bad: 1\n", 6, "not indented in step"},
		{"list not closed", "name: a\nruntime: yaml\nresources:\n  x:\n    type: a\n    properties:\n      name: a\n      y: [1, 2\n", 8, "not closed with ]"},
		{"mapping not closed", "name: a\nruntime: yaml\noutputs:\n  id: {x\n", 4, "not closed with }"},
		{"tab", "name: a\nruntime: yaml\nresources:\n  x:\n\ttype: a\n", 5, "indent with spaces"},
		{"quote not closed", "name: a\nruntime: \"yaml\nresources:\n  x:\n    type: a\n", 2, "quoted value is not closed"},
		{"colon in a value", "name: a\nruntime: yaml\nresources:\n  x:\n    type: a: b\n", 5, "colon"},
		{"list item among keys", "name: a\nruntime: yaml\noutputs:\n  - a\n  b: c\n", 5, "list item"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := &problem.ValidationError{}
			ParseYAML(c.program, simcloud, v)
			if len(v.Fields) != 1 {
				t.Fatalf("problems %+v, want one", v.Fields)
			}
			f := v.Fields[0]
			if f.Line != c.line || !strings.Contains(f.Message, c.says) || strings.Contains(f.Message, "expected") || strings.Contains(f.Message, "yaml:") {
				t.Errorf("line %d: %q; want line %d saying %q in words", f.Line, f.Message, c.line, c.says)
			}
		})
	}
}

func TestValidate_DuplicateKeys(t *testing.T) {
	program := "name: a\nruntime: yaml\nresources:\n  x:\n    type: simcloud:index:Disk\n    properties:\n      name: a\n      name: b\n  x:\n    type: simcloud:index:Disk\n"
	v := &problem.ValidationError{}
	ParseYAML(program, simcloud, v)
	want := map[int]string{8: `"name" appears twice here (first on line 7)`, 9: `"x" appears twice here (first on line 4)`}
	for _, f := range v.Fields {
		if strings.Contains(f.Message, want[f.Line]) && want[f.Line] != "" {
			delete(want, f.Line)
		}
	}
	if len(want) != 0 {
		t.Fatalf("not flagged: %v among %+v", want, v.Fields)
	}
}

// A schema that is not JSON, or holds a value of the wrong kind, is explained in words, at
// its place, without the decoder's Go types.
func TestParseSchema_SaysJSONMistakesInWords(t *testing.T) {
	cases := []struct{ raw, says string }{
		{`{"type": "object", "properties": {"a": {"type": "string",}}}`, "a quoted name was expected here"},
		{`{"type": "object", "properties": {"a": {"type": "string"}}`, "ends before every { and [ is closed"},
		{`{"type": "object", "properties": {"a": {"type": "string" "title": "A"}}}`, "a comma or } was expected here"},
		{`{"type": "object", "properties": {"a": {"type": "integer", "minimum": "one"}}}`, `"minimum" must be a number, not text`},
		{`{"type": "object", "required": "a"}`, `"required" must be a list, not text`},
	}
	for _, c := range cases {
		v := &problem.ValidationError{}
		ParseSchema("input_schema", []byte(c.raw), v)
		if len(v.Fields) != 1 || !strings.Contains(v.Fields[0].Message, c.says) || strings.Contains(v.Fields[0].Message, "Go ") ||
			strings.Contains(v.Fields[0].Message, "float64") {
			t.Errorf("%s: %+v, want one problem saying %q", c.raw, v.Fields, c.says)
		}
	}
}
