package pulumix

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

func TestDetect_PicksNewestCachedBuild(t *testing.T) {
	root := t.TempDir()
	for _, v := range []string{"v3.9.0+yaml-v1.0.0", "v3.274.1+yaml-v1.25.0", "v3.30.2+yaml-v1.2.0"} {
		bin := filepath.Join(root, "pulumi-toolchain", v, "bin")
		if err := os.MkdirAll(bin, 0o755); err != nil {
			t.Fatal(err)
		}
		// A stand-in CLI that prints the version its directory is named for.
		script := "#!/bin/sh\necho " + v[:len("v3.274.1")] + "\n"
		if err := os.WriteFile(filepath.Join(bin, "pulumi"), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(bin, "pulumi-language-yaml"), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("NIMBUS_TOOLS_DIR", root)
	t.Setenv("PATH", t.TempDir())

	tc := Detect(context.Background(), "")
	if tc.CLIVersion != "v3.274.1" {
		t.Fatalf("picked %q at %s, want the newest, v3.274.1", tc.CLIVersion, tc.CLI)
	}
	if _, ok := tc.Hosts["yaml"]; !ok {
		t.Fatal("yaml host beside the CLI not found")
	}
	if _, ok := tc.Hosts["python"]; ok {
		t.Fatal("found a python host that does not exist")
	}
}

func TestDetect_RealToolchainWhenBuilt(t *testing.T) {
	dir := os.Getenv("NIMBUS_PULUMI_DIR")
	if dir == "" {
		t.Skip("NIMBUS_PULUMI_DIR unset; go tool task test sets it to the pinned build")
	}
	tc := Detect(context.Background(), dir)
	if tc.CLIVersion == "" || tc.Hosts["yaml"] == "" {
		t.Fatalf("the pinned toolchain in %s was not found working: %+v", dir, tc)
	}
}

// A language host found on PATH enables nothing: the operator names the languages.
func TestLocal_LanguagesOnlyWhenEnabled(t *testing.T) {
	dir := t.TempDir()
	for _, host := range []string{"pulumi-language-yaml", "pulumi-language-nodejs", "pulumi-language-python"} {
		if err := os.WriteFile(filepath.Join(dir, host), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir)
	got := Local{Dir: t.TempDir()}.LanguageHosts()
	if !got["yaml"] || got["nodejs"] || got["python"] {
		t.Fatalf("nothing enabled: %v", got)
	}
	got = Local{Dir: t.TempDir(), Enabled: []string{"typescript"}}.LanguageHosts()
	if !got["yaml"] || !got["nodejs"] || got["python"] {
		t.Fatalf("typescript enabled: %v", got)
	}
}
