package pulumix

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"nimbus/app/kernel/sandbox"
)

// Bucket is direct access to a DIY backend's files, by slash-separated key: a stack's own file
// backend, or the bucket every replica shares.
type Bucket interface {
	List(ctx context.Context, prefix string) ([]string, error)
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	// PutEngine writes a file of the engine's own, such as a new stack's empty checkpoint.
	PutEngine(ctx context.Context, key string, r io.Reader, size int64) error
	Delete(ctx context.Context, key string) error
}

// Option changes how NewRunner sets up a Runner.
type Option func(*Runner)

// WithSharedState keeps every stack's state in b, such as the object store's bucket, where every
// replica finds it, under .pulumi/ beside Nimbus's blobs. The engine still works on a file
// backend of the stack's own and never gets b's credentials (see mirror).
func WithSharedState(b Bucket) Option { return func(r *Runner) { r.shared = b } }

// WithSandbox says how engine processes are confined; sandbox.Auto when not given.
func WithSandbox(m sandbox.Mode) Option { return func(r *Runner) { r.mode = m } }

// CloudDirs are directories that stand for a cloud, which every engine process may write: the
// simulated cloud's. A real provider reaches its cloud over the network.
func CloudDirs(dirs ...string) Option {
	return func(r *Runner) { r.clouds = append(r.clouds, dirs...) }
}

// splitState moves the stacks of a file backend that all stacks shared, as Nimbus kept them
// before each stack had its own, into a backend per stack: root/<stack>/.pulumi/. Each move is a
// rename, so a run that stops half-way is finished by the next.
func splitState(root string) error {
	shared := filepath.Join(root, ".pulumi")
	projects, err := os.ReadDir(filepath.Join(shared, "stacks"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	meta, err := os.ReadFile(filepath.Join(shared, "meta.yaml"))
	if err != nil {
		return fmt.Errorf("read the backend's version: %w", err)
	}
	for _, p := range projects {
		files, err := os.ReadDir(filepath.Join(shared, "stacks", p.Name()))
		if err != nil {
			return err
		}
		for _, f := range files {
			// <stack>.json, and beside it .bak copies and the attribute files of blobs.
			stack, _, ok := strings.Cut(f.Name(), ".json")
			if !ok || !validStackName.MatchString(stack) {
				continue
			}
			own := filepath.Join(root, stack, ".pulumi")
			if err := os.MkdirAll(own, 0o700); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(own, "meta.yaml"), meta, 0o600); err != nil {
				return err
			}
			moves := [][2]string{{filepath.Join("stacks", p.Name(), f.Name()), ""}}
			for _, kind := range []string{"history", "backups", filepath.Join("locks", "organization")} {
				moves = append(moves, [2]string{filepath.Join(kind, p.Name(), stack), ""})
			}
			for _, m := range moves {
				if err := move(filepath.Join(shared, m[0]), filepath.Join(own, m[0])); err != nil {
					return err
				}
			}
		}
	}
	return os.RemoveAll(shared)
}

// move renames from to to, making to's parents; a from that is gone has moved already.
func move(from, to string) error {
	if _, err := os.Lstat(from); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
		return err
	}
	return os.Rename(from, to)
}
