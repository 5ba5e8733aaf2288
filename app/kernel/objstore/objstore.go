// Package objstore keeps Nimbus's blobs — full operation logs, state exports — in a directory
// under the data directory or in an S3-compatible bucket shared by every replica.
package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// Store keeps blobs by key. Keys are slash-separated paths such as "logs/<operation>.log".
type Store interface {
	// Put stores size bytes read from r under key (size -1: until EOF), replacing what was
	// there. Readers see the old blob or the new one, never a part.
	Put(ctx context.Context, key string, r io.Reader, size int64) error
	// Get opens the blob under key; ErrNotFound when there is none.
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	// Ping reports whether the store can be used, for readiness checks.
	Ping(ctx context.Context) error
}

// ErrNotFound means no blob is stored under the key.
var ErrNotFound = errors.New("object not found")

// EngineArea is where Pulumi keeps its state when it shares the bucket; Put refuses keys in it,
// so no blob of Nimbus's can overwrite a stack or a lock.
const EngineArea = ".pulumi/"

// A segment may hold dots but not be "." or ".." (checked below), so no key can climb out of a
// directory; nothing needs escaping in a URL or a file name either.
var validSegment = regexp.MustCompile(`^[A-Za-z0-9._-]{1,255}$`)

func checkKey(key string) error {
	if len(key) > 1024 {
		return fmt.Errorf("invalid key %.40q…: longer than 1024 bytes", key)
	}
	for _, s := range strings.Split(key, "/") {
		if !validSegment.MatchString(s) || s == "." || s == ".." {
			return fmt.Errorf("invalid key %q: want slash-separated names of letters, digits, '.', '_' and '-', none of them . or ..", key)
		}
	}
	return nil
}

func checkPut(key string) error {
	if strings.HasPrefix(key, EngineArea) {
		return fmt.Errorf("invalid key %q: %s belongs to the Pulumi engine", key, EngineArea)
	}
	return checkKey(key)
}

// checkEngineKey admits only keys in the engine's area, for what Nimbus writes there in the
// engine's place: a new stack's files (see package pulumix).
func checkEngineKey(key string) error {
	if !strings.HasPrefix(key, EngineArea) {
		return fmt.Errorf("invalid key %q: not in %s", key, EngineArea)
	}
	return checkKey(key)
}

// notFound wraps ErrNotFound with the key that was asked for.
func notFound(key string) error { return fmt.Errorf("%w: %s", ErrNotFound, key) }
