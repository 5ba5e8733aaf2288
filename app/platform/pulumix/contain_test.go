package pulumix

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"nimbus/app/kernel/sandbox"
	"nimbus/db/localpg"
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
			check, err := r.Check(ctx, Stack{Code: code}, &checked)
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
				// The deploy may write the cloud it deploys to; a check may not. (The engine's words
				// name no server path: the cloud is <cloud>.)
				mayWrite := strings.HasPrefix(l, "write <cloud>/planted")
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

// The database is closed to the engine. A command run through the probe — the execute rule
// relaxed for this test alone, to run psql — opens neither the embedded database's socket nor
// its TCP port, with the sandbox on; with it off, the socket's directory (the postgres
// account's) and the password still keep it out.
func TestSandbox_TheDatabaseIsClosedToTheEngine(t *testing.T) {
	psqls, _ := filepath.Glob("/usr/lib/postgresql/*/bin/psql")
	if len(psqls) == 0 {
		t.Fatal("psql is needed: it comes with the PostgreSQL server binaries")
	}
	pg, err := localpg.Start(t.Context(), localpg.Options{Dir: filepath.Join(t.TempDir(), "postgres"),
		Settings: map[string]string{"listen_addresses": "127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Close() })
	conf, err := pgconn.ParseConfig(pg.URL(localpg.DatabaseName))
	if err != nil {
		t.Fatal(err)
	}
	query := psqls[0] + " -w -d nimbus -U nimbus -tAc select(current_user)"
	for _, mode := range []sandbox.Mode{sandbox.Required, sandbox.Off} {
		t.Run(string(mode), func(t *testing.T) {
			data, cloud := t.TempDir(), t.TempDir()
			r, err := NewRunner(toolchain(t), data, map[string]string{"SIMCLOUD_DIR": cloud, "SIMCLOUD_PROBES": "1"}, CloudDirs(cloud), WithSandbox(mode))
			if err != nil {
				t.Fatal(err)
			}
			r.cli.sandbox.Base.Exec = append(r.cli.sandbox.Base.Exec, psqls[0], "/lib64/ld-linux-x86-64.so.2")
			code := "name: db\nruntime: yaml\nvariables:\n" +
				"  socket:\n    fn::invoke:\n      function: simcloud:index:probe\n      arguments:\n        exec: " + strconv.Quote(query+" -h "+conf.Host) + "\n      return: result\n" +
				"  tcp:\n    fn::invoke:\n      function: simcloud:index:probe\n      arguments:\n        exec: " + strconv.Quote(query+" -h 127.0.0.1 -p "+strconv.Itoa(int(conf.Port))) +
				"\n        connect: 127.0.0.1:" + strconv.Itoa(int(conf.Port)) + "\n      return: result\n" +
				"outputs:\n  socket: ${socket}\n  tcp: ${tcp}\n"
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			res, err := r.Up(ctx, Stack{Name: "d-db", Code: code, Passphrase: "p"}, nil)
			if err != nil {
				t.Fatalf("up: %v\n%s", err, res.Output)
			}
			said := fmt.Sprint(res.Outputs["socket"], "\n", res.Outputs["tcp"])
			t.Logf("%s: %s", mode, said)
			for _, l := range strings.Split(said, "\n") {
				if strings.HasPrefix(l, "exec ") && !strings.Contains(l, ": refused: ") {
					t.Errorf("%s: the database answered: %s", mode, l)
				}
			}
			// The TCP connection itself is the sandbox's to refuse: off, it is made.
			connected := strings.Contains(said, "connect 127.0.0.1:"+strconv.Itoa(int(conf.Port))+": connected")
			if connected != (mode == sandbox.Off) {
				t.Errorf("%s: the database's port connected: %v", mode, connected)
			}
		})
	}
}
