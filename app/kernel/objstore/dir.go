package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Dir keeps blobs as files under a directory: the store of a single node, and the default.
type Dir struct{ root string }

// NewDir makes a store over root, creating it when missing.
func NewDir(root string) (*Dir, error) {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("object store %s: %w", root, err)
	}
	return &Dir{root: root}, nil
}

// Root is the directory the blobs are kept in.
func (d *Dir) Root() string { return d.root }

func (d *Dir) path(key string) string { return filepath.Join(d.root, filepath.FromSlash(key)) }

// Put writes a temporary file beside the blob's and renames it over the blob, so that a crash
// or a short read leaves the old blob whole.
func (d *Dir) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if err := checkPut(key); err != nil {
		return err
	}
	return d.put(ctx, key, r, size)
}

// PutEngine writes a file in the engine's area, as Put writes a blob.
func (d *Dir) PutEngine(ctx context.Context, key string, r io.Reader, size int64) error {
	if err := checkEngineKey(key); err != nil {
		return err
	}
	return d.put(ctx, key, r, size)
}

func (d *Dir) put(ctx context.Context, key string, r io.Reader, size int64) error {
	path := d.path(key)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".put-*")
	if err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	defer os.Remove(f.Name()) // fails harmlessly once renamed
	src := io.Reader(ctxReader{ctx, r})
	if size >= 0 {
		src = io.LimitReader(src, size)
	}
	n, err := io.Copy(f, src)
	if err == nil && size >= 0 && n != size {
		err = fmt.Errorf("read %d bytes, want %d", n, size)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	return nil
}

// Get opens the blob's file.
func (d *Dir) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	f, err := os.Open(d.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, notFound(key)
	} else if err != nil {
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	if info, err := f.Stat(); err != nil || info.IsDir() {
		f.Close()
		return nil, notFound(key)
	}
	return f, nil
}

// Delete removes the blob; a missing blob is no error.
func (d *Dir) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := os.Remove(d.path(key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	return nil
}

// List returns the keys under prefix (a directory, such as "logs/"; "" for every key), sorted.
func (d *Dir) List(ctx context.Context, prefix string) ([]string, error) {
	start := strings.TrimSuffix(prefix, "/")
	if start != "" {
		if err := checkKey(start); err != nil {
			return nil, err
		}
	}
	var keys []string
	err := filepath.WalkDir(d.path(start), func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.Type().IsRegular() && !strings.HasPrefix(e.Name(), ".put-") {
			rel, err := filepath.Rel(d.root, path)
			if err != nil {
				return err
			}
			keys = append(keys, filepath.ToSlash(rel))
		}
		return ctx.Err()
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("list %s: %w", prefix, err)
	}
	slices.Sort(keys)
	return keys, nil
}

// Ping checks that the directory is still there.
func (d *Dir) Ping(ctx context.Context) error {
	info, err := os.Stat(d.root)
	if err != nil {
		return err
	}
	if !info.IsDir() {
		return fmt.Errorf("%s is not a directory", d.root)
	}
	return nil
}

// ctxReader stops a long copy when its context ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
