// Package s3test runs a real S3-compatible server, versitygw serving a directory, for tests: the
// object store and the Pulumi state backend are tested against it rather than against a fake.
//
// The server binary comes from NIMBUS_VERSITYGW, else from the tool cache that
// `go tool task s3server` fills (scripts/s3server.sh).
package s3test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"nimbus/app/kernel/freeport"
	"nimbus/app/kernel/objstore"
)

// server is a running S3 server whose one account owns everything.
type server struct {
	endpoint  string // http://127.0.0.1:<port>
	accessKey string
	secretKey string
	took      time.Duration // from start until it served a write

	cmd    *exec.Cmd
	exited chan struct{}
	log    string // the server's output, for a failed start's message
}

// config is the server's address and credentials with bucket as the bucket.
func (s *server) config(bucket string) objstore.S3Config {
	return objstore.S3Config{Endpoint: s.endpoint, Bucket: bucket, AccessKey: s.accessKey, SecretKey: s.secretKey, Region: objstore.DefaultRegion}
}

// Start starts a server of the test's own, stopped when the test ends, and returns the config
// of a bucket on it (not created yet: objstore.NewS3 does that).
func Start(tb testing.TB) objstore.S3Config {
	tb.Helper()
	dir, err := os.MkdirTemp("", "s3test-")
	if err != nil {
		tb.Fatal(err)
	}
	s, err := start(binary(tb), dir)
	tb.Cleanup(func() {
		if s != nil {
			s.stop()
		}
		os.RemoveAll(dir)
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Logf("S3 server at %s answered writes after %s", s.endpoint, s.took.Round(time.Millisecond))
	return s.config(Bucket(tb))
}

var shared struct {
	once    sync.Once
	srv     *server
	dir     string
	err     error
	mainRan bool
}

// Main runs a package's tests, then stops the server Shared started; call it from TestMain.
func Main(m *testing.M) { os.Exit(Around(m).Run()) }

// Around is m run as Main runs it, for a TestMain that needs another package's Main as well:
// dbtest.Main(s3test.Around(m)).
func Around(m interface{ Run() int }) interface{ Run() int } { return around{m} }

type around struct{ m interface{ Run() int } }

func (a around) Run() int {
	shared.mainRan = true
	code := a.m.Run()
	if shared.srv != nil {
		shared.srv.stop()
	}
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	return code
}

// Shared returns the config of a bucket of the test's own on a server that all the package's
// tests share: one start per package instead of one per test. The package's TestMain must call
// Main, which stops it.
func Shared(tb testing.TB) objstore.S3Config {
	tb.Helper()
	if !shared.mainRan {
		tb.Fatal("s3test.Shared needs the package's TestMain to call s3test.Main, which stops the server")
	}
	bin := binary(tb)
	shared.once.Do(func() {
		if shared.dir, shared.err = os.MkdirTemp("", "s3test-"); shared.err != nil {
			return
		}
		shared.srv, shared.err = start(bin, shared.dir)
		if shared.err == nil {
			tb.Logf("S3 server at %s answered writes after %s", shared.srv.endpoint, shared.srv.took.Round(time.Millisecond))
		}
	})
	if shared.err != nil {
		tb.Fatal(shared.err)
	}
	return shared.srv.config(Bucket(tb))
}

// Bucket is a bucket name unique to the test, readable in the server's data: S3 allows lower
// case letters, digits and hyphens, at most 63.
func Bucket(tb testing.TB) string {
	name := strings.Trim(nonBucket.ReplaceAllString(strings.ToLower(tb.Name()), "-"), "-")
	if len(name) > 40 {
		name = strings.Trim(name[len(name)-40:], "-")
	}
	return "t-" + name + "-" + randomHex(4)
}

var nonBucket = regexp.MustCompile(`[^a-z0-9]+`)

// binary finds the server's binary. A test that needs it fails without it, so that a run that
// forgot to build it cannot pass by skipping; only -short skips.
func binary(tb testing.TB) string {
	tb.Helper()
	if p := os.Getenv("NIMBUS_VERSITYGW"); p != "" {
		return p
	}
	if p := cached(); p != "" {
		return p
	}
	if testing.Short() {
		tb.Skip("the S3 server is not built; -short skips the tests that need it")
	}
	tb.Fatal("an S3 server is needed: run `go tool task s3server`, or set NIMBUS_VERSITYGW to a versitygw binary")
	return ""
}

// cached returns the newest server that scripts/s3server.sh built into the tool cache, or "".
func cached() string {
	root := os.Getenv("NIMBUS_TOOLS_DIR")
	if root == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		root = filepath.Join(cache, "nimbus", "tools")
	}
	found, _ := filepath.Glob(filepath.Join(root, "versitygw", "*", "versitygw"))
	sort.Slice(found, func(i, j int) bool { return modTime(found[i]).Before(modTime(found[j])) })
	if len(found) == 0 {
		return ""
	}
	return found[len(found)-1]
}

func modTime(path string) time.Time {
	info, err := os.Stat(path)
	if err != nil {
		return time.Time{}
	}
	return info.ModTime()
}

// start runs the server's POSIX gateway on dir, bound to a free loopback port, and waits until a
// write through S3 succeeds. Its credentials reach it in its environment, not its arguments.
func start(bin, dir string) (*server, error) {
	started := time.Now()
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &server{
		endpoint:  fmt.Sprintf("http://127.0.0.1:%d", port),
		accessKey: "nimbus-" + randomHex(4),
		secretKey: randomHex(16),
		exited:    make(chan struct{}),
		log:       filepath.Join(dir, "server.log"),
	}
	// Objects' metadata in files beside them rather than in extended attributes, which a temporary
	// directory's filesystem may not have.
	data, meta := filepath.Join(dir, "data"), filepath.Join(dir, "meta")
	for _, d := range []string{data, meta} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	s.cmd = exec.Command(bin, "--port", fmt.Sprintf("127.0.0.1:%d", port), "--region", objstore.DefaultRegion,
		"posix", "--sidecar", meta, data)
	// The server reads its settings from variables too: none of the caller's may reach it.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ROOT_") && !strings.HasPrefix(kv, "VGW_") {
			s.cmd.Env = append(s.cmd.Env, kv)
		}
	}
	s.cmd.Env = append(s.cmd.Env, "ROOT_ACCESS_KEY_ID="+s.accessKey, "ROOT_SECRET_ACCESS_KEY="+s.secretKey)
	s.cmd.Dir = dir
	logFile, err := os.Create(s.log)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the server has its own copy
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	// Should the test binary die without cleaning up (a timeout's panic, a kill), the kernel
	// stops the server with it.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() { _ = s.cmd.Wait(); close(s.exited) }()

	if err := s.waitWritable(90 * time.Second); err != nil {
		s.stop()
		return nil, err
	}
	s.took = time.Since(started)
	return s, nil
}

