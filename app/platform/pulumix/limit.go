package pulumix

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"unicode/utf8"
)

// A program, a provider or the engine itself may print without end, or print one line of a
// gigabyte. Whatever keeps engine output keeps a bounded part of it and says what it dropped.
const (
	// MaxLine is the longest line of engine output kept whole: the rest of a longer line is
	// dropped and a note in its place says how long the line was.
	MaxLine = 16 << 10
	// maxKept is how much of a CLI process's stdout and stderr is held for its caller when the
	// caller streams them elsewhere as well.
	maxKept = 1 << 20
)

// LineLimit passes text on to w, cutting every line longer than max bytes (at a character
// boundary) and putting " … [line truncated: 1.2 MiB]" in place of the rest. Nothing of a long
// line is held back, so memory stays bounded whatever comes. Call Flush at the end of the text
// to note an unfinished line that was cut. Not safe for concurrent use.
type LineLimit struct {
	w   io.Writer
	max int
	run int // bytes of the current line passed on
	cut int // bytes of the current line dropped
}

// LimitLines returns a LineLimit writing to w.
func LimitLines(w io.Writer, max int) *LineLimit { return &LineLimit{w: w, max: max} }

func (l *LineLimit) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		seg := p
		if i >= 0 {
			seg = p[:i]
		}
		if err := l.pass(seg); err != nil {
			return 0, err
		}
		if i < 0 {
			break
		}
		if err := l.end("\n"); err != nil {
			return 0, err
		}
		p = p[i+1:]
	}
	return n, nil
}

// Flush notes the cut of an unfinished last line, if it was cut.
func (l *LineLimit) Flush() error { return l.end("") }

func (l *LineLimit) pass(seg []byte) error {
	if l.cut == 0 {
		if room := l.max - l.run; len(seg) <= room {
			l.run += len(seg)
			_, err := l.w.Write(seg)
			return err
		}
		k := runeCut(seg, l.max-l.run)
		if _, err := l.w.Write(seg[:k]); err != nil {
			return err
		}
		l.run += k
		seg = seg[k:]
	}
	l.cut += len(seg)
	return nil
}

func (l *LineLimit) end(newline string) error {
	note := newline
	if l.cut > 0 {
		note = truncatedNote(l.run+l.cut) + newline
	}
	l.run, l.cut = 0, 0
	if note == "" {
		return nil
	}
	_, err := io.WriteString(l.w, note)
	return err
}

func truncatedNote(size int) string { return " … [line truncated: " + Size(size) + "]" }

// CutLine is a LineLimit over one piece of text, such as a diagnostic the engine reported.
func CutLine(s string, max int) string {
	if len(s) <= max {
		return s
	}
	var b bytes.Buffer
	l := LimitLines(&b, max)
	_, _ = l.Write([]byte(s))
	_ = l.Flush()
	return b.String()
}

// CutTail keeps the last max bytes of s (from a character boundary) after a note saying how
// much came before them: the end of an engine's output says what went wrong.
func CutTail(s string, max int) string {
	if len(s) <= max {
		return s
	}
	start := len(s) - max
	for start < len(s) && !utf8.RuneStart(s[start]) {
		start++
	}
	return droppedNote(start) + s[start:]
}

func droppedNote(n int) string { return "[… " + Size(n) + " of earlier output dropped]\n" }

// Size writes a byte count the way people read it: 512 B, 16.0 KiB, 1.2 MiB.
func Size(n int) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	f, prefix := float64(n)/unit, "KMGT"
	i := 0
	for ; f >= unit && i < len(prefix)-1; i++ {
		f /= unit
	}
	return fmt.Sprintf("%.1f %ciB", f, prefix[i])
}

// runeCut is the largest k <= max at which b can be cut without splitting a character.
func runeCut(b []byte, max int) int {
	k := max
	for k > 0 && k < len(b) && !utf8.RuneStart(b[k]) {
		k--
	}
	return k
}

// tail keeps the last max bytes written to it, long lines cut as LineLimit cuts them: the end
// of the engine's output says what went wrong, and a runaway program must not fill memory. What
// it dropped from the front is noted at the start of String. Safe for concurrent writers, such
// as the copiers of a process's stdout and stderr.
type tail struct {
	max int

	mu      sync.Mutex
	buf     bytes.Buffer
	dropped int
	lines   *LineLimit
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.lines == nil {
		t.lines = LimitLines(tailBuffer{t}, MaxLine)
	}
	return t.lines.Write(p)
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.buf.String()
	if t.dropped > 0 {
		s = droppedNote(t.dropped) + s
	}
	if t.lines != nil && t.lines.cut > 0 {
		s += truncatedNote(t.lines.run + t.lines.cut)
	}
	return s
}

// tailBuffer is what a tail's LineLimit writes to: the buffer, trimmed to max from the front.
type tailBuffer struct{ t *tail }

func (b tailBuffer) Write(p []byte) (int, error) {
	t := b.t
	t.buf.Write(p)
	if over := t.buf.Len() - t.max; over > 0 {
		t.buf.Next(over)
		t.dropped += over
	}
	return len(p), nil
}

// captured is where a CLI process's stdout or stderr is held for its caller.
type captured interface {
	io.Writer
	String() string
}

// capture holds a process's output for the caller. Output the caller also streams elsewhere
// (the progress of an up or a preview) is kept only in part, as its errors quote only the end
// of it; output that is the command's result (a stack export) is kept whole.
func capture(streamed bool) captured {
	if streamed {
		return &tail{max: maxKept}
	}
	return &bytes.Buffer{}
}
