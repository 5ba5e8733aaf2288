package pulumix

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestLimitLines_CutsLongLinesWithANote(t *testing.T) {
	long := "12345678" + strings.Repeat("x", 1258291-8) // 1.2 MiB
	cases := []struct {
		name   string
		writes []string
		flush  bool
		want   string
	}{
		{"short lines pass", []string{"a\nbb\n", "ccc"}, true, "a\nbb\nccc"},
		{"a line at the cap passes", []string{"12345678\n"}, false, "12345678\n"},
		{"a long line is cut", []string{"123456789abc\nnext\n"}, false, "12345678 … [line truncated: 12 B]\nnext\n"},
		{"across writes", []string{"1234", "5678", "9a", "bc\nok\n"}, false, "12345678 … [line truncated: 12 B]\nok\n"},
		{"an unfinished cut line is noted at the flush", []string{"123456789"}, true, "12345678 … [line truncated: 9 B]"},
		{"never inside a character", []string{"1234567é9\n"}, false, "1234567 … [line truncated: 10 B]\n"},
		{"sizes read as people read them", []string{long + "\n"}, false, "12345678 … [line truncated: 1.2 MiB]\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			l := LimitLines(&out, 8)
			for _, w := range c.writes {
				if n, err := l.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if c.flush {
				if err := l.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			if out.String() != c.want {
				t.Fatalf("got %q, want %q", out.String(), c.want)
			}
		})
	}
}

func TestTail_KeepsTheEndAndSaysWhatItDropped(t *testing.T) {
	tl := &tail{max: 64}
	for range 100 {
		tl.Write([]byte("0123456789\n"))
	}
	got := tl.String()
	if !strings.HasPrefix(got, "[… 1.0 KiB of earlier output dropped]\n") || !strings.HasSuffix(got, "0123456789\n") {
		t.Fatalf("tail = %q", got)
	}
	if len(got)-len("[… 1.0 KiB of earlier output dropped]\n") != 64 {
		t.Fatalf("tail kept %d bytes, want 64", len(got))
	}

	// One endless line: the tail holds only its head and a note, however much comes.
	tl = &tail{max: 1 << 20}
	chunk := bytes.Repeat([]byte("y"), 64<<10)
	for range 64 { // 4 MiB
		tl.Write(chunk)
	}
	if got := tl.String(); len(got) > MaxLine+100 || !strings.HasSuffix(got, " … [line truncated: 4.0 MiB]") {
		t.Fatalf("an endless line kept %d bytes, ending %q", len(got), got[max(0, len(got)-60):])
	}
}

func TestCapture_BoundsStreamedOutputOnly(t *testing.T) {
	big := bytes.Repeat([]byte("z\n"), maxKept) // 2 MiB
	streamed := capture(true)
	streamed.Write(big)
	if n := len(streamed.String()); n > maxKept+100 || !strings.HasPrefix(streamed.String(), "[… 1.0 MiB of earlier output dropped]") {
		t.Fatalf("streamed output kept %d bytes: %.60q", n, streamed.String())
	}
	// A command's result, such as a stack export, is its stdout: it stays whole.
	result := capture(false)
	result.Write(big)
	if len(result.String()) != len(big) {
		t.Fatalf("a result kept %d of %d bytes", len(result.String()), len(big))
	}
}

func TestCutTail_KeepsTheEndWithANote(t *testing.T) {
	if got := CutTail("short", 10); got != "short" {
		t.Fatalf("short text changed: %q", got)
	}
	got := CutTail(strings.Repeat("a", 2000)+"ééé end", 9)
	if got != "[… 2.0 KiB of earlier output dropped]\néé end" || !utf8.ValidString(got) {
		t.Fatalf("CutTail = %q", got)
	}
	if got := CutLine(strings.Repeat("b", 20), 4); got != "bbbb … [line truncated: 20 B]" {
		t.Fatalf("CutLine = %q", got)
	}
}
