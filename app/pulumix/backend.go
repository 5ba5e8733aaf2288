package pulumix

import (
	"context"
	"io"

	"nimbus/app/objstore"
)

// Backend is where the engine keeps stack state: a DIY backend, which Nimbus can also read and
// write directly.
type Backend struct {
	URL string // file://<dir> or s3://<bucket>?endpoint=…
	// Env is what the engine needs to reach the backend, such as credentials. It travels in
	// the environment only, never on a command line.
	Env map[string]string
	// Bucket holds the same files as URL, for ClearLock.
	Bucket Bucket
}

// Bucket is direct access to a backend's files, by slash-separated key.
type Bucket interface {
	List(ctx context.Context, prefix string) ([]string, error)
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	Delete(ctx context.Context, key string) error
}

// S3Backend keeps stack state in the object store's bucket, under .pulumi/ beside Nimbus's blobs,
// so that every replica sees every stack.
func S3Backend(s *objstore.S3) Backend {
	return Backend{URL: s.BackendURL(), Env: s.BackendEnv(), Bucket: s}
}

// Option changes how NewRunner sets up a Runner.
type Option func(*Runner)

// WithBackend keeps stack state in b instead of the file backend under the data directory.
func WithBackend(b Backend) Option { return func(r *Runner) { r.backend = b } }
