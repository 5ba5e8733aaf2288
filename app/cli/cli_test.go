package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"nimbus/app/cli"
	"nimbus/app/kernel/freeport"
	"nimbus/app/kernel/objstore/s3test"
)

// syncBuffer is an output a running command writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func env(vars map[string]string, stdin string) (cli.Env, *syncBuffer, *syncBuffer) {
	out, errOut := &syncBuffer{}, &syncBuffer{}
	return cli.Env{
		Getenv: func(k string) string { return vars[k] },
		Stdin:  strings.NewReader(stdin),
		Stdout: out, Stderr: errOut,
	}, out, errOut
}

// running is `nimbus serve` started in-process; stop it as SIGTERM would.
type running struct {
	stop func()
	done chan error
	out  *syncBuffer
	log  *syncBuffer
	url  string
}

func serve(t *testing.T, dataDir string, vars map[string]string) *running {
	t.Helper()
	addr := freeport.Addr(t)
	ctx, cancel := context.WithCancel(context.Background())
	e, out, errOut := env(vars, "")
	r := &running{stop: cancel, done: make(chan error, 1), out: out, log: errOut, url: "http://" + addr}
	go func() { r.done <- cli.Run(ctx, []string{"nimbus", "serve", "--addr", addr, "--data-dir", dataDir}, e) }()
	t.Cleanup(func() { cancel(); <-r.done })
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(r.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return r
			}
		}
		select {
		case err := <-r.done:
			t.Fatalf("serve exited: %v\n%s", err, errOut.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Fatalf("serve never became ready:\n%s", errOut.String())
	return nil
}

func (r *running) shutdown(t *testing.T) {
	t.Helper()
	r.stop()
	select {
	case err := <-r.done:
		if err != nil {
			t.Fatalf("serve returned %v", err)
		}
		r.done <- nil // for the cleanup
	case <-time.After(60 * time.Second):
		t.Fatal("serve did not stop")
	}
}

func postgresRunning(dataDir string) bool {
	_, err := os.Stat(filepath.Join(dataDir, "postgres", "pgdata", "postmaster.pid"))
	return err == nil
}

func TestServe_EmbeddedPostgresStartsStopsAndIsReused(t *testing.T) {
	dir := t.TempDir()
	srv := serve(t, dir, nil)
	if !strings.Contains(srv.out.String(), "password: ") || !strings.Contains(srv.out.String(), "admin@nimbus.local") {
		t.Fatalf("first start did not print how to sign in:\n%s", srv.out.String())
	}
	srv.shutdown(t)
	if postgresRunning(dir) {
		t.Fatal("postgres still running after shutdown")
	}

	again := serve(t, dir, nil)
	if strings.Contains(again.out.String(), "password") {
		t.Fatal("second start created another admin")
	}
	again.shutdown(t)
}

// The operator learns at start whether engine processes are confined.
func TestServe_SaysWhetherTheEngineIsConfined(t *testing.T) {
	confined := serve(t, t.TempDir(), nil)
	if !strings.Contains(confined.log.String(), "engine processes run in a Landlock sandbox") {
		t.Errorf("a confined start did not say so:\n%s", confined.log.String())
	}
	confined.shutdown(t)
	off := serve(t, t.TempDir(), map[string]string{"NIMBUS_SANDBOX": "off"})
	if !strings.Contains(off.log.String(), "level=ERROR") || !strings.Contains(off.log.String(), "NOT confined") {
		t.Errorf("an unconfined start did not say so loudly:\n%s", off.log.String())
	}
	off.shutdown(t)
}

func TestTokenCreate_BesideARunningServerAndWithout(t *testing.T) {
	dir := t.TempDir()
	srv := serve(t, dir, map[string]string{"NIMBUS_ADMIN_PASSWORD": "a fine admin password"})

	e, out, errOut := env(nil, "")
	if err := cli.Run(context.Background(), []string{"nimbus", "token", "create", "--email", "admin@nimbus.local", "--name", "ci", "--data-dir", dir}, e); err != nil {
		t.Fatalf("token create: %v\n%s", err, errOut.String())
	}
	token := strings.TrimSpace(out.String())
	req, _ := http.NewRequest("GET", srv.url+"/api/v1/me", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("token from the CLI refused: %v %v", err, resp)
	}
	resp.Body.Close()
	if !postgresRunning(dir) {
		t.Fatal("the CLI stopped the server's postgres")
	}
	srv.shutdown(t)

	// With no server, the command starts postgres for the moment and stops it again.
	e, out, errOut = env(nil, "a piped password\n")
	if err := cli.Run(context.Background(), []string{"nimbus", "user", "create", "--email", "ops@example.com", "--data-dir", dir}, e); err != nil {
		t.Fatalf("user create: %v\n%s", err, errOut.String())
	}
	if strings.Contains(out.String(), "password:") {
		t.Fatal("printed a password although one was piped in")
	}
	if postgresRunning(dir) {
		t.Fatal("postgres left running by a CLI command")
	}
}

func TestRun_BadInput(t *testing.T) {
	cases := map[string][]string{
		`unknown command "frobnicate"`: {"nimbus", "frobnicate"},
		"--email is required":          {"nimbus", "user", "create", "--data-dir", t.TempDir()},
		"--email and --name":           {"nimbus", "token", "create", "--email", "a@b.c"},
		"log format must be":           {"nimbus", "serve", "--log-format", "xml"},
		"unknown migrate command":      {"nimbus", "migrate", "sideways"},
		"is not a CIDR":                {"nimbus", "serve", "--trusted-proxies", "nope"},
		"is not a positive size":       {"nimbus", "serve", "--max-state-size", "lots"},
		"sandbox must be auto, required or off, not \"sometimes\"":  {"nimbus", "serve", "--sandbox", "sometimes"},
		"languages must be among yaml, typescript and python":       {"nimbus", "serve", "--languages", "yaml,cobol"},
		"graph parallel must be a number from 1 to 1000, not \"0\"": {"nimbus", "serve", "--graph-parallel", "0"},
		"backup interval must be off or a duration":                 {"nimbus", "serve", "--backup-interval", "soon"},
		"backup keep must be a number from 1 to 1000":               {"nimbus", "serve", "--backup-keep", "0"},
		"--to is required":   {"nimbus", "backup", "--data-dir", t.TempDir()},
		"--from is required": {"nimbus", "restore", "--data-dir", t.TempDir()},
	}
	for want, args := range cases {
		e, _, _ := env(nil, "")
		err := cli.Run(context.Background(), args, e)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: got %v, want an error mentioning %q", args, err, want)
		}
	}
	e, _, _ := env(map[string]string{"NIMBUS_GRAPH_PARALLEL": "many"}, "")
	if err := cli.Run(context.Background(), []string{"nimbus", "serve"}, e); err == nil || !strings.Contains(err.Error(), `graph parallel must be a number from 1 to 1000, not "many"`) {
		t.Errorf("NIMBUS_GRAPH_PARALLEL=many: got %v", err)
	}
}

