package component

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode"

	"go.yaml.in/yaml/v3"

	"nimbus/app/kernel/problem"
)

// spellings returns every way of writing word's ASCII letters in upper or lower case, and the
// spellings with the non-ASCII letters that the engine's case-insensitive matching reads as
// ASCII ones (İ lowers to i, the Kelvin sign to k; ſ folds to s).
func spellings(word string) []string {
	var letters []int
	for i, r := range word {
		if unicode.IsLetter(r) {
			letters = append(letters, i)
		}
	}
	out := make([]string, 0, 1<<len(letters))
	for mask := 0; mask < 1<<len(letters); mask++ {
		b := []byte(word)
		for bit, i := range letters {
			if mask&(1<<bit) != 0 {
				b[i] = byte(unicode.ToUpper(rune(b[i])))
			} else {
				b[i] = byte(unicode.ToLower(rune(b[i])))
			}
		}
		out = append(out, string(b))
	}
	for _, swap := range [][2]string{{"i", "İ"}, {"k", "\u212a"}, {"s", "ſ"}} {
		if l := strings.ToLower(word); strings.Contains(l, swap[0]) {
			out = append(out, strings.ReplaceAll(l, swap[0], swap[1]))
		}
	}
	return out
}

// engineReads reports whether the pinned engine reads spelling as the keyword: functions by
// strings.ToLower, fields and options by strings.EqualFold.
func engineReads(spelling, keyword string) bool {
	if strings.HasPrefix(keyword, "fn::") {
		return strings.ToLower(spelling) == strings.ToLower(keyword)
	}
	return strings.EqualFold(spelling, keyword)
}

// refusedAt parses code as a tenant's simcloud program and returns the problems at line:col.
func refusedAt(t *testing.T, code string, scope Scope, line, col int) []problem.FieldError {
	t.Helper()
	v := &problem.ValidationError{}
	ParseYAML(code, scope, v)
	var at []problem.FieldError
	for _, f := range v.Fields {
		if f.Line == line && f.Column == col {
			at = append(at, f)
		}
	}
	return at
}

// where returns the 1-based line and column of the first placeholder in template.
func where(template string) (int, int) {
	i := strings.Index(template, "KEY")
	before := template[:i]
	return strings.Count(before, "\n") + 1, i - strings.LastIndex(before, "\n")
}

var refusedFunctions = []struct{ name, rule string }{
	{"fn::readFile", RuleFileAccess},
	{"fn::fileAsset", RuleFileAccess},
	{"fn::fileArchive", RuleFileAccess},
	{"fn::remoteAsset", RuleNetworkFetch},
	{"fn::remoteArchive", RuleNetworkFetch},
	{"fn::stackReference", RuleStackRef},
}

func TestContain_EverySpellingOfARefusedFunctionIsRefused(t *testing.T) {
	for _, fn := range refusedFunctions {
		t.Run(fn.name, func(t *testing.T) {
			n := 0
			for _, s := range spellings(fn.name) {
				if !engineReads(s, fn.name) {
					continue // ſ: the engine's ToLower does not read it as s either
				}
				n++
				key := &yaml.Node{Kind: yaml.ScalarNode, Value: s, Line: 5, Column: 7}
				call := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{key, {Kind: yaml.ScalarNode, Value: "/etc/hostname"}}}
				v := &problem.ValidationError{}
				reach{scope: simcloud, v: v}.walk(call)
				if len(v.Fields) != 1 || v.Fields[0].Rule != fn.rule || v.Fields[0].Line != 5 || v.Fields[0].Column != 7 {
					t.Fatalf("%q: got %+v, want one %s at 5:7", s, v.Fields, fn.rule)
				}
			}
			t.Logf("%d spellings refused", n)
		})
	}
}

