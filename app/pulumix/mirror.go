package pulumix

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"nimbus/app/objstore"
)

// The engine never holds the shared bucket's credentials: with them, any provider plugin could
// read and write every stack's state. Each engine works on a file backend of its own stack
// (state/<stack> in the data directory), and a mirror keeps the stack's checkpoint in the
// shared bucket in step with it: pulled before the engine starts, pushed whenever the engine
// writes it and once more when it ends. The operation's lease, not a lock in the bucket, says
// which replica runs the stack, so exactly one mirror writes its key at a time.

// mirrorPoll is how often a running engine's checkpoint is looked at. The engine writes it at
// every step it takes; a replica that dies loses at most what it wrote since the last push.
const mirrorPoll = 100 * time.Millisecond

// mirror keeps one stack's checkpoint in the shared bucket in step with its file backend.
type mirror struct {
	shared Bucket
	local  Bucket
	stack  string
	// synced is a file outside the engine's reach holding the hash of the checkpoint as both
	// places last agreed on, so that a push that failed is made by the next operation here,
	// unless another replica has moved the stack on since.
	synced string
}

// absent is the hash of a checkpoint that does not exist.
const absent = "absent"

func digest(b []byte, found bool) string {
	if !found {
		return absent
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// pull brings the shared checkpoint into the file backend, or, when this replica holds a newer
// one it could not push and the shared one has not moved since, pushes that. A stack the
// shared bucket holds under the program's own name (legacy), as Nimbus kept stacks before it
// named the project, moves to Nimbus's key on the way.
func (m *mirror) pull(ctx context.Context, legacy string) error {
	key := checkpointKey(project, m.stack)
	shared, inShared, err := read(ctx, m.shared, key)
	if err != nil {
		return fmt.Errorf("read the state of %s: %w", m.stack, err)
	}
	var oldKey string
	if !inShared && legacy != "" && legacy != project {
		if shared, inShared, err = read(ctx, m.shared, checkpointKey(legacy, m.stack)); err != nil {
			return fmt.Errorf("read the state of %s: %w", m.stack, err)
		}
		if inShared {
			oldKey = checkpointKey(legacy, m.stack)
			if shared, err = adoptURNs(shared, m.stack); err != nil {
				return fmt.Errorf("rename the project of %s: %w", m.stack, err)
			}
		}
	}
	local, inLocal, err := read(ctx, m.local, key)
	if err != nil {
		return fmt.Errorf("read the state of %s: %w", m.stack, err)
	}
	base := m.base()
	if oldKey == "" && digest(local, inLocal) != base && digest(shared, inShared) == base {
		return m.put(ctx, m.shared, key, local, inLocal)
	}
	if err := m.clearLocal(ctx); err != nil {
		return err
	}
	if err := m.put(ctx, m.local, key, shared, inShared); err != nil {
		return err
	}
	if oldKey != "" {
		if err := m.put(ctx, m.shared, key, shared, true); err != nil {
			return err
		}
		if err := m.shared.Delete(ctx, oldKey); err != nil && !errors.Is(err, objstore.ErrNotFound) {
			return fmt.Errorf("remove the state of %s under its old name: %w", m.stack, err)
		}
	}
	return nil
}

// clearLocal removes what the file backend holds of any project's checkpoints: the shared
// bucket says what exists.
func (m *mirror) clearLocal(ctx context.Context) error {
	keys, err := m.local.List(ctx, ".pulumi/stacks/")
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := m.local.Delete(ctx, k); err != nil && !errors.Is(err, objstore.ErrNotFound) {
			return err
		}
	}
	return nil
}

// push writes the file backend's checkpoint to the shared bucket, or removes it there when
// the engine removed the stack, unless the two agree already.
func (m *mirror) push(ctx context.Context) error {
	key := checkpointKey(project, m.stack)
	local, inLocal, err := read(ctx, m.local, key)
	if err != nil {
		return fmt.Errorf("read the state of %s: %w", m.stack, err)
	}
	if digest(local, inLocal) == m.base() {
		return nil
	}
	return m.put(ctx, m.shared, key, local, inLocal)
}

// put writes (or, when !found, removes) key in b and records the content as the synced one.
func (m *mirror) put(ctx context.Context, b Bucket, key string, data []byte, found bool) error {
	var err error
	if found {
		err = b.PutEngine(ctx, key, bytes.NewReader(data), int64(len(data)))
	} else if err = b.Delete(ctx, key); errors.Is(err, objstore.ErrNotFound) {
		err = nil
	}
	if err != nil {
		return fmt.Errorf("keep the state of %s: %w", m.stack, err)
	}
	if err := os.MkdirAll(filepath.Dir(m.synced), 0o700); err != nil {
		return err
	}
	return os.WriteFile(m.synced, []byte(digest(data, found)), 0o600)
}

func (m *mirror) base() string {
	b, err := os.ReadFile(m.synced)
	if err != nil {
		return "" // never synced: neither side is known to be the newer
	}
	return string(b)
}

// watch pushes the checkpoint whenever the engine writes it, until the returned function is
// called; that function pushes once more and reports whether that last push failed. A push
// that fails meanwhile is made good by a later one.
func (m *mirror) watch(ctx context.Context, file string) func() error {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(mirrorPoll)
		defer t.Stop()
		var last os.FileInfo
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			info, err := os.Stat(file)
			if err != nil || last != nil && info.Size() == last.Size() && info.ModTime().Equal(last.ModTime()) {
				continue
			}
			if m.push(ctx) == nil {
				last = info
			}
		}
	}()
	return func() error {
		close(done)
		wg.Wait()
		return m.push(context.WithoutCancel(ctx))
	}
}

// read returns the content under key, and whether there is any.
func read(ctx context.Context, b Bucket, key string) ([]byte, bool, error) {
	data, err := get(ctx, b, key)
	if errors.Is(err, objstore.ErrNotFound) {
		return nil, false, nil
	}
	return data, err == nil, err
}

// get returns the content under key.
func get(ctx context.Context, b Bucket, key string) ([]byte, error) {
	rc, err := b.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}
