package stack

import (
	"regexp"
	"slices"
	"unicode"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
)

// The editor shows a slot's or a parameter's name as a field the author may change; what
// names it elsewhere in the draft follows the new name, so a rename is one edit and not a
// hunt through wirings, waits, actions and expressions.

// celIdent is what an expression can say after a dot: a name spelled otherwise (empty, or
// with a dash) is not written into expressions, which keep the old name for the check to flag.
var celIdent = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// renameSlots rewrites every reference to the slots renamed (each old name to its new one, all
// at once, so two slots may swap names): output wirings, waits, slot actions, and
// slots.<name> in every expression.
func (d *Definition) renameSlots(names map[string]string) {
	if len(names) == 0 {
		return
	}
	to := func(n string) string {
		if now, ok := names[n]; ok && now != "" {
			return now
		}
		return n
	}
	for i := range d.Slots {
		s := &d.Slots[i]
		for input, w := range s.Inputs {
			switch w.Kind {
			case Output:
				w.Slot = to(w.Slot)
			case Expression:
				w.Expr = renameIn(w.Expr, "slots", names)
			}
			s.Inputs[input] = w
		}
		for j, dep := range s.DependsOn {
			s.DependsOn[j] = to(dep)
		}
	}
	d.eachAction(func(a *Action) {
		a.Slot = to(a.Slot)
		for input, e := range a.Inputs {
			a.Inputs[input] = renameIn(e, "slots", names)
		}
	})
}

// renameParams rewrites every reference to the stack parameters renamed: parameter wirings
// and params.<name> in every expression.
func (d *Definition) renameParams(names map[string]string) {
	if len(names) == 0 {
		return
	}
	for i := range d.Slots {
		s := &d.Slots[i]
		for input, w := range s.Inputs {
			switch w.Kind {
			case Param:
				if now, ok := names[w.Param]; ok && now != "" {
					w.Param = now
				}
			case Expression:
				w.Expr = renameIn(w.Expr, "params", names)
			}
			s.Inputs[input] = w
		}
	}
	d.eachAction(func(a *Action) {
		for input, e := range a.Inputs {
			a.Inputs[input] = renameIn(e, "params", names)
		}
	})
}

// renameInputs rewrites inputs.<name> in the operation's expressions for the inputs renamed.
func (o *Operation) renameInputs(names map[string]string) {
	if len(names) == 0 {
		return
	}
	for k := range o.Actions {
		for input, e := range o.Actions[k].Inputs {
			o.Actions[k].Inputs[input] = renameIn(e, "inputs", names)
		}
	}
}

// eachAction calls f with every slot action: the transitions' and the operations'.
func (d *Definition) eachAction(f func(*Action)) {
	for i := range d.Machine.Transitions {
		for k := range d.Machine.Transitions[i].Action {
			f(&d.Machine.Transitions[i].Action[k])
		}
	}
	for i := range d.Operations {
		for k := range d.Operations[i].Actions {
			f(&d.Operations[i].Actions[k])
		}
	}
}

// renameIn rewrites, in an expression, each selection root.<old> as root.<new>. It works on
// the parsed expression, so that only a selection from the variable root changes: never text
// in a string literal, a longer name sharing the old one's start, or a field of the same name
// selected from something else. An expression that does not parse is left as written: the
// check says why, and then that the old name is unknown.
func renameIn(text, root string, names map[string]string) string {
	env, err := cel.NewEnv()
	if err != nil {
		return text
	}
	parsed, issues := env.Parse(text)
	if issues != nil && issues.Err() != nil {
		return text
	}
	src := []rune(text) // CEL's offsets count code points
	info := parsed.NativeRep().SourceInfo()
	type edit struct {
		at, end int
		to      string
	}
	var edits []edit
	top := ast.NavigateAST(parsed.NativeRep())
	for _, sel := range ast.MatchDescendants(top, ast.KindMatcher(ast.SelectKind)) {
		s := sel.AsSelect()
		operand := s.Operand()
		if operand.Kind() != ast.IdentKind || operand.AsIdent() != root {
			continue
		}
		to, ok := names[s.FieldName()]
		if !ok || to == s.FieldName() || !celIdent.MatchString(to) {
			continue
		}
		// The root's offset is where its name starts, and the field follows its dot. (The
		// selection's own offset will not do: within has() it is the macro's.)
		r, ok := info.GetOffsetRange(operand.ID())
		if !ok {
			continue
		}
		at, found := fieldAfter(src, int(r.Start), root, s.FieldName())
		if found && !slices.ContainsFunc(edits, func(e edit) bool { return e.at == at }) {
			edits = append(edits, edit{at: at, end: at + len([]rune(s.FieldName())), to: to})
		}
	}
	slices.SortFunc(edits, func(a, b edit) int { return b.at - a.at })
	for _, e := range edits {
		src = slices.Concat(src[:e.at], []rune(e.to), src[e.end:])
	}
	return string(src)
}

// fieldAfter finds, in src, the field selected from the identifier root written at start:
// past root, a dot and the blanks and comments CEL allows around it. It reports false when
// the text there is not root.field, which then is left alone.
func fieldAfter(src []rune, start int, root, field string) (int, bool) {
	i, ok := word(src, start, root)
	if !ok {
		return 0, false
	}
	i = blanks(src, i)
	if i >= len(src) || src[i] != '.' {
		return 0, false
	}
	at := blanks(src, i+1)
	if _, ok := word(src, at, field); !ok {
		return 0, false
	}
	return at, true
}

// word reports whether the identifier w is written whole at src[i:], and where it ends.
func word(src []rune, i int, w string) (int, bool) {
	r := []rune(w)
	end := i + len(r)
	if i < 0 || end > len(src) || string(src[i:end]) != w {
		return 0, false
	}
	if end < len(src) && (src[end] == '_' || unicode.IsLetter(src[end]) || unicode.IsDigit(src[end])) {
		return 0, false
	}
	return end, true
}

// blanks skips white space and // comments from i.
func blanks(src []rune, i int) int {
	for i < len(src) {
		switch {
		case unicode.IsSpace(src[i]):
			i++
		case src[i] == '/' && i+1 < len(src) && src[i+1] == '/':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		default:
			return i
		}
	}
	return i
}
