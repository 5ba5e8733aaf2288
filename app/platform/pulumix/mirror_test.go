package pulumix

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"nimbus/app/kernel/objstore"
)

// The mirror's pull, case by case: the side that moved on since the two last agreed wins, a
// caller that does not hold the stack never writes the shared bucket, and nothing newer is lost.
func TestMirror_PullKeepsTheNewerSide(t *testing.T) {
	ctx := context.Background()
	key := checkpointKey(project, "d-m")
	type state struct{ shared, local string } // "" is no checkpoint
	for _, c := range []struct {
		name   string
		lease  bool
		agreed string // the checkpoint both last held ("" never synced)
		before state
		want   state
	}{
		{"the bucket moved on", true, "v1", state{"v2", "v1"}, state{"v2", "v2"}},
		{"the bucket moved on, read only", false, "v1", state{"v2", "v1"}, state{"v2", "v2"}},
		{"a push this replica owes", true, "v1", state{"v1", "v2"}, state{"v2", "v2"}},
		{"a push this replica owes, read only", false, "v1", state{"v1", "v2"}, state{"v1", "v2"}},
		{"destroyed on another replica", true, "v1", state{"", "v1"}, state{"", ""}},
		{"only here, never synced", true, "", state{"", "v1"}, state{"v1", "v1"}},
		{"only here, never synced, read only", false, "", state{"", "v1"}, state{"", "v1"}},
		{"the same", false, "", state{"v1", "v1"}, state{"v1", "v1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			shared, _ := objstore.NewDir(t.TempDir())
			local, _ := objstore.NewDir(t.TempDir())
			m := &mirror{shared: shared, local: local, stack: "d-m", synced: filepath.Join(t.TempDir(), "synced"), lease: c.lease}
			set := func(b Bucket, v string) {
				if v != "" {
					if err := b.PutEngine(ctx, key, bytes.NewReader([]byte(v)), int64(len(v))); err != nil {
						t.Fatal(err)
					}
				}
			}
			set(shared, c.before.shared)
			set(local, c.before.local)
			if c.agreed != "" {
				if err := m.agree(digest([]byte(c.agreed), true)); err != nil {
					t.Fatal(err)
				}
			}
			if err := m.pull(ctx, ""); err != nil {
				t.Fatal(err)
			}
			got := func(b Bucket) string {
				data, _, err := read(ctx, b, key)
				if err != nil {
					t.Fatal(err)
				}
				return string(data)
			}
			if g := (state{got(shared), got(local)}); g != c.want {
				t.Fatalf("after the pull: %+v, want %+v", g, c.want)
			}
		})
	}
}
