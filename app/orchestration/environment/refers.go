package environment

import (
	"context"
	"encoding/json"
	"maps"
	"slices"

	"nimbus/app/domain/component"
	"nimbus/app/kernel/problem"
	"nimbus/db/dbgen"
)

// A template's member may name, for an input that names another deployment (x-refers-to), an
// earlier member: its deployment waits for that member's, and takes that member's output when
// it starts, since the value (a network's ID) exists only once the member it names is deployed.

// refersOf is what d's template member names, by input.
func refersOf(d dbgen.EnvironmentDeploymentsRow) map[string]string {
	out := map[string]string{}
	_ = json.Unmarshal(d.Refers, &out)
	return out
}

// after are the nodes of the members d's refers name: d is deployed after them and taken down
// before them.
func (r *run) after(d dbgen.EnvironmentDeploymentsRow) []string {
	var out []string
	refers := refersOf(d)
	for _, input := range slices.Sorted(maps.Keys(refers)) {
		if m, ok := r.members[refers[input]]; ok && m.ID != d.ID && !slices.Contains(out, m.ID.String()) {
			out = append(out, m.ID.String())
		}
	}
	return out
}

// referred gives each input that d's refers name the output of the member it names, as that
// member's deployment holds it now. An input the version deployed no longer marks as naming
// another deployment is left as it is; a member without the output refuses the deploy.
func (r *run) referred(ctx context.Context, q *dbgen.Queries, d dbgen.EnvironmentDeploymentsRow) (map[string]any, error) {
	refers := refersOf(d)
	if len(refers) == 0 {
		return nil, nil
	}
	ver, err := q.GetComponentVersion(ctx, dbgen.GetComponentVersionParams{ComponentID: d.ComponentID, Version: d.Version})
	if err != nil {
		return nil, err
	}
	schema := component.ParseSchema("input_schema", ver.InputSchema, &problem.ValidationError{})
	out := map[string]any{}
	for _, input := range slices.Sorted(maps.Keys(refers)) {
		if schema == nil || schema.Properties[input] == nil || schema.Properties[input].RefersTo == nil {
			continue
		}
		ref := schema.Properties[input].RefersTo
		outputs := map[string]any{}
		if m, ok := r.members[refers[input]]; ok {
			_ = json.Unmarshal(m.Outputs, &outputs)
		}
		value, _ := outputs[ref.Output].(string)
		if value == "" {
			return nil, problem.Invalid("refers."+input, "output", "%s gave no %s for input %s of %s", refers[input], ref.Output, input, d.Name)
		}
		out[input] = value
	}
	return out, nil
}
