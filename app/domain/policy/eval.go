package policy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"

	"nimbus/app/kernel/expression"
)

// A policy's expression is CEL over one planned resource at a time, with the whole plan and
// the deployment it is for beside it:
//
//	resource    {type, name, urn, op, inputs}: the resource being checked
//	plan        the list of every planned resource, each shaped like resource
//	declared    for a slot of a stack instance, the list of what the instance's other slots
//	            declare, {type, name, slot}, since each slot plans its own when it deploys;
//	            empty elsewhere
//	deployment  {name, component, tenant, environment, namespace, system, slot}: namespace is
//	            the tenant's on the zone's cluster ("" when it has none); system is true for
//	            the zone's own deployments, such as its tenant factory's; slot is the stack
//	            instance slot the deployment holds ("" when none)
//
// It is true when the resource complies. type is the Pulumi type token
// (kubernetes:networking.k8s.io/v1:Ingress), name the program's name for it, op what the plan
// does to it (create, update, replace, same, read) and inputs what it will be given, secrets
// as "[secret]". Each evaluation is bounded in cost and time, and its regular expressions in
// size and work (see package expression): a plan is written by tenants.

// MaxExpr is the longest expression taken, in bytes.
const MaxExpr = 4000

// evalCost bounds the work of one evaluation, in CEL's cost units: enough for a few passes
// over a plan of a few hundred resources.
const evalCost = 1_000_000

// checkTime bounds a whole plan's check: many policies, each cut off by its cost, over a plan
// of hundreds of resources would otherwise hold the operation for minutes. What is left when
// it is spent fails, so a mandatory policy still refuses what it did not see.
const checkTime = 30 * time.Second

// Resource is one resource of a preview's plan, as policies see it.
type Resource struct {
	Type   string         `json:"type"`
	Name   string         `json:"name"`
	URN    string         `json:"urn"`
	Op     string         `json:"op"`
	Inputs map[string]any `json:"inputs"`
}

// Checked says whether a resource answers to policies: the stack itself and the providers
// are the engine's own, and what the plan deletes is going.
func (r Resource) Checked() bool {
	return r.Op != "delete" && r.Type != "pulumi:pulumi:Stack" && !strings.HasPrefix(r.Type, "pulumi:providers:")
}

// program is a policy's expression, compiled and checked.
type program struct {
	prg cel.Program
}

var env = mustEnv()

