package component

import (
	"strings"
	"testing"
)

func TestLiveOutput_NeverSplitsACharacter(t *testing.T) {
	var got []string
	l := &liveOutput{flush: func(s string) { got = append(got, s) }}
	text := "résumé ✓ done"
	b := []byte(text)
	// Written a byte at a time and flushed after each, as a slow engine would.
	for i := range b {
		_, _ = l.Write(b[i : i+1])
		l.mu.Lock()
		l.flushLocked()
		l.mu.Unlock()
	}
	l.Close()
	for _, piece := range got {
		if strings.ToValidUTF8(piece, "") != piece {
			t.Fatalf("piece %q is not valid UTF-8", piece)
		}
	}
	if strings.Join(got, "") != text {
		t.Fatalf("got %q, want %q", strings.Join(got, ""), text)
	}
}
