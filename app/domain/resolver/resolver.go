// Package resolver turns a deployment's abstract inputs into concrete values when it is
// deployed. A component binds inputs to resolver types ({"ip_address": "ipam", "gateway":
// "ipam.gateway"}); each environment configures the resolvers it offers; the deploy's resolve
// step calls them, records what they handed out against the deployment and the operation, and
// gives it back when the operation is undone or the deployment destroyed.
package resolver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/google/uuid"

	"nimbus/app/kernel/problem"
	"nimbus/db/dbgen"
)

// Resolver is one kind of resolver. It runs inside Nimbus, never deployed.
type Resolver interface {
	// Type names it in bindings and configurations: ipam, naming…
	Type() string
	// Outputs are the values it produces; the first is what a binding without a field means.
	Outputs() []string
	// Check validates a configuration for an environment, naming each problem's field.
	Check(ctx context.Context, q *dbgen.Queries, scope Scope, config json.RawMessage, v *problem.ValidationError)
	// Resolve produces the outputs for one input of a deployment, idempotently: asked again
	// for the same deployment and input, it returns what it handed out before.
	Resolve(ctx context.Context, q *dbgen.Queries, c Call) (map[string]any, error)
}

// Call is what a resolver is asked to resolve.
type Call struct {
	Config json.RawMessage
	// Owner is what the configuration belongs to, the environment or its landing zone: a
	// naming sequence is shared by everything that shares the configuration.
	Owner      uuid.UUID
	Deployment Deployment
	Operation  uuid.UUID
	Input      string
	Params     map[string]any // the deployment's other parameters, as given
}

// Deployment is what a resolver may know of the deployment it resolves for.
type Deployment struct {
	ID           uuid.UUID
	Name         string
	Tenant       string
	Environment  string
	EnvID        uuid.UUID
	Component    string
	SemanticType string
	Provider     string
	// Refers are the deployments of the environment its inputs name (x-refers-to), in input
	// order: a machine's network, whose subnet its address comes from.
	Refers []uuid.UUID
}

// registry holds the built-in resolvers, by type.
var registry = map[string]Resolver{}

func register(r Resolver) { registry[r.Type()] = r }

func init() {
	register(ipamResolver{})
	register(namingResolver{})
	register(imageResolver{})
	register(secretResolver{})
}

// Types lists the resolver types, sorted.
func Types() []string {
	out := make([]string, 0, len(registry))
	for t := range registry {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// Targets lists what an input may be bound to: each type, then type.output for each output
// besides the one the bare type means.
func Targets() []string {
	var out []string
	for _, t := range Types() {
		out = append(out, t)
		for _, o := range registry[t].Outputs()[1:] {
			out = append(out, t+"."+o)
		}
	}
	return out
}

// Scope is what a configuration is set on: a landing zone, or an environment overriding its
// zone's. Zone is the environment's landing zone when Environment is set, and may be nil.
type Scope struct {
	Environment, Zone uuid.UUID
}

func (s Scope) noun() string {
	if s.Environment != uuid.Nil {
		return "environment or its landing zone"
	}
	return "landing zone"
}

// Binding is one input bound to a resolver's output.
type Binding struct {
	Input, Type, Output string
}

// key names what a binding is handed: per resolver type, except that an IPAM subnet is a
// thing of its own beside the deployment's address.
func (b Binding) key() string {
	if b.Type == "ipam" && b.Output == "subnet" {
		return subnetKey
	}
	return b.Type
}

// ParseBindings reads a component version's resolver_bindings, in input order. Each value is
// a resolver type, or type.output for another of its outputs.
func ParseBindings(raw json.RawMessage) ([]Binding, error) {
	m := map[string]string{}
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("resolver bindings: %w", err)
		}
	}
	out := make([]Binding, 0, len(m))
	for input, target := range m {
		b, err := parseBinding(input, target)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b Binding) int { return strings.Compare(a.Input, b.Input) })
	return out, nil
}

func parseBinding(input, target string) (Binding, error) {
	typ, output, _ := strings.Cut(target, ".")
	r, ok := registry[typ]
	if !ok {
		return Binding{}, fmt.Errorf("input %s is bound to %q, which is not a resolver (there are %s)", input, target, strings.Join(Types(), ", "))
	}
	if output == "" {
		output = r.Outputs()[0]
	}
	if !slices.Contains(r.Outputs(), output) {
		return Binding{}, fmt.Errorf("input %s is bound to %s.%s, but %s gives %s", input, typ, output, typ, strings.Join(r.Outputs(), ", "))
	}
	return Binding{Input: input, Type: typ, Output: output}, nil
}

// CheckBinding reports what is wrong with binding input to target, or nil.
func CheckBinding(input, target string) error {
	_, err := parseBinding(input, target)
	return err
}

// lacker is a resolver some of whose configurations cannot fill some bindings.
type lacker interface {
	Lacks(b Binding, config json.RawMessage) (field, what string)
}

