package main

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"nimbus/app/domain/component"
)

// No container engine runs where the tests run, so the image is checked by reading how it is
// made: what the server needs at run time must be what the Dockerfile puts in the image.

// instruction is one Dockerfile instruction, its continuation lines joined.
type instruction struct {
	cmd  string // upper case: FROM, RUN, COPY, …
	args string
}

// stage is one FROM and the instructions under it.
type stage struct {
	from string
	body []instruction
}

func (s stage) all(cmd string) []string {
	var out []string
	for _, in := range s.body {
		if in.cmd == cmd {
			out = append(out, in.args)
		}
	}
	return out
}

func readDockerfile(t *testing.T) []stage {
	t.Helper()
	data, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var (
		stages  []stage
		pending strings.Builder
	)
	for _, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") || trimmed == "" && pending.Len() == 0 {
			continue
		}
		if cont, ok := strings.CutSuffix(trimmed, `\`); ok {
			pending.WriteString(cont + " ")
			continue
		}
		pending.WriteString(trimmed)
		cmd, args, _ := strings.Cut(strings.TrimSpace(pending.String()), " ")
		pending.Reset()
		in := instruction{cmd: strings.ToUpper(cmd), args: strings.Join(strings.Fields(args), " ")}
		if in.cmd == "FROM" {
			stages = append(stages, stage{from: in.args})
			continue
		}
		if len(stages) == 0 {
			t.Fatalf("%s before the first FROM", in.cmd)
		}
		stages[len(stages)-1].body = append(stages[len(stages)-1].body, in)
	}
	if len(stages) != 2 {
		t.Fatalf("%d stages, want a build stage and the image", len(stages))
	}
	return stages
}

// args are a stage's ARG defaults, for reading its commands as they run.
func (s stage) expand(text string) string {
	for _, a := range s.all("ARG") {
		name, value, _ := strings.Cut(a, "=")
		text = strings.NewReplacer("${"+name+"}", value, "$"+name, value).Replace(text)
	}
	return text
}

func goModLine(t *testing.T, keyword string) string {
	t.Helper()
	data, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, keyword+" "); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func TestDockerfile_BuildsWithTheGoOfGoMod(t *testing.T) {
	build := readDockerfile(t)[0]
	want := goModLine(t, "go")
	if tc := goModLine(t, "toolchain"); tc != "" {
		want = strings.TrimPrefix(tc, "go")
	}
	if strings.Count(want, ".") != 2 {
		t.Fatalf("go.mod names go %q, not a patch release", want)
	}
	if build.from != "golang:"+want+"-bookworm AS build" {
		t.Fatalf("the build stage is FROM %s, want golang:%s-bookworm AS build", build.from, want)
	}
}

func TestDockerfile_SetsTheVersion(t *testing.T) {
	// The variable the version command prints, found where it is declared.
	files, err := parser.ParseDir(token.NewFileSet(), "app/cli", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	declared := false
	for _, f := range files["cli"].Files {
		ast.Inspect(f, func(n ast.Node) bool {
			if v, ok := n.(*ast.ValueSpec); ok && slices.ContainsFunc(v.Names, func(id *ast.Ident) bool { return id.Name == "Version" }) {
				declared = true
			}
			return !declared
		})
	}
	if !declared {
		t.Fatal("app/cli declares no Version")
	}
	flag := "-X " + goModLine(t, "module") + "/app/cli.Version=${VERSION}"
	build := readDockerfile(t)[0]
	if !slices.ContainsFunc(build.all("RUN"), func(run string) bool { return strings.Contains(run, "go build") && strings.Contains(run, flag) }) {
		t.Fatalf("no go build in the build stage links %s", flag)
	}
	if !slices.ContainsFunc(build.all("ARG"), func(a string) bool { return strings.HasPrefix(a, "VERSION=") }) {
		t.Fatal("the build stage has no VERSION argument")
	}
}

func TestDockerfile_RunsUnderTini(t *testing.T) {
	image := readDockerfile(t)[1]
	if !slices.ContainsFunc(image.all("RUN"), func(run string) bool {
		return regexp.MustCompile(`apt-get install [^&]*\btini\b`).MatchString(run)
	}) {
		t.Fatal("the image does not install tini")
	}
	entry := image.all("ENTRYPOINT")
	var argv []string
	if len(entry) != 1 || json.Unmarshal([]byte(entry[0]), &argv) != nil {
		t.Fatalf("ENTRYPOINT %q, want one in exec form", entry)
	}
	if !slices.Equal(argv, []string{"/usr/bin/tini", "--", "nimbus"}) {
		t.Fatalf("ENTRYPOINT %q, want tini running nimbus", argv)
	}
}

func TestDockerfile_FixedUser(t *testing.T) {
	image := readDockerfile(t)[1]
	run := strings.Join(image.all("RUN"), " ")
	gid := regexp.MustCompile(`groupadd [^&]*--gid (\d+) nimbus`).FindStringSubmatch(run)
	uid := regexp.MustCompile(`useradd [^&]*--uid (\d+) [^&]*nimbus`).FindStringSubmatch(run)
	if gid == nil || uid == nil {
		t.Fatalf("the nimbus account has no fixed uid and gid: %s", run)
	}
	if uid[1] == "0" || gid[1] == "0" {
		t.Fatal("the nimbus account is root")
	}
	if user := image.all("USER"); len(user) != 1 || user[0] != uid[1]+":"+gid[1] {
		t.Fatalf("USER %q, want %s:%s", user, uid[1], gid[1])
	}
	if !strings.Contains(run, "chown nimbus:nimbus /data") {
		t.Fatal("/data is not the nimbus account's")
	}
}

// TestDockerfile_ShipsEveryPlugin checks that the image holds the CLI, the language host and
// the provider plugin of every built-in component, each at the version its programs pin, and
// builds what `go tool task toolchain` builds.
func TestDockerfile_ShipsEveryPlugin(t *testing.T) {
	stages := readDockerfile(t)
	build, image := stages[0], stages[1]

	needed := []string{"pulumi"}
	pinned := map[string]string{} // package → the version the built-in programs ask for
	builtins, err := component.Builtins()
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range builtins {
		pkg := component.PackageOf(b.Provider)
		for _, bin := range []string{"pulumi-language-" + b.Language, "pulumi-resource-" + pkg} {
			if !slices.Contains(needed, bin) {
				needed = append(needed, bin)
			}
		}
		for p, v := range pluginVersions(t, b.Code) {
			if p != pkg {
				t.Fatalf("%s uses package %s, not its provider's %s", b.Name, p, pkg)
			}
			if old, ok := pinned[p]; ok && old != v {
				t.Fatalf("built-in components pin %s at both %s and %s: the image can hold one", p, old, v)
			}
			pinned[p] = v
		}
	}

	var pulumiDir string
	for _, env := range image.all("ENV") {
		if m := regexp.MustCompile(`\bNIMBUS_PULUMI_DIR=(\S+)`).FindStringSubmatch(env); m != nil {
			pulumiDir = m[1]
		}
	}
	if pulumiDir == "" {
		t.Fatal("the image does not set NIMBUS_PULUMI_DIR")
	}
	var shipped []string
	for _, c := range image.all("COPY") {
		f := strings.Fields(c)
		if len(f) > 2 && f[0] == "--from=build" && strings.TrimSuffix(f[len(f)-1], "/") == pulumiDir {
			for _, src := range f[1 : len(f)-1] {
				shipped = append(shipped, src[strings.LastIndex(src, "/")+1:])
			}
		}
	}
	for _, bin := range needed {
		if !slices.Contains(shipped, bin) {
			t.Errorf("the image does not copy %s into %s (it copies %v)", bin, pulumiDir, shipped)
		}
	}

	runs := strings.ReplaceAll(build.expand(strings.Join(build.all("RUN"), "\n")), `"`, "")
	for pkg, v := range pinned {
		if !strings.Contains(runs, "plugin install resource "+pkg+" "+v+" ") {
			t.Errorf("the build stage does not install the %s plugin at %s, the version the built-in components pin", pkg, v)
		}
	}
	for _, script := range toolchainScripts(t) {
		if !strings.Contains(runs, script+" ") {
			t.Errorf("the toolchain task runs %s and the build stage does not", script)
		}
	}
}