func TestServe_RefusesIncompleteOrUnreachableObjectStorage(t *testing.T) {
	full := map[string]string{
		"NIMBUS_S3_ENDPOINT": "http://" + freeport.Addr(t), // nothing listens there
		"NIMBUS_S3_BUCKET":   "nimbus", "NIMBUS_S3_ACCESS_KEY": "access", "NIMBUS_S3_SECRET_KEY": "the-secret-key",
	}
	without := func(names ...string) map[string]string {
		vars := maps.Clone(full)
		for _, n := range names {
			delete(vars, n)
		}
		return vars
	}
	with := func(k, v string) map[string]string {
		vars := maps.Clone(full)
		vars[k] = v
		return vars
	}
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte("the-secret-key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		vars map[string]string
		args []string
		want []string
	}{
		{"endpoint alone", map[string]string{"NIMBUS_S3_ENDPOINT": full["NIMBUS_S3_ENDPOINT"]}, nil,
			[]string{"NIMBUS_S3_BUCKET", "NIMBUS_S3_ACCESS_KEY", "NIMBUS_S3_SECRET_KEY"}},
		{"no secret key", without("NIMBUS_S3_SECRET_KEY"), nil, []string{"partly configured", "but NIMBUS_S3_SECRET_KEY not"}},
		{"no endpoint", without("NIMBUS_S3_ENDPOINT"), nil, []string{"but NIMBUS_S3_ENDPOINT not"}},
		{"endpoint without scheme", with("NIMBUS_S3_ENDPOINT", "127.0.0.1:8333"), nil, []string{"NIMBUS_S3_ENDPOINT", "http://127.0.0.1:8333"}},
		{"unreachable", full, nil, []string{"NIMBUS_S3_ENDPOINT=" + full["NIMBUS_S3_ENDPOINT"], "connection refused"}},
		{"secret key twice", with("NIMBUS_S3_SECRET_KEY_FILE", keyFile), nil, []string{"NIMBUS_S3_SECRET_KEY_FILE", "set one of them"}},
		{"secret key file missing", without("NIMBUS_S3_SECRET_KEY"), []string{"--s3-secret-key-file", keyFile + ".gone"}, []string{"NIMBUS_S3_SECRET_KEY_FILE", "no such file"}},
		// A flag would put the secret in the process list.
		{"secret key as a flag", without("NIMBUS_S3_SECRET_KEY"), []string{"--s3-secret-key", "the-secret-key"}, []string{"flag provided but not defined"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, _, _ := env(c.vars, "")
			args := append([]string{"nimbus", "serve", "--addr", freeport.Addr(t), "--data-dir", t.TempDir()}, c.args...)
			err := cli.Run(context.Background(), args, e)
			if err == nil {
				t.Fatal("serve started")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "the-secret-key") {
				t.Errorf("the error shows the secret key: %v", err)
			}
		})
	}
}

