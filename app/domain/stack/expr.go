package stack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"google.golang.org/protobuf/types/known/structpb"

	"nimbus/app/domain/component"
	"nimbus/app/kernel/expression"
)

// Expressions are CEL over the values a stack knows, each declared as a typed variable under
// its dotted name: params.<name> (the stack's parameters), slots.<slot>.outputs.<name> (an
// upstream slot's outputs) and, in a day-2 operation, inputs.<name> (the operation's own). A
// name not declared is refused when the expression is saved, and so is a result of the wrong
// type. Tenants write them, so each is bounded in length, in the work it may do and in its
// time, and so are its regular expressions (see package expression).

// MaxExpr is the longest expression taken, in bytes.
const MaxExpr = 2000

// evalCost bounds the work of one evaluation, in CEL's cost units.
const evalCost = 100_000

// Scope is what an expression may read: each variable's dotted name and type.
type Scope map[string]*cel.Type

// AddSchema declares each property of a schema under prefix (such as "params").
func (s Scope) AddSchema(prefix string, schema *component.Schema) {
	if schema == nil {
		return
	}
	for name, p := range schema.Properties {
		s[prefix+"."+name] = celType(p)
	}
}

// celType is the CEL type of values of a schema property.
func celType(p *component.Property) *cel.Type {
	switch p.Type {
	case "string":
		return cel.StringType
	case "integer":
		return cel.IntType
	case "number":
		return cel.DoubleType
	case "boolean":
		return cel.BoolType
	case "array":
		if p.Items != nil {
			return cel.ListType(celType(p.Items))
		}
		return cel.ListType(cel.DynType)
	}
	if p.IsMap() {
		return cel.MapType(cel.StringType, cel.StringType)
	}
	return cel.MapType(cel.StringType, cel.DynType)
}

// Expr is an expression checked against a scope, ready to evaluate.
type Expr struct {
	Text    string
	program cel.Program
	out     *cel.Type
	scope   Scope
}

// Compile checks text against scope and, when want is not nil, that its result fits want (an
// integer fits a number). The error says what is wrong in words.
func Compile(text string, scope Scope, want *component.Property) (*Expr, error) {
	if strings.TrimSpace(text) == "" {
		return nil, errors.New("the expression is empty")
	}
	if len(text) > MaxExpr {
		return nil, fmt.Errorf("the expression is longer than %d characters", MaxExpr)
	}
	env, err := newEnv(scope)
	if err != nil {
		return nil, err
	}
	parsed, issues := env.Parse(text)
	if issues != nil && issues.Err() != nil {
		return nil, errors.New(issueText(issues))
	}
	if unknown := unknownNames(parsed, scope); len(unknown) > 0 {
		return nil, fmt.Errorf("%s not known here", strings.Join(unknown, ", "))
	}
	checked, issues := env.Check(parsed)
	if issues != nil && issues.Err() != nil {
		return nil, errors.New(issueText(issues))
	}
	out := checked.OutputType()
	if want != nil && !fits(celType(want), out) {
		return nil, fmt.Errorf("the expression gives %s, and this input takes %s", typeWords(out), typeWords(celType(want)))
	}
	prg, err := expression.Program(env, checked, evalCost)
	if err != nil {
		return nil, err
	}
	return &Expr{Text: text, program: prg, out: out, scope: scope}, nil
}

func newEnv(scope Scope) (*cel.Env, error) {
	opts := make([]cel.EnvOption, 0, len(scope))
	for _, name := range slices.Sorted(maps.Keys(scope)) {
		opts = append(opts, cel.Variable(name, scope[name]))
	}
	return expression.NewEnv(opts...)
}

// fits reports whether a value of type got may be given where want is asked for.
func fits(want, got *cel.Type) bool {
	if got.Kind() == types.DynKind || want.IsAssignableType(got) {
		return true
	}
	return want.Kind() == types.DoubleKind && got.Kind() == types.IntKind
}

func typeWords(t *cel.Type) string {
	switch t.Kind() {
	case types.StringKind:
		return "a string"
	case types.IntKind:
		return "an integer"
	case types.DoubleKind:
		return "a number"
	case types.BoolKind:
		return "true or false"
	case types.ListKind:
		return "a list"
	case types.MapKind:
		if ps := t.Parameters(); len(ps) == 2 && ps[1].Kind() == types.StringKind {
			return "a map of strings"
		}
		return "an object"
	}
	return t.String()
}

// issueText turns CEL's report into one line per problem, without its source excerpt.
func issueText(issues *cel.Issues) string {
	var out []string
	for _, e := range issues.Errors() {
		msg := e.Message
		if name, ok := strings.CutPrefix(msg, "undeclared reference to '"); ok {
			name, _, _ = strings.Cut(name, "'")
			msg = name + " is not known here"
		}
		out = append(out, msg)
	}
	return strings.Join(out, "; ")
}