// pluginVersions reads, from a Pulumi YAML program, the provider versions its resources and
// invokes ask for, by package.
func pluginVersions(t *testing.T, code string) map[string]string {
	t.Helper()
	type options struct {
		Version string `yaml:"version"`
	}
	var prog struct {
		Resources map[string]struct {
			Type    string  `yaml:"type"`
			Options options `yaml:"options"`
		} `yaml:"resources"`
		Variables map[string]struct {
			Invoke *struct {
				Function string  `yaml:"function"`
				Options  options `yaml:"options"`
			} `yaml:"fn::invoke"`
		} `yaml:"variables"`
	}
	if err := yaml.Unmarshal([]byte(code), &prog); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	add := func(token, version string) {
		if version != "" {
			pkg, _, _ := strings.Cut(token, ":")
			out[pkg] = version
		}
	}
	for _, r := range prog.Resources {
		add(r.Type, r.Options.Version)
	}
	for _, v := range prog.Variables {
		if v.Invoke != nil {
			add(v.Invoke.Function, v.Invoke.Options.Version)
		}
	}
	return out
}

// toolchainScripts are the scripts `go tool task toolchain` runs.
func toolchainScripts(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("Taskfile.yml")
	if err != nil {
		t.Fatal(err)
	}
	var taskfile struct {
		Tasks map[string]struct {
			Cmds []any `yaml:"cmds"`
		} `yaml:"tasks"`
	}
	if err := yaml.Unmarshal(data, &taskfile); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range taskfile.Tasks["toolchain"].Cmds {
		if s, ok := c.(string); ok {
			out = append(out, regexp.MustCompile(`scripts/[a-z0-9-]+\.sh`).FindAllString(s, -1)...)
		}
	}
	if len(out) == 0 {
		t.Fatal("the toolchain task runs no script")
	}
	return out
}