func TestContain_EverySpellingOfARefusedOptionIsRefused(t *testing.T) {
	options := []struct {
		name, rule string
		of         []string
	}{
		{"pluginDownloadURL", RulePluginURL, resourceOpts},
		{"pluginDownloadURL", RulePluginURL, invokeOpts},
		{"import", RuleExisting, resourceOpts},
	}
	for _, opt := range options {
		n := 0
		for _, s := range spellings(opt.name) {
			if !engineReads(s, opt.name) {
				continue
			}
			n++
			key := &yaml.Node{Kind: yaml.ScalarNode, Value: s, Line: 8, Column: 9}
			opts := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{key, {Kind: yaml.ScalarNode, Value: "x"}}}
			v := &problem.ValidationError{}
			reach{scope: simcloud, v: v}.options(opts, opt.of, "resource")
			if len(v.Fields) != 1 || v.Fields[0].Rule != opt.rule || v.Fields[0].Line != 8 || v.Fields[0].Column != 9 {
				t.Fatalf("%q: got %+v, want one %s at 8:9", s, v.Fields, opt.rule)
			}
			v = &problem.ValidationError{}
			reach{scope: Scope{ProviderLevel: true, Package: "simcloud"}, v: v}.options(opts, opt.of, "resource")
			if len(v.Fields) != 0 {
				t.Fatalf("%q refused in a provider-level program: %+v", s, v.Fields)
			}
		}
		t.Logf("%s: %d spellings refused", opt.name, n)
	}
}

// The options of resources, providers and invokes are found in whole programs, however their
// sections are spelled.
func TestContain_RefusedOptionsInPrograms(t *testing.T) {
	templates := map[string]string{
		"resource options": "name: p\nruntime: yaml\nresources:\n  m:\n    type: simcloud:index:Machine\n    options:\n      KEY: x\n",
		"invoke options": "name: p\nruntime: yaml\nvariables:\n  i:\n    fn::invoke:\n      function: simcloud:index:getImage\n" +
			"      options:\n        KEY: x\n",
		"invoke options spelled otherwise": "name: p\nruntime: yaml\nvariables:\n  i:\n    Fn::Invoke:\n      FUNCTION: simcloud:index:getImage\n" +
			"      OPTIONS:\n        KEY: x\n",
		"a provider's options": "name: p\nruntime: yaml\nresources:\n  prov:\n    type: pulumi:providers:simcloud\n    OPTIONS:\n      KEY: x\n",
	}
	options := []struct{ name, rule string }{{"pluginDownloadURL", RulePluginURL}, {"import", RuleExisting}}
	for place, template := range templates {
		line, col := where(template)
		for _, opt := range options {
			if opt.name == "import" && strings.Contains(place, "invoke") {
				continue // invokes have no import option
			}
			for _, s := range sample(spellings(opt.name)) {
				if !engineReads(s, opt.name) {
					continue // refused as an unknown option instead
				}
				code := strings.Replace(template, "KEY", s, 1)
				at := refusedAt(t, code, simcloud, line, col)
				if len(at) != 1 || at[0].Rule != opt.rule {
					t.Errorf("%s, %q: got %+v at %d:%d, want one %s\n%s", place, s, at, line, col, opt.rule, code)
				}
			}
		}
	}
}

// sample picks some spellings evenly, with the unusual letters at the end.
func sample(all []string) []string {
	var out []string
	for i := 0; i < len(all); i += max(1, len(all)/16) {
		out = append(out, all[i])
	}
	return append(out, all[len(all)-1])
}