// Lacks says what a configuration of b's resolver cannot hand out for b, naming the field of
// the configuration that would let it and what is missing in the words of its form; empty
// when it can.
func Lacks(b Binding, config json.RawMessage) (field, what string) {
	if l, ok := registry[b.Type].(lacker); ok {
		return l.Lacks(b, config)
	}
	return "", ""
}

// ErrUnresolved means a bound input could not be resolved in this environment: a missing
// configuration, a full pool. Running the operation again as is would fail the same way.
var ErrUnresolved = errors.New("cannot resolve")

// Active are the bindings an environment resolves: those of the resolver types it configures.
// An input bound to a resolver the environment does not offer is an ordinary input there, so a
// component with bindings still deploys where nobody set resolvers up.
func Active[T any](bindings []Binding, configured map[string]T) []Binding {
	var out []Binding
	for _, b := range bindings {
		if _, ok := configured[b.Type]; ok {
			out = append(out, b)
		}
	}
	return out
}

// Preset are the bindings among active whose inputs params already gives a value. A deploy
// refuses a value for an input its resolver fills, so a template or system service that sets
// one could never be deployed where that resolver is configured.
func Preset(active []Binding, params map[string]any) []Binding {
	var out []Binding
	for _, b := range active {
		if _, set := params[b.Input]; set {
			out = append(out, b)
		}
	}
	return out
}

// Label is a resolver type as a sentence says it: image_catalog is "image catalog".
func Label(typ string) string {
	if typ == "ipam" {
		return "IPAM"
	}
	return strings.ReplaceAll(typ, "_", " ")
}

// Configured returns the resolver types that resolve in an environment: its own, and its
// landing zone's.
func Configured(ctx context.Context, q *dbgen.Queries, environmentID uuid.UUID) (map[string]bool, error) {
	configs, err := q.EffectiveResolverConfigs(ctx, environmentID)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, c := range configs {
		out[c.Type] = true
	}
	return out, nil
}

// Resolve fills every bound input of a deployment that its environment resolves, in the
// caller's transaction, and returns the values. Each resolver is called once per type; what it hands out is recorded against the
// deployment and operation, so Release can give exactly that back.
func Resolve(ctx context.Context, q *dbgen.Queries, bindings []Binding, d Deployment, operation uuid.UUID, params map[string]any) (map[string]any, error) {
	if len(bindings) == 0 {
		return map[string]any{}, nil
	}
	configs, err := q.EffectiveResolverConfigs(ctx, d.EnvID)
	if err != nil {
		return nil, err
	}
	byType := map[string]dbgen.ResolverConfiguration{}
	for _, c := range configs {
		byType[c.Type] = c
	}
	bindings = Active(bindings, byType)
	// One call per thing handed out: an address and its gateway come from one allocation, a
	// subnet from another. The key also tells a resolver, across operations, what the
	// deployment holds already.
	outputs := map[string]map[string]any{}
	values := map[string]any{}
	for _, b := range bindings {
		key := b.key()
		got, ok := outputs[key]
		if !ok {
			cfg := byType[b.Type]
			got, err = registry[b.Type].Resolve(ctx, q, Call{Config: cfg.Config, Owner: ownerOf(cfg), Deployment: d, Operation: operation,
				Input: key, Params: params})
			if err != nil {
				return nil, fmt.Errorf("%w %s with %s: %w", ErrUnresolved, b.Input, b.Type, err)
			}
			outputs[key] = got
		}
		values[b.Input] = got[b.Output]
	}
	return values, nil
}

func ownerOf(c dbgen.ResolverConfiguration) uuid.UUID {
	if c.EnvironmentID.Valid {
		return c.EnvironmentID.UUID
	}
	return c.LandingZoneID.UUID
}

// ReleaseOperation gives back what one operation was handed, when it is undone.
func ReleaseOperation(ctx context.Context, q *dbgen.Queries, operation uuid.UUID) error {
	if _, err := q.ReleaseOperationAllocations(ctx, uuid.NullUUID{UUID: operation, Valid: true}); err != nil {
		return err
	}
	_, err := q.ReleaseOperationNames(ctx, uuid.NullUUID{UUID: operation, Valid: true})
	return err
}

// SettleOperation gives back, in the transaction that records an operation's success, what
// the deployment moved away from: the allocations those it was handed replace (a machine's
// address in the network it left). Until then the deployment held both, so an operation undone
// leaves it with what it had.
func SettleOperation(ctx context.Context, q *dbgen.Queries, operation uuid.UUID) error {
	_, err := q.ReleaseReplacedAllocations(ctx, uuid.NullUUID{UUID: operation, Valid: true})
	return err
}

// ReleaseDeployment gives back everything a deployment holds, when it is destroyed.
func ReleaseDeployment(ctx context.Context, q *dbgen.Queries, deployment uuid.UUID) error {
	if _, err := q.ReleaseDeploymentAllocations(ctx, uuid.NullUUID{UUID: deployment, Valid: true}); err != nil {
		return err
	}
	_, err := q.ReleaseDeploymentNames(ctx, uuid.NullUUID{UUID: deployment, Valid: true})
	return err
}