// TestDockerignore_KeepsLocalDataOut checks the build context: a checkout that has run Nimbus
// holds its database, its master key and built files, none of which may reach the image.
func TestDockerignore_KeepsLocalDataOut(t *testing.T) {
	data, err := os.ReadFile(".dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for _, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			patterns = append(patterns, line)
		}
	}
	for _, path := range []string{
		"data/postgres/pgdata/PG_VERSION", "data/secret.key", "data/state/x/.pulumi/stacks/x.json",
		"secret.key", "elsewhere/secret.key", "bin/nimbus", "nimbus",
		"node_modules/htmx.org/package.json", "static/vendor/htmx.min.js", "static/vendor/monaco/vs/loader.js",
		".git/config", ".task/checksum/build",
	} {
		if !ignored(patterns, path) {
			t.Errorf("%s is sent to the build", path)
		}
	}
	for _, path := range []string{
		"go.mod", "main.go", "package-lock.json", "scripts/simcloud.sh", "e2e/simcloud/main.go",
		"static/css/app.css", "migrations/0001_accounts.sql", "app/domain/component/builtin/components.json",
	} {
		if ignored(patterns, path) {
			t.Errorf("%s, which the build needs, is left out", path)
		}
	}
}

// ignored applies .dockerignore patterns as the builder does: the last pattern that matches
// the path or one of its directories decides, and ! takes a path back.
func ignored(patterns []string, path string) bool {
	out := false
	for _, p := range patterns {
		keep := strings.HasPrefix(p, "!")
		re := dockerignoreRegexp(strings.TrimPrefix(strings.TrimPrefix(p, "!"), "/"))
		for prefix := path; prefix != "."; {
			if re.MatchString(prefix) {
				out = !keep
				break
			}
			i := strings.LastIndex(prefix, "/")
			if i < 0 {
				break
			}
			prefix = prefix[:i]
		}
	}
	return out
}

func dockerignoreRegexp(pattern string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; {
		case strings.HasPrefix(pattern[i:], "**/"):
			b.WriteString("(.*/)?")
			i += 2
		case strings.HasPrefix(pattern[i:], "**"):
			b.WriteString(".*")
			i++
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}