// Every place the engine reads an expression can call a function; each is refused where it is.
func TestContain_RefusedWhereverWritten(t *testing.T) {
	places := map[string]string{
		"output":   "name: p\nruntime: yaml\noutputs:\n  o:\n    KEY: x\n",
		"variable": "name: p\nruntime: yaml\nvariables:\n  v:\n    KEY: x\noutputs:\n  o: ${v}\n",
		"resource property": "name: p\nruntime: yaml\nresources:\n  m:\n    type: simcloud:index:Machine\n    properties:\n" +
			"      name:\n        KEY: x\n",
		"nested function": "name: p\nruntime: yaml\noutputs:\n  o:\n    fn::join:\n      - \",\"\n      - - a\n        - fn::toBase64:\n" +
			"            KEY: x\n",
		"invoke argument": "name: p\nruntime: yaml\nvariables:\n  i:\n    fn::invoke:\n      function: simcloud:index:getImage\n" +
			"      arguments:\n        name:\n          KEY: x\n",
		"resource option": "name: p\nruntime: yaml\nresources:\n  m:\n    type: simcloud:index:Machine\n    options:\n" +
			"      dependsOn:\n        - KEY: x\n",
		"config default": "name: p\nruntime: yaml\nconfig:\n  c:\n    type: string\n    default:\n      KEY: x\n",
		"flow style":     "name: p\nruntime: yaml\noutputs: {o: {KEY: x}}\n",
		"quoted key":     "name: p\nruntime: yaml\noutputs:\n  o:\n    \"KEY\": x\n",
	}
	for place, template := range places {
		line, col := where(template)
		if strings.Contains(template, `"KEY"`) {
			col-- // the key starts at its quote
		}
		for _, fn := range refusedFunctions {
			for _, s := range sample(spellings(fn.name)) {
				if !engineReads(s, fn.name) {
					continue
				}
				code := strings.Replace(template, "KEY", s, 1)
				at := refusedAt(t, code, simcloud, line, col)
				if len(at) != 1 || at[0].Rule != fn.rule {
					t.Errorf("%s, %q: got %+v at %d:%d, want one %s\n%s", place, s, at, line, col, fn.rule, code)
				}
			}
		}
	}
}

// A tenant's Kubernetes program makes API objects with the credentials Nimbus gives: it names
// no kubeconfig of its own, and renders nothing from files, URLs or chart repositories.
func TestContain_TenantKubernetesProgramsMakeOnlyAPIObjects(t *testing.T) {
	kube := Scope{Package: "kubernetes"}
	for name, c := range map[string]struct{ code, rule string }{
		"a provider of its own":     {"resources:\n  p:\n    type: pulumi:providers:kubernetes\n    properties:\n      kubeconfig: x\n", RuleForeign},
		"the provider's kubeconfig": {"config:\n  kubernetes:kubeconfig:\n    value: x\n", RuleForeign},
		"the older config section":  {"configuration:\n  Kubernetes:Context:\n    default: x\n", RuleForeign},
		"manifests from a file":     {"resources:\n  g:\n    type: kubernetes:yaml/v2:ConfigFile\n    properties:\n      file: /etc/passwd\n", RuleNetworkFetch},
		"the first yaml module":     {"resources:\n  g:\n    type: kubernetes:yaml:ConfigGroup\n", RuleNetworkFetch},
		"a chart":                   {"resources:\n  r:\n    type: kubernetes:helm.sh/v3:Release\n", RuleNetworkFetch},
		"a chart in capitals":       {"resources:\n  r:\n    type: kubernetes:Helm.sh/v4:Chart\n", RuleNetworkFetch},
		"a kustomization":           {"resources:\n  k:\n    type: kubernetes:kustomize/v2:Directory\n", RuleNetworkFetch},
		"a chart rendered":          {"variables:\n  t:\n    fn::kubernetes:helm:template: {}\n", RuleNetworkFetch},
	} {
		t.Run(name, func(t *testing.T) {
			code := "name: p\nruntime: yaml\n" + c.code
			v := &problem.ValidationError{}
			ParseYAML(code, kube, v)
			if len(v.Fields) != 1 || v.Fields[0].Rule != c.rule || v.Fields[0].Line == 0 {
				t.Fatalf("got %+v, want one %s with its place", v.Fields, c.rule)
			}
			v = &problem.ValidationError{}
			ParseYAML(code, Scope{ProviderLevel: true, Package: "kubernetes"}, v)
			if len(v.Fields) != 0 {
				t.Fatalf("refused in a provider-level program: %+v", v.Fields)
			}
		})
	}
	v := &problem.ValidationError{}
	ParseYAML("name: p\nruntime: yaml\nconfig:\n  name:\n    type: string\nresources:\n  c:\n    type: kubernetes:core/v1:ConfigMap\n  i:\n    type: kubernetes:networking.k8s.io/v1:Ingress\n", kube, v)
	if err := v.Err(); err != nil {
		t.Fatalf("API objects are refused: %v", err)
	}
}