func TestServe_ObjectStorageInS3(t *testing.T) {
	cfg := s3test.Start(t)
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte(cfg.SecretKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := serve(t, t.TempDir(), map[string]string{
		"NIMBUS_S3_ENDPOINT": cfg.Endpoint, "NIMBUS_S3_BUCKET": cfg.Bucket,
		"NIMBUS_S3_ACCESS_KEY": cfg.AccessKey, "NIMBUS_S3_SECRET_KEY_FILE": keyFile,
	})
	readyz := func() (int, map[string]string) {
		t.Helper()
		resp, err := http.Get(srv.url + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct{ Checks map[string]string }
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, body.Checks
	}
	if code, checks := readyz(); code != http.StatusOK || checks["objects"] != "ok" {
		t.Fatalf("readyz %d %v: want ready with the bucket checked", code, checks)
	}
	if strings.Contains(srv.log.String(), cfg.SecretKey) {
		t.Fatal("the log shows the secret key")
	}
	if !strings.Contains(srv.log.String(), cfg.Bucket) {
		t.Fatalf("the log does not say where objects go:\n%s", srv.log.String())
	}

	// Serve created the bucket; without it Nimbus is not ready.
	admin, err := minio.New(strings.TrimPrefix(cfg.Endpoint, "http://"), &minio.Options{
		Creds: credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""), Region: cfg.Region, BucketLookup: minio.BucketLookupPath})
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.RemoveBucket(context.Background(), cfg.Bucket); err != nil {
		t.Fatalf("remove the bucket serve created: %v", err)
	}
	// Anyone may ask whether Nimbus is ready: the answer says what is down, the log says why.
	code, checks := readyz()
	if code != http.StatusServiceUnavailable || checks["objects"] != "unreachable" {
		t.Fatalf("readyz %d %v: want not ready, the objects unreachable", code, checks)
	}
	if !regexp.MustCompile(`"not ready".*check=objects state=unreachable err=.*` + cfg.Bucket).MatchString(srv.log.String()) {
		t.Fatalf("the log does not say why the objects are unreachable:\n%s", srv.log.String())
	}
	srv.shutdown(t)
}
