// Package pulumix drives the Pulumi engine. For now it finds the pinned toolchain: the CLI and
// the language hosts that let programs in each language run.
package pulumix

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Languages Nimbus knows how to run, in the order shown.
var Languages = []string{"yaml", "nodejs", "python"}

// Toolchain is what was found of the Pulumi toolchain.
type Toolchain struct {
	// CLI is the path of the pulumi binary, "" when missing.
	CLI        string
	CLIVersion string
	// Hosts maps a language to its host binary's path; a missing language is absent.
	Hosts map[string]string
}

// Detect looks for the toolchain in dir (NIMBUS_PULUMI_DIR), else in the newest build in the
// tool cache the Taskfile fills, then on PATH.
func Detect(ctx context.Context, dir string) Toolchain {
	if dir == "" {
		dir = cachedBuild()
	}
	t := Toolchain{Hosts: map[string]string{}}
	t.CLI = find(dir, "pulumi")
	if t.CLI != "" {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, t.CLI, "version")
		cmd.Env = append(engineBaseEnv(), "PULUMI_SKIP_UPDATE_CHECK=true")
		if out, err := cmd.Output(); err == nil {
			t.CLIVersion = strings.TrimSpace(string(out))
		}
	}
	for _, lang := range Languages {
		if p := find(dir, "pulumi-language-"+lang); p != "" {
			t.Hosts[lang] = p
		}
	}
	return t
}

// LanguageOf names the program language a language host runs: nodejs runs typescript.
func LanguageOf(host string) string {
	if host == "nodejs" {
		return "typescript"
	}
	return host
}

// Local is the toolchain in a directory (or the tool cache, or PATH), looked up without running
// anything, so it is cheap enough for every save.
type Local struct {
	Dir string
	// Enabled are the program languages the operator lets run besides YAML (typescript,
	// python): a host on PATH alone enables nothing.
	Enabled []string
}

func (l Local) dir() string {
	if l.Dir == "" {
		return cachedBuild()
	}
	return l.Dir
}

// LanguageHosts reports which languages' hosts are installed and enabled.
func (l Local) LanguageHosts() map[string]bool {
	dir := l.dir()
	out := map[string]bool{}
	for _, lang := range Languages {
		enabled := lang == "yaml" || slices.Contains(l.Enabled, LanguageOf(lang))
		out[lang] = enabled && find(dir, "pulumi-language-"+lang) != ""
	}
	return out
}

// HasProvider reports whether the resource provider plugin is installed beside the CLI or on
// PATH.
func (l Local) HasProvider(plugin string) bool {
	return find(l.dir(), "pulumi-resource-"+plugin) != ""
}

func find(dir, name string) string {
	if dir != "" {
		p := filepath.Join(dir, name)
		if info, err := os.Stat(p); err == nil && !info.IsDir() && info.Mode()&0o111 != 0 {
			return p
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return ""
	}
	return p
}

// cachedBuild returns the bin directory of the newest toolchain the Taskfile built into the
// tool cache (NIMBUS_TOOLS_DIR, default ~/.cache/nimbus/tools), or "".
func cachedBuild() string {
	root := os.Getenv("NIMBUS_TOOLS_DIR")
	if root == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		root = filepath.Join(cache, "nimbus", "tools")
	}
	builds, _ := filepath.Glob(filepath.Join(root, "pulumi-toolchain", "*", "bin"))
	if len(builds) == 0 {
		return ""
	}
	// Named vMAJOR.MINOR.PATCH+yaml-…: the newest sorts last once versions are compared.
	sort.Slice(builds, func(i, j int) bool { return versionLess(builds[i], builds[j]) })
	return builds[len(builds)-1]
}

func versionLess(a, b string) bool {
	pa, pb := versionParts(a), versionParts(b)
	for i := range pa {
		if i >= len(pb) || pa[i] != pb[i] {
			return i < len(pb) && pa[i] < pb[i]
		}
	}
	return len(pa) < len(pb)
}

// versionParts reads the numbers of the CLI version in a build path such as
// ".../pulumi-toolchain/v3.274.1+yaml-v1.25.0/bin".
func versionParts(path string) []int {
	name := filepath.Base(filepath.Dir(path))
	name, _, _ = strings.Cut(strings.TrimPrefix(name, "v"), "+")
	var out []int
	for _, f := range strings.Split(name, ".") {
		n, _ := strconv.Atoi(f)
		out = append(out, n)
	}
	return out
}