// waitWritable polls until a bucket can be made and an object written and read back.
func (s *server) waitWritable(within time.Duration) error {
	client, err := minio.New(strings.TrimPrefix(s.endpoint, "http://"), &minio.Options{
		Creds: credentials.NewStaticV4(s.accessKey, s.secretKey, ""), Region: objstore.DefaultRegion,
		BucketLookup: minio.BucketLookupPath, MaxRetries: 1,
	})
	if err != nil {
		return err
	}
	deadline := time.Now().Add(within)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			return fmt.Errorf("the S3 server exited while starting: %v\n%s", s.cmd.ProcessState, s.logTail())
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		last = probe(ctx, client)
		cancel()
		if last == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("the S3 server did not accept writes within %s: %v\n%s", within, last, s.logTail())
}

func probe(ctx context.Context, c *minio.Client) error {
	const bucket, key = "s3test-probe", "probe"
	if err := c.MakeBucket(ctx, bucket, minio.MakeBucketOptions{}); err != nil {
		if code := minio.ToErrorResponse(err).Code; code != minio.BucketAlreadyOwnedByYou && code != minio.BucketAlreadyExists {
			return err
		}
	}
	if _, err := c.PutObject(ctx, bucket, key, strings.NewReader("ok"), 2, minio.PutObjectOptions{}); err != nil {
		return err
	}
	obj, err := c.GetObject(ctx, bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return err
	}
	defer obj.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(obj); err != nil {
		return err
	}
	if b.String() != "ok" {
		return fmt.Errorf("probe read back %q", b.String())
	}
	return nil
}

// stop asks the server to stop, and kills it if it has not within a few seconds.
func (s *server) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

func (s *server) logTail() string {
	out, _ := os.ReadFile(s.log)
	if len(out) > 4000 {
		out = append([]byte("…"), out[len(out)-4000:]...)
	}
	return string(out)
}

// freePort is a loopback port for the server (see freeport).
func freePort() (int, error) {
	ports, err := freeport.Pick(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
