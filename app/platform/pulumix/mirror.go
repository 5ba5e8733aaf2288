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

	"nimbus/app/kernel/objstore"
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
	// lease says the caller holds the stack alone (Stack.Exclusive): only then does the mirror
	// write the shared bucket, so that a replica reading a stack (an export, a preview) never
	// overwrites what the replica that holds it pushes.
	lease bool
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

// pull brings the file backend in step with the shared bucket before the engine starts. Where
// the two differ, the one that moved on since they last agreed wins: the bucket, when another
// replica ran the stack since; the file backend, when this replica ran it and could not push
// (then a caller holding the stack pushes it now). A stack the bucket holds under the program's
// own name (legacy), as Nimbus kept stacks before it named the project, moves to Nimbus's key
// when the caller holds it. A caller that does not hold the stack writes nothing to the bucket.
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
	there, here, base := digest(shared, inShared), digest(local, inLocal), m.base()
	switch {
	case oldKey != "":
		// Moving to Nimbus's key: the bucket's is the state, and it takes the new key.
		if err := m.take(ctx, key, shared, inShared); err != nil {
			return err
		}
		if !m.lease {
			return nil
		}
		if err := m.put(ctx, m.shared, key, shared, true); err != nil {
			return err
		}
		if err := m.shared.Delete(ctx, oldKey); err != nil && !errors.Is(err, objstore.ErrNotFound) {
			return fmt.Errorf("remove the state of %s under its old name: %w", m.stack, err)
		}
		return nil
	case there == here:
		if m.lease && base != there {
			return m.agree(there)
		}
		return nil
	case there == base || !inShared && base == "":
		// The bucket has not moved since this replica last agreed with it (or never knew the
		// stack): the file backend is newer.
		if !m.lease {
			return nil
		}
		return m.put(ctx, m.shared, key, local, inLocal)
	}
	// Another replica moved the stack on, or removed it.
	if err := m.take(ctx, key, shared, inShared); err != nil {
		return err
	}
	if m.lease {
		return m.agree(there)
	}
	return nil
}

// take makes the file backend hold exactly the bucket's checkpoint, or none.
func (m *mirror) take(ctx context.Context, key string, data []byte, found bool) error {
	if err := m.clearLocal(ctx); err != nil {
		return err
	}
	if !found {
		return nil
	}
	if err := m.local.PutEngine(ctx, key, bytes.NewReader(data), int64(len(data))); err != nil {
		return fmt.Errorf("keep the state of %s: %w", m.stack, err)
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
	if !m.lease {
		return nil
	}
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

// put writes (or, when !found, removes) key in b and records the content as the one both
// places agree on.
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
	return m.agree(digest(data, found))
}

// agree records the digest of the checkpoint both places hold.
func (m *mirror) agree(sum string) error {
	if err := os.MkdirAll(filepath.Dir(m.synced), 0o700); err != nil {
		return err
	}
	return os.WriteFile(m.synced, []byte(sum), 0o600)
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

// exists reports whether b holds key, without reading it: a stack's checkpoint may be large.
func exists(ctx context.Context, b Bucket, key string) (bool, error) {
	rc, err := b.Get(ctx, key)
	if errors.Is(err, objstore.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, rc.Close()
}
