package pulumix

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// doubling is a program whose output is a string of 2 KiB doubled n times.
func doubling(n int) string {
	var b strings.Builder
	b.WriteString("name: big\nruntime: yaml\nvariables:\n  v0: " + strings.Repeat("x", 2048) + "\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "  v%d:\n    fn::join: [\"\", [\"${v%d}\", \"${v%d}\"]]\n", i, i-1, i-1)
	}
	fmt.Fprintf(&b, "outputs:\n  big: ${v%d}\n", n)
	return b.String()
}

// A program that makes a value of any size cannot make Nimbus hold it: an engine event beyond
// MaxEvent is dropped unread and fails the run, and outputs beyond MaxOutputs fail the up, each
// saying so; neither is kept. Under both, the same program runs.
func TestStack_HugeValuesAreRefusedWithoutBeingHeld(t *testing.T) {
	r, _, _ := stackRunner(t, "file")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	for _, c := range []struct {
		doublings int
		refused   string
	}{
		{4, ""}, // 32 KiB
		{10, "the stack's outputs are 2.0 MiB, and a deployment's may be at most 1.0 MiB"},
		{15, "Nimbus reads none over 4.0 MiB"}, // 64 MiB
	} {
		st := Stack{Name: fmt.Sprintf("d-big-%d", c.doublings), Code: doubling(c.doublings), Passphrase: "p"}
		res, err := r.Up(ctx, st, nil)
		var engine *EngineError
		switch {
		case c.refused == "" && err != nil:
			t.Fatalf("%d doublings: %v", c.doublings, err)
		case c.refused == "" && len(res.Outputs["big"].(string)) != 2048<<c.doublings:
			t.Fatalf("%d doublings: outputs of %d bytes", c.doublings, len(res.Outputs["big"].(string)))
		case c.refused != "" && (!errors.As(err, &engine) || !strings.Contains(err.Error(), c.refused)):
			t.Fatalf("%d doublings: %v, want %q refused as final", c.doublings, err, c.refused)
		case c.refused != "" && len(res.Outputs) != 0:
			t.Fatalf("%d doublings: outputs kept", c.doublings)
		}
		check, err := r.Check(ctx, Stack{Code: st.Code}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if refused := c.doublings == 15; check.Succeeded == refused || refused && !strings.Contains(check.Output, "Nimbus reads none over") {
			t.Fatalf("%d doublings: the check %+v", c.doublings, check)
		}
	}
}
