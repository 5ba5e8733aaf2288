// Package corpus reads the Pulumi YAML language conformance programs of the pinned language
// host, which the program validator is proven against: every one is a program the real engine
// accepts.
//
// They are read from the shared test corpus beside the project (NIMBUS_CORPUS_DIR, else
// ../shared/corpus from the module's root), and otherwise from the pulumi-yaml module of the
// pinned version in the Go module cache, where they came from.
package corpus

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// YAMLVersion is the pulumi-yaml release whose programs these are: the language host
// scripts/pulumi-toolchain.sh builds.
const YAMLVersion = "v1.25.0"

// Program is one conformance program, its Pulumi.yaml and Main.yaml as one file.
type Program struct {
	Name string
	Code string
}

// Programs returns every program, failing t when none can be found.
func Programs(t testing.TB) []Program {
	t.Helper()
	if dir := sharedDir(); dir != "" {
		return fromShared(t, dir)
	}
	return fromModule(t)
}

func sharedDir() string {
	base := os.Getenv("NIMBUS_CORPUS_DIR")
	if base == "" {
		root, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil || strings.TrimSpace(string(root)) == "" {
			return ""
		}
		base = filepath.Join(filepath.Dir(strings.TrimSpace(string(root))), "..", "shared", "corpus")
	}
	dir := filepath.Join(base, "pulumi-yaml-conformance-"+YAMLVersion)
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		return ""
	}
	return dir
}

func fromShared(t testing.TB, dir string) []Program {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no programs in %s", dir)
	}
	var out []Program
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, Program{Name: strings.TrimSuffix(filepath.Base(f), ".yaml"), Code: string(b)})
	}
	t.Logf("%d conformance programs from %s", len(out), dir)
	return out
}

// mainKey is a project's pointer to the folder its program is in.
var mainKey = regexp.MustCompile(`(?m)^main:\s*(\S+)\s*$`)

// fromModule merges each project of the module's test data as the shared corpus does; a project
// of several steps gives one program per step.
func fromModule(t testing.TB) []Program {
	out, err := exec.Command("go", "mod", "download", "-json", "github.com/pulumi/pulumi-yaml@"+YAMLVersion).Output()
	if err != nil {
		t.Fatalf("the conformance programs are neither in the shared corpus nor downloadable: %v", err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download: %s", out)
	}
	root := filepath.Join(mod.Dir, "cmd", "pulumi-language-yaml", "testdata", "projects")
	projects, err := filepath.Glob(filepath.Join(root, "*", "Pulumi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	steps, _ := filepath.Glob(filepath.Join(root, "*", "[0-9]*", "Pulumi.yaml"))
	var programs []Program
	for _, project := range append(projects, steps...) {
		dir := filepath.Dir(project)
		head, err := os.ReadFile(project)
		if err != nil {
			t.Fatal(err)
		}
		mainDir := dir
		if m := mainKey.FindSubmatch(head); m != nil {
			mainDir = filepath.Join(dir, string(m[1]))
			head = mainKey.ReplaceAll(head, nil)
		}
		body, err := os.ReadFile(filepath.Join(mainDir, "Main.yaml"))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if strings.TrimSpace(string(body)) == "{}" {
			body = nil // an empty program, written as a flow mapping
		}
		name, _ := filepath.Rel(root, dir)
		programs = append(programs, Program{Name: strings.ReplaceAll(name, string(filepath.Separator), "-"),
			Code: strings.TrimRight(string(head), "\n") + "\n" + string(body)})
	}
	slices.SortFunc(programs, func(a, b Program) int { return strings.Compare(a.Name, b.Name) })
	t.Logf("%d conformance programs from the module cache (%s)", len(programs), root)
	return programs
}