func TestContain_TenantProgramsStayWithTheirProvider(t *testing.T) {
	cases := []struct {
		name, code, rule string
	}{
		{"foreign resource", "resources:\n  b:\n    type: aws:s3/bucket:Bucket\n", RuleForeign},
		{"foreign provider resource", "resources:\n  p:\n    type: pulumi:providers:aws\n", RuleForeign},
		{"a provider of its own", "resources:\n  p:\n    type: pulumi:providers:simcloud\n    defaultProvider: true\n", RuleForeign},
		{"a provider's setting", "config:\n  simcloud:dir:\n    value: /etc\n", RuleForeign},
		{"foreign invoke", "variables:\n  i:\n    fn::invoke:\n      function: aws:ec2:getAmi\n", RuleForeign},
		{"foreign invoke, spelled otherwise", "variables:\n  i:\n    FN::INVOKE:\n      Function: aws:ec2:getAmi\n", RuleForeign},
		{"foreign invoke shorthand", "variables:\n  i:\n    fn::aws:ec2:getAmi: {}\n", RuleForeign},
		{"foreign invoke shorthand in capitals", "variables:\n  i:\n    FN::AWS:EC2:GETAMI: {}\n", RuleForeign},
		{"stack reference resource", "resources:\n  r:\n    type: pulumi:pulumi:StackReference\n    properties:\n      name: o/p/s\n", RuleStackRef},
		{"stack reference function", "variables:\n  r:\n    Fn::StackReference: [o/p/s, out]\n", RuleStackRef},
		{"get", "resources:\n  m:\n    type: simcloud:index:Machine\n    get:\n      id: m-1\n", RuleExisting},
		{"get spelled otherwise", "resources:\n  m:\n    type: simcloud:index:Machine\n    GET:\n      id: m-1\n", RuleExisting},
		{"import", "resources:\n  m:\n    type: simcloud:index:Machine\n    options:\n      Import: m-1\n", RuleExisting},
		{"unknown function", "outputs:\n  o:\n    fn::unsecret: x\n", RuleFunction},
		{"file function of other engines", "outputs:\n  o:\n    fn::filebase64: /etc/hostname\n", RuleFunction},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code := "name: p\nruntime: yaml\n" + c.code
			v := &problem.ValidationError{}
			ParseYAML(code, simcloud, v)
			if len(v.Fields) != 1 || v.Fields[0].Rule != c.rule || v.Fields[0].Line == 0 {
				t.Fatalf("got %+v, want one %s with its place", v.Fields, c.rule)
			}
			v = &problem.ValidationError{}
			ParseYAML(code, Scope{ProviderLevel: true, Package: "simcloud"}, v)
			if c.rule != RuleFunction && len(v.Fields) != 0 {
				t.Fatalf("refused in a provider-level program: %+v", v.Fields)
			}
		})
	}
}

func TestContain_OwnProviderAndSafeFunctionsPass(t *testing.T) {
	code := `name: p
runtime: yaml
config:
  size:
    type: integer
    default: 2
resources:
  d:
    type: simcloud:index:Disk
  m:
    Type: simcloud:index:Machine
    Properties:
      name:
        Fn::Join: ["-", [a, "$${literal}"]]
      cores: ${size}
    OPTIONS:
      DependsOn: ["${d}"]
      protect: false
variables:
  img:
    fn::simcloud:index:getImage:
      name: debian
  img2:
    fn::invoke:
      function: simcloud:index:getImage
      arguments: {name: debian}
      options: {Version: 1.0.0}
      return: id
  enc:
    FN::TOBASE64: x
  s:
    fn::secret: y
  a:
    fn::assetArchive:
      f:
        fn::stringAsset: text
outputs:
  o:
    fn::toJSON: {a: "${img}"}
  sel:
    fn::select: [0, {fn::split: [",", "a,b"]}]
  dec:
    fn::fromBase64: eA==
`
	v := &problem.ValidationError{}
	ParseYAML(code, simcloud, v)
	if err := v.Err(); err != nil {
		t.Fatal(err)
	}
}

