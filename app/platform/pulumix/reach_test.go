package pulumix

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"nimbus/app/kernel/sandbox"
)

// linkedToolchain is the toolchain with extra entries linked in beside it.
func linkedToolchain(t *testing.T, extra map[string]string) string {
	t.Helper()
	real := toolchain(t)
	dir := t.TempDir()
	entries, err := os.ReadDir(real)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		target, err := filepath.EvalSymlinks(filepath.Join(real, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	for name, target := range extra {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A dynamically linked provider plugin cannot start in the sandbox, which never lets the
// engine run the loader: it is left out and named in the log, and the rest of the toolchain
// runs. A dynamically linked language host leaves no engine at all, and says why.
func TestNewRunner_LeavesOutWhatTheSandboxCannotStart(t *testing.T) {
	dynamic := "/usr/bin/true" // Debian's programs need the loader
	var log bytes.Buffer
	r, err := NewRunner(linkedToolchain(t, map[string]string{"pulumi-resource-dynamic": dynamic}), t.TempDir(), nil,
		WithSandbox(sandbox.Required), WithLog(slog.New(slog.NewTextHandler(&log, nil))))
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(r.cli.sandbox.Base.Exec, func(p string) bool { return strings.HasSuffix(p, "pulumi-resource-dynamic") }) {
		t.Fatal("the dynamically linked plugin may be executed")
	}
	if !slices.ContainsFunc(r.cli.sandbox.Base.Exec, func(p string) bool { return strings.HasSuffix(p, "pulumi-resource-simcloud") }) {
		t.Fatal("a static plugin was left out")
	}
	if !strings.Contains(log.String(), "pulumi-resource-dynamic") {
		t.Fatalf("the log does not name the plugin left out:\n%s", log.String())
	}
	_, err = NewRunner(linkedToolchain(t, map[string]string{"pulumi-language-dynamic": dynamic}), t.TempDir(), nil, WithSandbox(sandbox.Required))
	if err == nil || !strings.Contains(err.Error(), "pulumi-language-dynamic is linked dynamically") {
		t.Fatalf("a dynamic language host: %v", err)
	}
	if _, err := NewRunner(linkedToolchain(t, map[string]string{"pulumi-language-dynamic": dynamic}), t.TempDir(), nil, WithSandbox(sandbox.Off)); err != nil {
		t.Fatalf("unconfined, nothing needs to be static: %v", err)
	}
}
