package views

import "strings"

// BrowserPattern is a schema's pattern as a form's pattern attribute takes it. Browsers compile
// the attribute with the v flag, where a literal - ( ) [ ] { } / or | inside a character class
// must be escaped ([a-z0-9-] is a syntax error there, and the browser then checks nothing); the
// escapes it adds mean the same to browsers that compile with the u flag. A pattern a browser
// cannot take at all, such as one with Go's (?i) flags, is left out: the server checks every
// value anyway.
func BrowserPattern(re string) string {
	if strings.Contains(re, "(?") {
		return ""
	}
	rs := []rune(re)
	var b strings.Builder
	literal := func(c rune) {
		if strings.ContainsRune("-()[]{}/|", c) {
			b.WriteRune('\\')
		}
		b.WriteRune(c)
	}
	in, first, atom := false, false, false
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		escaped := c == '\\' && i+1 < len(rs)
		switch {
		case !in && escaped:
			b.WriteRune(c)
			b.WriteRune(rs[i+1])
			i++
			continue
		case !in && c == '[':
			in, first, atom = true, true, false
			b.WriteRune(c)
			if i+1 < len(rs) && rs[i+1] == '^' {
				b.WriteRune('^')
				i++
			}
			continue
		case !in:
			b.WriteRune(c)
			continue
		case escaped:
			b.WriteRune(c)
			b.WriteRune(rs[i+1])
			i++
			atom = true
		case c == ']' && !first:
			in = false
			b.WriteRune(c)
		case c == '-' && atom && i+1 < len(rs) && rs[i+1] != ']':
			// A range: the character after the hyphen ends it.
			b.WriteRune(c)
			i++
			if rs[i] == '\\' && i+1 < len(rs) {
				b.WriteRune(rs[i])
				b.WriteRune(rs[i+1])
				i++
			} else {
				literal(rs[i])
			}
			atom = false
		default:
			literal(c)
			atom = true
		}
		first = false
	}
	return b.String()
}
