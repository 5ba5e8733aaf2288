package component

import (
	"bytes"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"nimbus/app/platform/pulumix"
)

// liveOutput passes the engine's progress to the database in pieces, at most twice a second,
// so the editor page can show it while the check runs. Long lines are cut on the way in, and
// what waits for the next flush is bounded as the stored output is.
type liveOutput struct {
	mu      sync.Mutex
	in      *pulumix.LineLimit // writes to liveBuffer
	buf     bytes.Buffer
	dropped int // bytes dropped from the front of buf since the last flush
	last    time.Time
	flush   func(string)
}

func (l *liveOutput) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.in == nil {
		l.in = pulumix.LimitLines(liveBuffer{l}, pulumix.MaxLine)
	}
	n, err := l.in.Write(p)
	if time.Since(l.last) > 500*time.Millisecond {
		l.flushLocked()
	}
	return n, err
}

func (l *liveOutput) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.in != nil {
		_ = l.in.Flush()
	}
	l.flushLocked()
}

// liveBuffer is where a liveOutput's LineLimit writes, with l.mu held.
type liveBuffer struct{ l *liveOutput }

func (b liveBuffer) Write(p []byte) (int, error) {
	l := b.l
	l.buf.Write(p)
	if over := l.buf.Len() - maxCheckOutput; over > 0 {
		l.buf.Next(over)
		l.dropped += over
	}
	return len(p), nil
}

// flushLocked sends what is buffered up to the last whole character; a character split
// across writes waits for its remaining bytes.
func (l *liveOutput) flushLocked() {
	b := l.buf.Bytes()
	n := len(b)
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				n = i
			}
			break
		}
	}
	if n > 0 {
		s := strings.ToValidUTF8(string(b[:n]), "")
		if l.dropped > 0 {
			s = "[… " + pulumix.Size(l.dropped) + " of output dropped]\n" + s
			l.dropped = 0
		}
		l.flush(s)
		l.buf.Next(n)
	}
	l.last = time.Now()
}
