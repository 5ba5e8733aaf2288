// Package expression holds what every CEL expression a tenant writes is held to, whether it
// wires a stack's slot, filters an event or checks a plan: the bounds on its regular
// expressions, its cost, and a deadline on each evaluation.
//
// CEL stops an evaluation that costs too much or outlives its context only between steps, and
// a regular expression's match is one step however long it runs: RE2 is linear in the text,
// but the factor is the size of the pattern's compiled program, and `[a-z]{1000}` alone is a
// thousand instructions. So a pattern is bounded in size (where it is a literal, when the
// expression is saved; otherwise when it runs), and each match in the product of that size and
// the length of the text it runs over; that product is also what a match costs.
//
// CEL's own cel.RegexProgramSizeLimit is not used: in this version it measures a pattern by
// compiling it without simplifying it first, which panics on any counted repetition ({3}).
package expression

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"sync"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/env"
	"github.com/google/cel-go/common/overloads"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"
)

const (
	// MaxPatternSteps is the largest program a regular expression may compile to, in RE2's
	// instructions: about one per character or class matched, so a repetition multiplies
	// (`[a-z]{300}` is 300). RE2 itself takes repetitions up to 1000, and nested ones multiply.
	MaxPatternSteps = 1000
	// MaxPatternLength is the longest pattern taken, in bytes, before it is even parsed.
	MaxPatternLength = 4096
	// MaxMatchText is the longest string a pattern is matched against, in bytes.
	MaxMatchText = 1 << 20
	// MaxMatchWork bounds one match: its pattern's steps times the bytes of its text. A match
	// runs at worst some 10 ns per unit here, so this holds it to about a tenth of a second.
	MaxMatchWork = 10_000_000
	// workPerCost is the match work that counts as one unit of CEL's cost, so that an
	// expression's cost limit bounds its matches together as it bounds its other steps.
	workPerCost = 100
	// Time bounds one evaluation, whatever its cost.
	Time = time.Second
)

// NewEnv makes an environment for tenants' expressions with the declarations in opts: CEL's
// standard library, its matches bounded as above, and literal patterns checked when an
// expression is checked.
func NewEnv(opts ...cel.EnvOption) (*cel.Env, error) {
	env, err := base()
	if err != nil {
		return nil, err
	}
	return env.Extend(opts...)
}

// base is the environment every other extends, made once: it holds no state of its own.
var base = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewCustomEnv(
		// CEL's own matches runs unbounded: it is left out, and declared again with the same
		// overloads and a bounded implementation.
		cel.StdLib(cel.StdLibSubset(env.NewLibrarySubset().AddExcludedFunctions(env.NewFunction(overloads.Matches)))),
		cel.Function(overloads.Matches,
			cel.Overload(overloads.Matches, []*cel.Type{cel.StringType, cel.StringType}, cel.BoolType),
			cel.MemberOverload(overloads.MatchesString, []*cel.Type{cel.StringType, cel.StringType}, cel.BoolType),
			cel.SingletonBinaryBinding(match)),
		cel.ASTValidators(literalPatterns{}),
	)
})

// Program plans a checked expression of env, bounded to cost units of CEL's cost (matches
// counted by their work) and interruptible by its context between steps.
func Program(env *cel.Env, checked *cel.Ast, cost uint64) (cel.Program, error) {
	return env.Program(checked,
		cel.CostLimit(cost),
		cel.InterruptCheckFrequency(100),
		cel.CostTrackerOptions(
			interpreter.OverloadCostTracker(overloads.Matches, matchCost),
			interpreter.OverloadCostTracker(overloads.MatchesString, matchCost)))
}

// Eval evaluates prg over vars within Time. An evaluation stopped for its time or its cost
// says so in words; ctx ending first stops it too.
func Eval(ctx context.Context, prg cel.Program, vars any) (ref.Val, error) {
	evalCtx, cancel := context.WithTimeout(ctx, Time)
	defer cancel()
	v, _, err := prg.ContextEval(evalCtx, vars)
	if err == nil {
		return v, nil
	}
	var stopped interpreter.EvalCancelledError
	switch {
	case ctx.Err() != nil:
		return nil, fmt.Errorf("it was stopped: %w", context.Cause(ctx))
	case errors.Is(evalCtx.Err(), context.DeadlineExceeded):
		return nil, fmt.Errorf("it took longer than %s and was stopped", Time)
	case errors.As(err, &stopped) && stopped.Cause == interpreter.CostLimitExceeded:
		return nil, errors.New("it does more work than an expression may, and was stopped at its cost limit")
	}
	return nil, err
}

// Pattern compiles a regular expression a tenant gave, refusing one whose program is larger
// than MaxPatternSteps; it returns the program's size in steps too.
func Pattern(pattern string) (*regexp.Regexp, int, error) {
	if len(pattern) > MaxPatternLength {
		return nil, 0, fmt.Errorf("the regular expression %s is longer than %d characters", quote(pattern), MaxPatternLength)
	}
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil, 0, fmt.Errorf("%s is not a regular expression: %s", quote(pattern), syntaxWords(err))
	}
	// Weigh the parsed tree before compiling it: a small pattern can describe a program of
	// millions of instructions, which compiling would build. The weight is an upper bound, so
	// only one far over the limit is refused by it; the compiled program decides the rest.
	if weight(re, 10*MaxPatternSteps) >= 10*MaxPatternSteps {
		return nil, 0, tooLarge(pattern, fmt.Sprintf("more than %d", 10*MaxPatternSteps))
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return nil, 0, fmt.Errorf("%s is not a regular expression: %s", quote(pattern), syntaxWords(err))
	}
	if len(prog.Inst) > MaxPatternSteps {
		return nil, 0, tooLarge(pattern, fmt.Sprint(len(prog.Inst)))
	}
	compiled, err := regexp.Compile(pattern)
	if err != nil {
		return nil, 0, fmt.Errorf("%s is not a regular expression: %s", quote(pattern), syntaxWords(err))
	}
	return compiled, len(prog.Inst), nil
}