// The escape $${ is a literal ${ to the engine, not a reference.
func TestContain_EscapedInterpolationIsText(t *testing.T) {
	v := &problem.ValidationError{}
	ParseYAML("name: p\nruntime: yaml\noutputs:\n  o: \"$${notAName} and $$$${alsoNot}\"\n  p: $${x}-${pulumi.stack}\n", simcloud, v)
	if err := v.Err(); err != nil {
		t.Fatal(err)
	}
	v = &problem.ValidationError{}
	ParseYAML("name: p\nruntime: yaml\noutputs:\n  o: $$${missing}\n", simcloud, v)
	if len(v.Fields) != 1 || v.Fields[0].Rule != "reference" || v.Fields[0].Column != 8 {
		t.Fatalf("got %+v, want the reference after $$ at column 8", v.Fields)
	}
}

func TestContain_StructureTheEngineAndCLIReadAlike(t *testing.T) {
	cases := []struct{ name, code, says string }{
		{"alias", "name: p\nruntime: yaml\nvariables:\n  a: &x {fn::secret: s}\n  b: *x\n", "aliases"},
		{"merge key", "name: p\nruntime: yaml\nvariables:\n  o: &o {protect: true}\nresources:\n  m:\n    type: simcloud:index:Machine\n    options:\n      <<: *o\n", "alias"},
		{"top-level key in capitals", "name: p\nruntime: yaml\nRESOURCES:\n  m:\n    type: simcloud:index:Machine\n", `write "RESOURCES" as "resources"`},
		{"project key", "name: p\nruntime: yaml\nplugins:\n  providers: [{name: x, path: /tmp}]\n", "unknown top-level key"},
		{"packages", "name: p\nruntime: yaml\npackages:\n  x: https://example.com/x\n", "unknown top-level key"},
		{"section twice", "name: p\nruntime: yaml\noutputs: {}\noutputs: {}\n", "twice"},
		{"capitalised config type", "name: p\nruntime: yaml\nconfig:\n  c:\n    type: String\n", `unknown type "String"`},
		{"unknown resource option", "name: p\nruntime: yaml\nresources:\n  m:\n    type: simcloud:index:Machine\n    options:\n      protekt: true\n", `did you mean "protect"`},
		{"interpolated type", "name: p\nruntime: yaml\nvariables:\n  t: simcloud\nresources:\n  m:\n    type: ${t}:index:Machine\n", "type must be written out"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := &problem.ValidationError{}
			ParseYAML(c.code, simcloud, v)
			if !slices.ContainsFunc(v.Fields, func(f problem.FieldError) bool { return strings.Contains(f.Message, c.says) && f.Line > 0 }) {
				t.Fatalf("no problem saying %q in %+v", c.says, v.Fields)
			}
		})
	}
}

func TestSpellings_CoverEveryCase(t *testing.T) {
	got := spellings("ab")
	if want := []string{"ab", "Ab", "aB", "AB"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v", got)
	}
}

// A program named after a package, in any spelling, is refused for anyone: Nimbus names the
// project, and this refusal stands should that wall ever fall.
func TestContain_ProgramNamedAfterAPackageIsRefused(t *testing.T) {
	for _, pkg := range []string{"simcloud", "kubernetes", "proxmoxve", "pulumi", "aws"} {
		for _, name := range spellings(pkg) {
			if strings.IndexFunc(name, func(r rune) bool { return r > unicode.MaxASCII }) >= 0 {
				continue // a config namespace is compared as written: only ASCII case matters
			}
			for _, scope := range []Scope{simcloud, {ProviderLevel: true, Package: "simcloud"}} {
				at := refusedAt(t, "name: "+name+"\nruntime: yaml\n", scope, 1, 7)
				if len(at) != 1 || at[0].Rule != RuleForeign || !strings.Contains(at[0].Message, pkg+" package") {
					t.Fatalf("name %q (provider level %v): %+v", name, scope.ProviderLevel, at)
				}
			}
		}
	}
	if at := refusedAt(t, "name: simcloud-machine\nruntime: yaml\n", simcloud, 1, 7); len(at) != 0 {
		t.Fatalf("a name that only starts with a package's: %+v", at)
	}
}
