package pulumix

import (
	"bytes"
	"io"
	"path/filepath"
	"slices"
	"strings"
)

// What the engine says reaches tenants: its progress, its errors, a program's outputs
// (${pulumi.cwd} is the stack's directory). None of it may name a directory of the server, which
// would tell where Nimbus keeps its data and its tools. Each is said relative to what it is:
// the stack's working directory is ".", the others are named by what they hold. Nor may it
// hold a credential the engine was given, should a provider echo one.

// redactor is the replacer of the server's directories, and of the values the stack hides, in
// what the engine on ws says.
func (r *Runner) redactor(ws workspace) *strings.Replacer {
	type dir struct{ path, as string }
	dirs := []dir{{ws.dir, "."}, {ws.tmp, "<tmp>"}, {ws.state, "<state>"}, {r.data, "<data-dir>"}}
	for _, c := range r.clouds {
		dirs = append(dirs, dir{c, "<cloud>"})
	}
	for _, p := range toolchainDirs(r.bin) {
		dirs = append(dirs, dir{p, "<toolchain>"})
	}
	var pairs []string
	for _, h := range ws.hidden {
		// A value so short would be found in ordinary words; Nimbus hides tokens' secrets.
		if len(h) >= 8 {
			pairs = append(pairs, h, "[secret]")
		}
	}
	seen := map[string]bool{}
	// Longest first: where two match at one place, the first pair given wins.
	slices.SortStableFunc(dirs, func(a, b dir) int { return len(b.path) - len(a.path) })
	for _, d := range dirs {
		if d.path == "" || d.path == "/" || seen[d.path] || !filepath.IsAbs(d.path) {
			continue
		}
		seen[d.path] = true
		pairs = append(pairs, d.path, d.as)
	}
	return strings.NewReplacer(pairs...)
}

// redacting passes text on with the server's directories replaced, a line at a time so that
// no path is split between two writes. A line longer than MaxLine goes on in pieces.
type redacting struct {
	w   io.Writer
	rep *strings.Replacer
	buf []byte
}

func (d *redacting) Write(p []byte) (int, error) {
	d.buf = append(d.buf, p...)
	for {
		i := bytes.IndexByte(d.buf, '\n')
		if i < 0 {
			break
		}
		if _, err := io.WriteString(d.w, d.rep.Replace(string(d.buf[:i+1]))); err != nil {
			return 0, err
		}
		d.buf = d.buf[i+1:]
	}
	if len(d.buf) > MaxLine {
		if err := d.Flush(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Flush passes on what waits for the end of its line.
func (d *redacting) Flush() error {
	if len(d.buf) == 0 {
		return nil
	}
	_, err := io.WriteString(d.w, d.rep.Replace(string(d.buf)))
	d.buf = d.buf[:0]
	return err
}

// redactValue replaces the server's directories in every string of an output value.
func redactValue(v any, rep *strings.Replacer) any {
	switch x := v.(type) {
	case string:
		return rep.Replace(x)
	case map[string]any:
		for k, e := range x {
			x[k] = redactValue(e, rep)
		}
	case []any:
		for i, e := range x {
			x[i] = redactValue(e, rep)
		}
	}
	return v
}
