// Package pulumix drives the Pulumi engine. For now it finds the pinned toolchain: the CLI and
// the language hosts that let programs in each language run.
package pulumix

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
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

// Detect looks for the toolchain in dir (the Taskfile's build cache, NIMBUS_PULUMI_DIR), then
// on PATH.
func Detect(ctx context.Context, dir string) Toolchain {
	t := Toolchain{Hosts: map[string]string{}}
	t.CLI = find(dir, "pulumi")
	if t.CLI != "" {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, t.CLI, "version")
		cmd.Env = append(os.Environ(), "PULUMI_SKIP_UPDATE_CHECK=true")
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