// Eval evaluates the expression over values, keyed by the scope's dotted names, and returns the
// value as JSON gives it back (string, float64, bool, []any, map[string]any): what a
// deployment's parameters hold. An error names the expression.
func (e *Expr) Eval(ctx context.Context, values map[string]any) (any, error) {
	act := make(map[string]any, len(values))
	for k, v := range values {
		if t, ok := e.scope[k]; ok {
			act[k] = celValue(v, t)
		}
	}
	v, err := expression.Eval(ctx, e.program, act)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e.Text, err)
	}
	out, err := native(v)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e.Text, err)
	}
	var plain any
	return plain, json.Unmarshal(raw, &plain)
}

// celValue gives a value read back from JSON the type the scope declares for it: JSON's
// numbers are all floats, and an integer input must be an int to CEL. Within what is declared
// only as dyn (an object's members), a whole number is taken for an integer.
func celValue(v any, t *cel.Type) any {
	switch x := v.(type) {
	case float64:
		switch t.Kind() {
		case types.IntKind:
			return int64(x)
		case types.DoubleKind:
			return x
		}
		if x == float64(int64(x)) {
			return int64(x)
		}
	case []any:
		elem := cel.DynType
		if t.Kind() == types.ListKind && len(t.Parameters()) == 1 {
			elem = t.Parameters()[0]
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = celValue(e, elem)
		}
		return out
	case map[string]any:
		elem := cel.DynType
		if t.Kind() == types.MapKind && len(t.Parameters()) == 2 {
			elem = t.Parameters()[1]
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = celValue(e, elem)
		}
		return out
	}
	return v
}

// native turns a result into a plain value; lists and maps go through JSON's value type, so
// their elements are plain too.
func native(v ref.Val) (any, error) {
	switch v.Type() {
	case types.ListType, types.MapType:
		j, err := v.ConvertToNative(reflect.TypeFor[*structpb.Value]())
		if err != nil {
			return nil, err
		}
		return j.(*structpb.Value).AsInterface(), nil
	}
	return v.Value(), nil
}

// unknownNames lists the dotted names an expression reads that the scope does not declare,
// whole (params.memory), where CEL's checker would name only their root.
func unknownNames(parsed *cel.Ast, scope Scope) []string {
	var out []string
	root := ast.NavigateAST(parsed.NativeRep())
	for _, e := range ast.MatchDescendants(root, ast.AllMatcher()) {
		if e.Kind() != ast.IdentKind && e.Kind() != ast.SelectKind {
			continue
		}
		if p, ok := e.Parent(); ok && p.Kind() == ast.SelectKind {
			continue // part of a longer name
		}
		name, ok := dotted(e)
		if !ok || declared(scope, name) || slices.Contains(out, name) {
			continue
		}
		out = append(out, name)
	}
	return out
}

// dotted spells a chain of selections from an identifier (a.b.c); false for anything else,
// such as a selection from a call's result or a comprehension's own variable.
func dotted(e ast.NavigableExpr) (string, bool) {
	switch e.Kind() {
	case ast.IdentKind:
		name := e.AsIdent()
		return name, name == "params" || name == "slots" || name == "inputs"
	case ast.SelectKind:
		s := e.AsSelect()
		base, ok := dotted(ast.NavigateExpr(nil, s.Operand()))
		return base + "." + s.FieldName(), ok
	}
	return "", false
}

// declared reports whether name is a variable of the scope or a selection within one.
func declared(scope Scope, name string) bool {
	for k := range scope {
		if name == k || strings.HasPrefix(name, k+".") {
			return true
		}
	}
	return false
}

// ParamsIn returns the stack parameters an expression reads (params.<name>), each once, in
// the order met; nil when it does not parse.
func ParamsIn(text string) []string { return selectedFrom(text, "params") }

// InputsIn returns the day-2 operation's inputs an expression reads (inputs.<name>), each
// once, in the order met; nil when it does not parse.
func InputsIn(text string) []string { return selectedFrom(text, "inputs") }

// SlotsIn returns the slots an expression reads (slots.<name>), each once, in the order met;
// nil when it does not parse.
func SlotsIn(text string) []string { return selectedFrom(text, "slots") }

// selectedFrom returns the fields an expression selects from the variable root (root.<name>).
func selectedFrom(text, root string) []string {
	env, err := cel.NewEnv()
	if err != nil {
		return nil
	}
	parsed, issues := env.Parse(text)
	if issues != nil && issues.Err() != nil {
		return nil
	}
	var out []string
	top := ast.NavigateAST(parsed.NativeRep())
	for _, sel := range ast.MatchDescendants(top, ast.KindMatcher(ast.SelectKind)) {
		s := sel.AsSelect()
		if s.Operand().Kind() == ast.IdentKind && s.Operand().AsIdent() == root && !slices.Contains(out, s.FieldName()) {
			out = append(out, s.FieldName())
		}
	}
	return out
}
