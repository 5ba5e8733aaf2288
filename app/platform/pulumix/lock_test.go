package pulumix

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"nimbus/app/kernel/objstore"
)

// lockFiles lists the keys of the DIY backend's lock files for a stack. On disk, each has a
// sidecar of attributes (<lock>.json.attrs) that is not a lock.
func lockFiles(t *testing.T, r *Runner, stack string) []string {
	t.Helper()
	keys, err := bucketOf(t, r, stack).List(context.Background(), lockDir(stack))
	if err != nil {
		t.Fatal(err)
	}
	var locks []string
	for _, k := range keys {
		if strings.HasSuffix(k, ".json") {
			locks = append(locks, k)
		}
	}
	return locks
}

// bucketOf is the files of the stack's own backend, which its engine works on.
func bucketOf(t *testing.T, r *Runner, stack string) Bucket {
	t.Helper()
	b, err := r.stateOf(stack)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readBackendFile reads a file of the stack's backend by key.
func readBackendFile(t *testing.T, r *Runner, stack, key string) []byte {
	t.Helper()
	rc, err := bucketOf(t, r, stack).Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// writeBackendFile writes a file into the backend as the engine would, where Nimbus's own
// stores refuse to.
func writeBackendFile(t *testing.T, r *Runner, stack, key string, content []byte) {
	t.Helper()
	switch b := bucketOf(t, r, stack).(type) {
	case *objstore.Dir:
		path := filepath.Join(b.Root(), filepath.FromSlash(key))
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, content, 0o600); err != nil {
			t.Fatal(err)
		}
	case *objstore.S3:
		cfg := b.Config()
		client, err := minio.New(strings.TrimPrefix(cfg.Endpoint, "http://"), &minio.Options{
			Creds: credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""), Region: cfg.Region, BucketLookup: minio.BucketLookupPath})
		if err != nil {
			t.Fatal(err)
		}
		_, err = client.PutObject(context.Background(), cfg.Bucket, key, bytes.NewReader(content), int64(len(content)), minio.PutObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("no way to write into a %T", b)
	}
}

func TestStack_CrashedEngineLeavesALockThatClearLockRemoves(t *testing.T) {
	eachBackend(t, testCrashedEngineLeavesALockThatClearLockRemoves)
}

func testCrashedEngineLeavesALockThatClearLockRemoves(t *testing.T, backend string) {
	r, _, cloud := stackRunner(t, backend)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	st := machineStack(t, "d-crash", map[string]any{"name": "web", "delay_ms": float64(20000)})

	done := make(chan error, 1)
	go func() {
		_, err := r.Up(ctx, st, nil)
		done <- err
	}()
	// The engine writes its pid into the lock; the disk exists once the machine's slow create
	// has begun.
	var lock []string
	waitFor(t, "the lock and the disk", time.Minute, func() bool {
		lock = lockFiles(t, r, st.Name)
		return len(lock) == 1 && len(cloudFiles(t, cloud, "disk")) == 1
	})
	content := readBackendFile(t, r, st.Name, lock[0])
	t.Logf("lock file: %s: %s", lock[0], content)
	var holder struct{ Pid int }
	if err := json.Unmarshal(content, &holder); err != nil || holder.Pid <= 0 {
		t.Fatalf("lock content %s: %v", content, err)
	}
	// The engine holds the stack's passphrase, but none of its processes shows it in the
	// process list; with S3, none of them holds the bucket's keys at all.
	for _, pid := range append(descendants(holder.Pid), holder.Pid) {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if bytes.Contains(cmdline, []byte(st.Passphrase)) {
			t.Errorf("process %d shows a secret in its command line: %q", pid, cmdline)
		}
		if s3, ok := r.shared.(*objstore.S3); ok {
			environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
			if err != nil {
				t.Fatal(err)
			}
			for _, key := range []string{s3.Config().SecretKey, s3.Config().AccessKey} {
				if bytes.Contains(environ, []byte(key)) || bytes.Contains(cmdline, []byte(key)) {
					t.Errorf("process %d holds the bucket's keys", pid)
				}
			}
		}
	}
	// Kill the CLI and its plugins, as a crash of the machine would, so that nothing gets to
	// unlock. Plugins lead process groups of their own, so they are found as its children.
	plugins := descendants(holder.Pid)
	if err := syscall.Kill(-holder.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for _, pid := range plugins {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	err := <-done
	var engine *EngineError
	if err == nil || errors.As(err, &engine) {
		t.Fatalf("killed up: %v: want a plain error", err)
	}
	t.Logf("killed up: %.200s", err)
	if len(lockFiles(t, r, st.Name)) != 1 {
		t.Fatal("the killed engine's lock is gone")
	}

	st.Config["delay_ms"] = float64(0)
	_, err = timed(t, "up while locked", func() (Result, error) { return r.Up(ctx, st, nil) })
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "locked") {
		t.Fatalf("up of a locked stack: %v", err)
	}
	t.Logf("up while locked: %v", err)

	// A caller that holds the stack alone, as an operation's lease does, gets past the lock.
	st.Exclusive = true
	if _, err := timed(t, "refresh", func() (Result, error) { return r.Refresh(ctx, st, nil) }); err != nil {
		t.Fatal(err)
	}
	if l := lockFiles(t, r, st.Name); len(l) != 0 {
		t.Fatalf("clearLock left %v", l)
	}
	res, err := timed(t, "up after clearLock", func() (Result, error) { return r.Up(ctx, st, nil) })
	if err != nil {
		t.Fatal(err)
	}
	if d, m := cloudFiles(t, cloud, "disk"), cloudFiles(t, cloud, "machine"); len(d) != 1 || len(m) != 1 {
		t.Fatalf("disks %v, machines %v: want one of each", d, m)
	}
	if m := cloudFiles(t, cloud, "machine"); filepath.Base(m[0]) != res.Outputs["machine_id"].(string)+".json" {
		t.Fatalf("machine %s, outputs %v", m[0], res.Outputs)
	}
	if _, err := r.Destroy(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
}

func TestStack_CancelStopsTheEngineAndUnlocks(t *testing.T) {
	eachBackend(t, testCancelStopsTheEngineAndUnlocks)
}

func testCancelStopsTheEngineAndUnlocks(t *testing.T, backend string) {
	r, _, cloud := stackRunner(t, backend)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	st := machineStack(t, "d-cancel", map[string]any{"name": "web", "delay_ms": float64(5000)})

	upCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	var progress bytes.Buffer // read only once Up has returned
	go func() {
		_, err := r.Up(upCtx, st, &progress)
		done <- err
	}()
	waitFor(t, "the machine's create to begin", time.Minute, func() bool {
		return len(cloudFiles(t, cloud, "disk")) == 1
	})
	stop()
	cancelled := time.Now()
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Minute): // the grace period NewRunner gives
		t.Fatal("up did not return within the grace period")
	}
	took := time.Since(cancelled)
	t.Logf("cancelled up returned in %s: %v\n%s", took.Round(time.Millisecond), err, quiet(progress.String()))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled up: %v: want context.Canceled", err)
	}
	if took > 15*time.Second {
		t.Errorf("cancelled up took %s to return", took)
	}
	if l := lockFiles(t, r, st.Name); len(l) != 0 {
		t.Fatalf("the cancelled engine left its lock: %v", l)
	}

	st.Config["delay_ms"] = "0" // scalars may come as text too
	res, err := timed(t, "up after cancel", func() (Result, error) { return r.Up(ctx, st, nil) })
	if err != nil {
		t.Fatal(err)
	}
	if m := cloudFiles(t, cloud, "machine"); len(m) != 1 {
		t.Fatalf("machines %v: want one", m)
	}
	if res.Changes["create"] != 1 || res.Changes["same"] != 2 {
		t.Errorf("changes %v: want the machine created, the stack and disk kept", res.Changes)
	}
	if _, err := r.Destroy(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
}

func TestClearLock_WaitsForALiveEngine(t *testing.T) {
	eachBackend(t, testClearLockWaitsForALiveEngine)
}

func testClearLockWaitsForALiveEngine(t *testing.T, backend string) {
	r, _, _ := stackRunner(t, backend)
	st := Stack{Name: "d-held", Code: "name: held\nruntime: yaml\n"}
	key := lockDir(st.Name) + "l.json"
	host, _ := os.Hostname()
	// This test process stands for an engine a crashed server left running.
	writeBackendFile(t, r, st.Name, key, fmt.Appendf(nil, `{"pid":%d,"hostname":%q}`, os.Getpid(), host))
	if err := r.clearLock(t.Context(), bucketOf(t, r, st.Name), st.Name); !errors.Is(err, ErrLocked) {
		t.Fatalf("cleared a lock its live engine holds: %v", err)
	}
	if l := lockFiles(t, r, st.Name); len(l) != 1 {
		t.Fatalf("locks %v: want the live engine's kept", l)
	}
	// A lock of another stack whose name starts the same is not this stack's.
	other := lockDir(st.Name+"-2") + "l.json"
	writeBackendFile(t, r, st.Name+"-2", other, fmt.Appendf(nil, `{"pid":%d,"hostname":%q}`, 1<<22+7, host))
	writeBackendFile(t, r, st.Name, key, fmt.Appendf(nil, `{"pid":%d,"hostname":%q}`, 1<<22+7, host))
	if err := r.clearLock(t.Context(), bucketOf(t, r, st.Name), st.Name); err != nil {
		t.Fatalf("kept a dead engine's lock: %v", err)
	}
	if l := lockFiles(t, r, st.Name); len(l) != 0 {
		t.Fatalf("clearLock left %v", l)
	}
	if l := lockFiles(t, r, st.Name+"-2"); len(l) != 1 {
		t.Fatalf("clearLock of %s removed another stack's lock", st.Name)
	}
}
