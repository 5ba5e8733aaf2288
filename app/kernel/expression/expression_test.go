package expression

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
)

// issue30 is the pattern a tenant wired over a 100 KB parameter: three thousand steps.
const issue30 = "[a-z]{1000}[a-z]{1000}[a-z]{1000}x"

func newEnv(t testing.TB) *cel.Env {
	t.Helper()
	env, err := NewEnv(cel.Variable("s", cel.StringType), cel.Variable("p", cel.StringType), cel.Variable("l", cel.ListType(cel.IntType)))
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func program(t testing.TB, env *cel.Env, text string, cost uint64) cel.Program {
	t.Helper()
	checked, iss := env.Compile(text)
	if iss.Err() != nil {
		t.Fatalf("%s: %v", text, iss.Err())
	}
	prg, err := Program(env, checked, cost)
	if err != nil {
		t.Fatal(err)
	}
	return prg
}

// A literal pattern that is too large, or no pattern at all, is refused when the expression is
// checked, in either spelling of matches; one of a fair size is taken.
func TestCheck_RefusesALiteralPatternTooLarge(t *testing.T) {
	env := newEnv(t)
	for _, c := range []struct{ expr, want string }{
		{`s.matches("` + issue30 + `")`, "is too large: it compiles to 3003 steps, and a pattern may take at most 1000"},
		{`matches(s, "` + issue30 + `")`, "is too large"},
		{`s.matches("` + strings.Repeat("[a-z]{1000}", 20) + `")`, "compiles to more than 10000 steps"},
		{`s.matches("(")`, `"(" is not a regular expression: missing closing )`},
		{`s.matches("^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")`, ""},
		{`s.matches(p)`, ""},
	} {
		_, iss := env.Compile(c.expr)
		switch {
		case c.want == "" && iss.Err() != nil:
			t.Errorf("%.50s: refused: %v", c.expr, iss.Err())
		case c.want != "" && (iss.Err() == nil || !strings.Contains(iss.Err().Error(), c.want)):
			t.Errorf("%.50s: %v, want a refusal saying %q", c.expr, iss.Err(), c.want)
		}
	}
}

// A pattern worked out as the expression runs is held to the same size, and a match to the
// work of its pattern's steps over its text's bytes; an ordinary pattern over a long text runs.
func TestEval_BoundsEachMatch(t *testing.T) {
	env := newEnv(t)
	big := strings.Repeat("a", 100_000)
	for _, c := range []struct {
		name, expr, s, p, want string
	}{
		{"the issue's pattern", `s.matches(p)`, big, issue30, "is too large: it compiles to 3003 steps"},
		{"too much work", `s.matches(p)`, big, "[a-z]{300}x", "against 100000 bytes is too much work"},
		{"too much work, literal", `s.matches("[a-z]{300}x")`, big, "", "too much work"},
		{"too long a text", `s.matches("a")`, strings.Repeat("a", MaxMatchText+1), "", "runs over at most 1048576"},
		{"no pattern", `s.matches(p)`, "a", "(", "not a regular expression"},
		{"an ordinary pattern", `s.matches("^[a-z]+$")`, big, "", ""},
		{"a fair pattern over a fair text", `s.matches(p)`, strings.Repeat("a", 1000), "[a-z]{300}x", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Eval(t.Context(), program(t, env, c.expr, 100_000), map[string]any{"s": c.s, "p": c.p})
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("%v, want an error saying %q", err, c.want)
			}
		})
	}
}

// Matches each within bounds still add up: their work counts toward the expression's cost.
func TestEval_MatchesCountTowardTheCost(t *testing.T) {
	env := newEnv(t)
	l := make([]int64, 100)
	prg := program(t, env, `l.all(i, !s.matches("[a-z]{50}x"))`, 100_000)
	_, err := Eval(t.Context(), prg, map[string]any{"s": strings.Repeat("a", 20_000), "l": l})
	if err == nil || !strings.Contains(err.Error(), "was stopped at its cost limit") {
		t.Fatalf("a hundred matches of 1M steps each: %v", err)
	}
}

// An evaluation that outlives its time is stopped, and says so.
func TestEval_StopsAnExpressionAtItsDeadline(t *testing.T) {
	env := newEnv(t)
	l := make([]int64, 1000)
	prg := program(t, env, `l.all(a, l.all(b, l.all(c, a + b + c >= 0)))`, math.MaxUint64)
	_, err := Eval(t.Context(), prg, map[string]any{"l": l})
	if err == nil || !strings.Contains(err.Error(), "took longer than 1s and was stopped") {
		t.Fatalf("a billion steps: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := Eval(ctx, prg, map[string]any{"l": l}); err == nil || !strings.Contains(err.Error(), "it was stopped: context canceled") {
		t.Fatalf("an evaluation whose caller has gone: %v", err)
	}
}

// BenchmarkMatch is the dearest match taken (a pattern of 303 steps over 33,000 bytes: the
// most work a match may do) and, for comparison, an ordinary pattern over 100 KB.
func BenchmarkMatch(b *testing.B) {
	env := newEnv(b)
	for _, c := range []struct{ name, p, s string }{
		{"most work", "[a-z]{300}x", strings.Repeat("a", MaxMatchWork/303-1)},
		{"ordinary", "^[a-z]+$", strings.Repeat("a", 100_000)},
	} {
		prg := program(b, env, `s.matches(p)`, math.MaxUint64)
		vars := map[string]any{"s": c.s, "p": c.p}
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := Eval(b.Context(), prg, vars); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