func mustEnv() *cel.Env {
	e, err := expression.NewEnv(
		cel.Variable("resource", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("plan", cel.ListType(cel.MapType(cel.StringType, cel.DynType))),
		cel.Variable("declared", cel.ListType(cel.MapType(cel.StringType, cel.StringType))),
		cel.Variable("deployment", cel.MapType(cel.StringType, cel.DynType)),
	)
	if err != nil {
		panic(err) // the declarations above are fixed: a failure is a programming error
	}
	return e
}

// compile parses and type-checks an expression; the error is CEL's account of what is wrong,
// in words.
func compile(text string) (*program, error) {
	if strings.TrimSpace(text) == "" {
		return nil, errors.New("the expression is empty")
	}
	if len(text) > MaxExpr {
		return nil, fmt.Errorf("the expression is longer than %d characters", MaxExpr)
	}
	checked, issues := env.Compile(text)
	if issues != nil && issues.Err() != nil {
		return nil, errors.New(issueText(issues))
	}
	if out := checked.OutputType(); out.Kind() != types.BoolKind && out.Kind() != types.DynKind {
		return nil, fmt.Errorf("the expression gives %s: it must give true (complies) or false", out)
	}
	prg, err := expression.Program(env, checked, evalCost)
	if err != nil {
		return nil, err
	}
	return &program{prg: prg}, nil
}

// issueText turns CEL's report into one line per problem, with where it is, without the
// source excerpt.
func issueText(issues *cel.Issues) string {
	var out []string
	for _, e := range issues.Errors() {
		msg := e.Message
		if name, ok := strings.CutPrefix(msg, "undeclared reference to '"); ok {
			name, _, _ = strings.Cut(name, "'")
			msg = name + " is not known here: an expression reads resource, plan, declared and deployment"
		}
		if e.Location != nil && e.Location.Line() > 0 {
			msg = fmt.Sprintf("line %d, column %d: %s", e.Location.Line(), e.Location.Column()+1, msg)
		}
		out = append(out, msg)
	}
	return strings.Join(out, "; ")
}

// complies evaluates the expression for one resource of the plan: true, or why not. An
// expression that fails or gives something else than true or false does not comply, with the
// reason as detail.
func (p *program) complies(ctx context.Context, resource map[string]any, plan, declared []any, deployment map[string]any) (bool, string) {
	v, err := expression.Eval(ctx, p.prg, map[string]any{"resource": resource, "plan": plan, "declared": declared, "deployment": deployment})
	if err != nil {
		return false, "the expression failed: " + err.Error()
	}
	b, ok := v.Value().(bool)
	if !ok {
		return false, fmt.Sprintf("the expression gave %s, not true or false", v.Type().TypeName())
	}
	return b, ""
}

// celValue is a resource's value as CEL should see it: JSON numbers are all floats, and a
// whole number compares with an integer literal only as an integer.
func celValue(v any) any {
	switch x := v.(type) {
	case float64:
		if x == float64(int64(x)) {
			return int64(x)
		}
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = celValue(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = celValue(e)
		}
		return out
	}
	return v
}

// value is a resource as an expression reads it.
func (r Resource) value() map[string]any {
	inputs := map[string]any{}
	for k, v := range r.Inputs {
		inputs[k] = celValue(v)
	}
	return map[string]any{"type": r.Type, "name": r.Name, "urn": r.URN, "op": r.Op, "inputs": inputs}
}

// Subject is the deployment a plan is for, as policies see it: the row the database gives,
// field for field.
type Subject struct {
	Name      string
	Component string
	Tenant    string
	// System is a deployment of the zone's own, such as its tenant factory's parts.
	System      bool
	Environment string
	// Namespace is the tenant's namespace on the zone's cluster, "" when it has none.
	Namespace string
	// Slot is the stack instance slot the deployment holds, "" when none.
	Slot string
}

func (s Subject) value() map[string]any {
	return map[string]any{"name": s.Name, "component": s.Component, "tenant": s.Tenant, "environment": s.Environment,
		"namespace": s.Namespace, "system": s.System, "slot": s.Slot}
}

// Violation is a resource that did not comply with a policy.
type Violation struct {
	Policy  string `json:"policy"`
	Level   Level  `json:"level"`
	Message string `json:"message"`
	Type    string `json:"type"`
	Name    string `json:"name"`
	URN     string `json:"urn"`
	// Detail says why the expression could not say yes, when it failed rather than said no.
	Detail string `json:"detail,omitempty"`
}

// evaluate checks every checked resource of plan against each enabled policy, with what other
// slots declare beside it, and returns what did not comply, in the plan's order, policy by
// policy. A policy whose expression no longer compiles (the language changed under it) fails
// every resource; so does every pair left unchecked once ctx is done.
func evaluate(ctx context.Context, policies []Policy, subject Subject, plan []Resource, declared []Declared) []Violation {
	deployment := subject.value()
	var checked []Resource
	var all []any
	for _, r := range plan {
		if r.Checked() {
			checked = append(checked, r)
			all = append(all, r.value())
		}
	}
	others := make([]any, len(declared))
	for i, d := range declared {
		others[i] = d.value()
	}
	out := []Violation{}
	for _, p := range policies {
		if !p.Enabled {
			continue
		}
		prg, err := compile(p.Expression)
		for i, r := range checked {
			v := Violation{Policy: p.Name, Level: p.Level, Message: p.Message, Type: r.Type, Name: r.Name, URN: r.URN}
			if why := unchecked(ctx); why != "" {
				v.Detail = why
				out = append(out, v)
				continue
			}
			if err != nil {
				v.Detail = "the expression does not compile: " + err.Error()
				out = append(out, v)
				continue
			}
			ok, detail := prg.complies(ctx, all[i].(map[string]any), all, others, deployment)
			if !ok {
				v.Detail = detail
				out = append(out, v)
			}
		}
	}
	return out
}

// unchecked says why nothing more of a plan is checked, once its check has run out of time or
// was stopped; "" while it goes on.
func unchecked(ctx context.Context) string {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Sprintf("not checked: checking the plan took longer than its %s", checkTime)
	case ctx.Err() != nil:
		return "not checked: the check was stopped"
	}
	return ""
}