func tooLarge(pattern, steps string) error {
	return fmt.Errorf("the regular expression %s is too large: it compiles to %s steps, and a pattern may take at most %d (a repetition counts each time: [a-z]{300} is 300 steps)",
		quote(pattern), steps, MaxPatternSteps)
}

// weight is an upper bound of the steps re compiles to, as RE2's parser reckons it, counted no
// further than limit.
func weight(re *syntax.Regexp, limit int) int {
	sat := func(n int) int { return min(n, limit) }
	switch re.Op {
	case syntax.OpLiteral:
		return sat(max(1, len(re.Rune)))
	case syntax.OpCapture, syntax.OpStar:
		return sat(2 + weight(re.Sub[0], limit))
	case syntax.OpPlus, syntax.OpQuest:
		return sat(1 + weight(re.Sub[0], limit))
	case syntax.OpConcat, syntax.OpAlternate:
		n := len(re.Sub) - 1
		for _, sub := range re.Sub {
			if n = sat(n + weight(sub, limit)); n == limit {
				break
			}
		}
		return max(1, n)
	case syntax.OpRepeat:
		sub := weight(re.Sub[0], limit)
		if re.Max == -1 {
			if re.Min == 0 {
				return sat(2 + sub)
			}
			return sat(1 + re.Min*sub)
		}
		return sat(re.Max*sub + re.Max - re.Min)
	}
	return 1
}

// syntaxWords is the parser's reason without its own prefix.
func syntaxWords(err error) string {
	var se *syntax.Error
	if errors.As(err, &se) {
		return fmt.Sprintf("%s in %s", se.Code, quote(se.Expr))
	}
	return err.Error()
}

// quote shows a pattern in a message, cut short when long.
func quote(s string) string {
	const most = 60
	if len(s) > most {
		return fmt.Sprintf("%q…", s[:most])
	}
	return fmt.Sprintf("%q", s)
}

// match is matches, bounded: the pattern in size, the text in length, the two together in work.
func match(text, pattern ref.Val) ref.Val {
	s, ok := text.(types.String)
	p, ok2 := pattern.(types.String)
	if !ok || !ok2 {
		return types.MaybeNoSuchOverloadErr(text)
	}
	re, steps, err := Pattern(string(p))
	if err != nil {
		return types.WrapErr(err)
	}
	if err := fits(len(s), steps, string(p)); err != nil {
		return types.WrapErr(err)
	}
	return types.Bool(re.MatchString(string(s)))
}

// fits refuses a match of a pattern of steps over n bytes that would do too much work.
func fits(n, steps int, pattern string) error {
	if n > MaxMatchText {
		return fmt.Errorf("%s is matched against %d bytes, and a regular expression runs over at most %d", quote(pattern), n, MaxMatchText)
	}
	if work := steps * (n + 1); work > MaxMatchWork {
		return fmt.Errorf("matching %s (%d steps) against %d bytes is too much work: steps times bytes may be at most %d; match a shorter string or a simpler pattern",
			quote(pattern), steps, n, MaxMatchWork)
	}
	return nil
}

// matchCost is what a match costs in CEL's units: its work, scaled. A refused match costs what
// refusing it did, nothing to speak of.
func matchCost(args []ref.Val, result ref.Val) *uint64 {
	var cost uint64 = 1
	if len(args) == 2 && !types.IsError(result) {
		s, _ := args[0].(types.String)
		p, _ := args[1].(types.String)
		if _, steps, err := Pattern(string(p)); err == nil {
			cost += uint64(steps*(len(s)+1)) / workPerCost
		}
	}
	return &cost
}

// literalPatterns refuses, when an expression is checked, a matches whose pattern is a literal
// that is no regular expression or too large a one; patterns worked out as the expression runs
// are refused as they run.
type literalPatterns struct{}

func (literalPatterns) Name() string { return "nimbus.literal_patterns" }

func (literalPatterns) Validate(_ *cel.Env, _ cel.ValidatorConfig, a *ast.AST, iss *cel.Issues) {
	for _, call := range ast.MatchDescendants(ast.NavigateAST(a), ast.FunctionMatcher(overloads.Matches)) {
		c := call.AsCall()
		at := 1
		if c.IsMemberFunction() {
			at = 0
		}
		if len(c.Args()) <= at || c.Args()[at].Kind() != ast.LiteralKind {
			continue
		}
		arg := c.Args()[at]
		p, ok := arg.AsLiteral().(types.String)
		if !ok {
			continue
		}
		if _, _, err := Pattern(string(p)); err != nil {
			iss.ReportErrorAtID(arg.ID(), "%s", err)
		}
	}
}
