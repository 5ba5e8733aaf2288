package pulumix

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"syscall"

	"nimbus/app/kernel/objstore"
)

// clearLock removes the lock a crashed engine left on the stack, which otherwise refuses every
// later operation. The caller guarantees that no engine runs the stack: removing a live engine's
// lock lets two engines write one state.
//
// The stack's file backend, b, keeps one file per lock holder at
// .pulumi/locks/organization/<project>/<stack>/<lock id>.json. Each replica's engines work on a
// backend of their own (see mirror), so a lock is always of an engine on this host.
func (r *Runner) clearLock(ctx context.Context, b Bucket, stack string) error {
	dir := lockDir(stack)
	locks, err := b.List(ctx, dir)
	if err != nil {
		return fmt.Errorf("clear lock of %s: %w", stack, err)
	}
	host, _ := os.Hostname()
	for _, key := range locks {
		if name := strings.TrimPrefix(key, dir); strings.Contains(name, "/") || !strings.HasSuffix(name, ".json") {
			continue
		}
		content, err := readLock(ctx, b, key)
		if errors.Is(err, objstore.ErrNotFound) {
			continue // its engine finished meanwhile
		} else if err != nil {
			return fmt.Errorf("clear lock of %s: %w", stack, err)
		}
		if held(content, host) {
			// The engine that took it still runs — a crashed server leaves its engine behind —
			// and two engines on one stack would corrupt it: wait for it to finish.
			return fmt.Errorf("clear lock of %s: %w", stack, ErrLocked)
		}
		if err := b.Delete(ctx, key); err != nil {
			return fmt.Errorf("clear lock of %s: %w", stack, err)
		}
	}
	return nil
}

// lockDir is the prefix of a stack's lock files in a DIY backend.
func lockDir(stack string) string {
	return path.Join(".pulumi", "locks", "organization", project, stack) + "/"
}

func readLock(ctx context.Context, b Bucket, key string) ([]byte, error) {
	rc, err := b.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(io.LimitReader(rc, 64<<10)) // a lock is a line of JSON
}

// held reports whether the lock names a process on this host that is still alive.
func held(content []byte, host string) bool {
	var lock struct {
		PID      int    `json:"pid"`
		Hostname string `json:"hostname"`
	}
	if json.Unmarshal(content, &lock) != nil || lock.PID <= 0 || lock.Hostname != host {
		return false
	}
	if err := syscall.Kill(lock.PID, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	// A killed engine its parent has not reaped yet still answers signals; it holds nothing.
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", lock.PID))
	if err != nil {
		return true
	}
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
		return false
	}
	return true
}
