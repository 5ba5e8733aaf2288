package pulumix

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"nimbus/app/sandbox"
)

// probeProgram asks the simulated cloud's test-only probe to run a command, connect to each
// address and write each file, and reports what it found as the output result.
func probeProgram(command string, connect, write []string) string {
	var b strings.Builder
	b.WriteString("name: probe\nruntime: yaml\nvariables:\n")
	n := 0
	add := func(key, value string) {
		n++
		b.WriteString("  p" + strconv.Itoa(n) + ":\n    fn::invoke:\n      function: simcloud:index:probe\n      arguments:\n        " +
			key + ": " + strconv.Quote(value) + "\n      return: result\n")
	}
	if command != "" {
		add("exec", command)
	}
	for _, c := range connect {
		add("connect", c)
	}
	for _, w := range write {
		add("write", w)
	}
	b.WriteString("outputs:\n  result:\n    fn::join:\n      - \"\\n\"\n      - [")
	for i := 1; i <= n; i++ {
		if i > 1 {
			b.WriteString(", ")
		}
		b.WriteString("\"${p" + strconv.Itoa(i) + "}\"")
	}
	b.WriteString("]\n")
	return b.String()
}

// A program that reaches past the validator, as a hole in it would, gets a command run, a
// connection and writes through a provider that lets it: the sandbox alone stops each, in a
// check and in a deploy. Unconfined, each succeeds: the refusals are the sandbox's.
func TestSandbox_AloneStopsWhatAProviderWouldDo(t *testing.T) {
	own, _ := net.Listen("tcp", "127.0.0.1:0") // stands for Nimbus's own port
	defer own.Close()
	database, _ := net.Listen("tcp", "127.0.0.1:0") // stands for a database in the engine's range
	defer database.Close()
	go func() {
		for _, ln := range []net.Listener{own, database} {
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					c.Close()
				}
			}()
		}
	}()
	dbPort := uint16(database.Addr().(*net.TCPAddr).Port)
	for _, mode := range []sandbox.Mode{sandbox.Required, sandbox.Off} {
		t.Run(string(mode), func(t *testing.T) {
			data, cloud := t.TempDir(), t.TempDir()
			r, err := NewRunner(toolchain(t), data, map[string]string{"SIMCLOUD_DIR": cloud, "SIMCLOUD_PROBES": "1"},
				CloudDirs(cloud), WithSandbox(mode), WithClosedPorts(dbPort))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			other := filepath.Join(data, "state", "d-other")
			// Open to every account, so that what refuses a write there is the sandbox.
			if err := os.MkdirAll(other, 0o777); err != nil || os.Chmod(other, 0o777) != nil {
				t.Fatal(err)
			}
			code := probeProgram("/bin/sh -c true", []string{own.Addr().String(), database.Addr().String()},
				[]string{filepath.Join(other, "planted"), filepath.Join(cloud, "planted")})

			var checked strings.Builder
			check, err := r.Check(ctx, code, nil, nil, &checked)
			if err != nil || !check.Succeeded {
				t.Fatalf("check: %v %s", err, check.Output)
			}
			// A check writes nothing but its own scratch, not even the cloud deployments use.
			planted := filepath.Join(cloud, "planted")
			if _, err := os.Stat(planted); (err == nil) != (mode == sandbox.Off) {
				t.Errorf("%s: the check's write into the cloud: %v\n%s", mode, err, checked.String())
			}
			_ = os.Remove(planted)
			up, err := r.Up(ctx, Stack{Name: "d-probe", Code: code, Passphrase: "p"}, nil)
			if err != nil {
				t.Fatalf("up: %v\n%s", err, up.Output)
			}
			found, _ := up.Outputs["result"].(string)
			t.Logf("check:\n%s\ndeploy:\n%s", checked.String(), found)
			lines := strings.Split(found, "\n")
			if len(lines) != 5 {
				t.Fatalf("the probe said %q", found)
			}
			for _, l := range lines {
				refused := strings.Contains(l, ": refused: ")
				// The deploy may write the cloud it deploys to; a check may not.
				mayWrite := strings.HasPrefix(l, "write "+filepath.Join(cloud, "planted"))
				if mode == sandbox.Off && refused || mode != sandbox.Off && refused == mayWrite {
					t.Errorf("%s: %s", mode, l)
				}
			}
			if !strings.Contains(checked.String(), "connect "+own.Addr().String()) {
				t.Errorf("the check did not probe:\n%s", checked.String())
			}
		})
	}
}
