package objstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"nimbus/app/kernel/objstore"
	"nimbus/app/kernel/objstore/s3test"
)

func TestMain(m *testing.M) { s3test.Main(m) }

// store is what both implementations offer: the Store, and the listing and deleting that
// clearing Pulumi's locks needs.
type store interface {
	objstore.Store
	List(ctx context.Context, prefix string) ([]string, error)
	Delete(ctx context.Context, key string) error
}

// eachStore runs f against a directory store and against a bucket on a real S3 server.
func eachStore(t *testing.T, f func(t *testing.T, s store)) {
	t.Run("dir", func(t *testing.T) {
		d, err := objstore.NewDir(filepath.Join(t.TempDir(), "objects"))
		if err != nil {
			t.Fatal(err)
		}
		f(t, d)
	})
	t.Run("s3", func(t *testing.T) {
		f(t, newS3(t, s3test.Shared(t)))
	})
}

func newS3(t *testing.T, cfg objstore.S3Config) *objstore.S3 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := objstore.NewS3(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func put(t *testing.T, s objstore.Store, key, value string) {
	t.Helper()
	if err := s.Put(context.Background(), key, strings.NewReader(value), int64(len(value))); err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, s objstore.Store, key string) string {
	t.Helper()
	rc, err := s.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestStore_PutGetReplaceListDelete(t *testing.T) {
	eachStore(t, func(t *testing.T, s store) {
		ctx := context.Background()
		if err := s.Ping(ctx); err != nil {
			t.Fatalf("ping: %v", err)
		}
		put(t, s, "logs/op-1.log", "first line\n")
		put(t, s, "logs/op-2.log", "")
		put(t, s, "exports/d-1/state.json", `{"version":3}`)
		if got := get(t, s, "logs/op-1.log"); got != "first line\n" {
			t.Fatalf("got %q", got)
		}
		if got := get(t, s, "logs/op-2.log"); got != "" {
			t.Fatalf("empty blob read back as %q", got)
		}
		put(t, s, "logs/op-1.log", "replaced")
		if got := get(t, s, "logs/op-1.log"); got != "replaced" {
			t.Fatalf("after replacing: %q", got)
		}
		// Size unknown: read to the end.
		if err := s.Put(ctx, "logs/op-3.log", strings.NewReader("streamed"), -1); err != nil {
			t.Fatal(err)
		}
		if got := get(t, s, "logs/op-3.log"); got != "streamed" {
			t.Fatalf("streamed blob read back as %q", got)
		}

		keys, err := s.List(ctx, "logs/")
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"logs/op-1.log", "logs/op-2.log", "logs/op-3.log"}; fmt.Sprint(keys) != fmt.Sprint(want) {
			t.Fatalf("list logs/: %v, want %v", keys, want)
		}
		if keys, err := s.List(ctx, "nothing/"); err != nil || len(keys) != 0 {
			t.Fatalf("list of an empty prefix: %v %v", keys, err)
		}

		if err := s.Delete(ctx, "logs/op-1.log"); err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(ctx, "logs/op-1.log"); err != nil {
			t.Fatalf("deleting a missing blob: %v", err)
		}
		_, err = s.Get(ctx, "logs/op-1.log")
		if !errors.Is(err, objstore.ErrNotFound) || !strings.Contains(err.Error(), "logs/op-1.log") {
			t.Fatalf("get of a deleted blob: %v, want ErrNotFound naming the key", err)
		}
	})
}

func TestStore_RefusesKeysThatEscapeOrTouchEngineState(t *testing.T) {
	eachStore(t, func(t *testing.T, s store) {
		ctx := context.Background()
		for _, key := range []string{"", "/abs", "a//b", "../up", "a/../../up", "a/./b", "..", "a/", "sp ace", `back\slash`, "ü", strings.Repeat("a/", 600) + "a"} {
			if err := s.Put(ctx, key, strings.NewReader("x"), 1); err == nil {
				t.Errorf("put %q was accepted", key)
			}
			if _, err := s.Get(ctx, key); err == nil || errors.Is(err, objstore.ErrNotFound) {
				t.Errorf("get %q: %v, want an invalid key error", key, err)
			}
		}
		if err := s.Put(ctx, ".pulumi/stacks/p/s.json", strings.NewReader("x"), 1); err == nil || !strings.Contains(err.Error(), "Pulumi") {
			t.Errorf("put into the engine's state: %v", err)
		}
	})
}

func TestStore_ShortReaderLeavesTheOldBlob(t *testing.T) {
	eachStore(t, func(t *testing.T, s store) {
		ctx := context.Background()
		put(t, s, "exports/d-1.json", "old")
		// Says 100 bytes, gives 3 then fails, as a dropped upload would.
		r := io.MultiReader(strings.NewReader("new"), iotest.ErrReader(errors.New("connection reset")))
		if err := s.Put(ctx, "exports/d-1.json", r, 100); err == nil {
			t.Fatal("a failed read was stored")
		}
		if got := get(t, s, "exports/d-1.json"); got != "old" {
			t.Fatalf("after a failed put the blob reads %q, want the old one", got)
		}
	})
}

func TestDir_LeavesNoTemporaryFiles(t *testing.T) {
	root := filepath.Join(t.TempDir(), "objects")
	d, err := objstore.NewDir(root)
	if err != nil {
		t.Fatal(err)
	}
	put(t, d, "a/b.txt", "x")
	_ = d.Put(context.Background(), "a/c.txt", iotest.ErrReader(errors.New("boom")), 5)
	var files []string
	err = filepath.WalkDir(root, func(path string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			files = append(files, strings.TrimPrefix(path, root))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(files) != "[/a/b.txt]" {
		t.Fatalf("files %v: want only the stored blob", files)
	}
	info, err := os.Stat(filepath.Join(root, "a", "b.txt"))
	if err != nil || info.Mode().Perm()&0o077 != 0 {
		t.Fatalf("blob file %v %v: want it private to Nimbus", info, err)
	}
}

func TestS3_CreatesTheBucketAndPingSeesItGo(t *testing.T) {
	cfg := s3test.Shared(t)
	s := newS3(t, cfg)
	put(t, s, "logs/x.log", "x")
	// A second store on the same bucket, as a second replica would open: the bucket exists now.
	again := newS3(t, cfg)
	if got := get(t, again, "logs/x.log"); got != "x" {
		t.Fatalf("the second store reads %q", got)
	}

	admin, err := minio.New(strings.TrimPrefix(cfg.Endpoint, "http://"), &minio.Options{
		Creds: credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""), Region: cfg.Region, BucketLookup: minio.BucketLookupPath})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := admin.RemoveObject(ctx, cfg.Bucket, "logs/x.log", minio.RemoveObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := admin.RemoveBucket(ctx, cfg.Bucket); err != nil {
		t.Fatal(err)
	}
	err = s.Ping(ctx)
	if err == nil || !strings.Contains(err.Error(), cfg.Bucket) {
		t.Fatalf("ping of a removed bucket: %v", err)
	}
	t.Logf("ping: %v", err)
}

func TestS3_WrongCredentialsOrNoServerFailAtStart(t *testing.T) {
	cfg := s3test.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	bad := cfg
	bad.SecretKey = "not-the-secret"
	if _, err := objstore.NewS3(ctx, bad); err == nil {
		t.Fatal("wrong credentials were accepted")
	} else if strings.Contains(err.Error(), bad.SecretKey) {
		t.Fatalf("the error shows the secret key: %v", err)
	}

	ln := cfg
	ln.Endpoint = "http://127.0.0.1:1" // nothing listens on port 1
	start := time.Now()
	_, err := objstore.NewS3(ctx, ln)
	if err == nil || !strings.Contains(err.Error(), ln.Endpoint) {
		t.Fatalf("unreachable server: %v, want an error naming it", err)
	}
	t.Logf("unreachable server reported after %s: %v", time.Since(start).Round(time.Millisecond), err)
}

func TestS3Config_NeverShowsTheSecretKey(t *testing.T) {
	cfg := objstore.S3Config{Endpoint: "http://127.0.0.1:8333", Bucket: "b", AccessKey: "ak", SecretKey: "very-secret-value"}
	var logged bytes.Buffer
	slog.New(slog.NewTextHandler(&logged, nil)).Info("object storage", "s3", cfg)
	for what, text := range map[string]string{"log": logged.String(), "%v": fmt.Sprintf("%v", cfg), "%+v": fmt.Sprintf("%+v", cfg), "%s": fmt.Sprintf("%s", cfg), "%#v": fmt.Sprintf("%#v", cfg)} {
		if strings.Contains(text, cfg.SecretKey) {
			t.Errorf("%s shows the secret key: %s", what, text)
		}
		if !strings.Contains(text, "127.0.0.1:8333") {
			t.Errorf("%s does not say where the store is: %s", what, text)
		}
	}
}

func TestParseEndpoint(t *testing.T) {
	for endpoint, ok := range map[string]bool{
		"http://127.0.0.1:8333":   true,
		"https://s3.example.com":  true,
		"https://s3.example.com/": true,
		"127.0.0.1:8333":          false,
		"ftp://host":              false,
		"http://host/bucket":      false,
		"http://user:pw@host":     false,
		"":                        false,
	} {
		if _, err := objstore.ParseEndpoint(endpoint); (err == nil) != ok {
			t.Errorf("ParseEndpoint(%q): %v", endpoint, err)
		}
	}
}
