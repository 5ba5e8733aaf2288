package provision

import (
	"context"
	"errors"
	"strings"

	"github.com/google/uuid"

	"nimbus/app/component"
	"nimbus/app/governance"
	"nimbus/app/problem"
	"nimbus/app/stack"
	"nimbus/db/dbgen"
)

// governed refuses a provisioning that the tenant's governance would refuse were the tenant to
// deploy the factory's components itself: each slot input the factory wires to one of its
// parameters is checked against the rule of the slot's component for the tenant, so a
// provider admin bounds a tenant's tier as any other parameter. Refusals name the factory's
// parameter.
func governed(ctx context.Context, q *dbgen.Queries, tenantID, stackID uuid.UUID, params map[string]any) error {
	st, err := q.StackToDeploy(ctx, stackID)
	if err != nil {
		return err
	}
	if st.Latest == 0 {
		return problem.Invalid("landing_zone_id", "factory", "the zone's tenant factory %s has no published version", st.Name)
	}
	def, err := stack.LoadVersion(ctx, q, stackID, int(st.Latest))
	if err != nil {
		return err
	}
	all := component.ParseSchema("parameters", def.Parameters, &problem.ValidationError{}).Apply("parameters", params, &problem.ValidationError{})
	v := &problem.ValidationError{}
	for _, slot := range def.Slots {
		given, from := map[string]any{}, map[string]string{}
		for input, w := range slot.Inputs {
			if w.Kind == stack.Param && all[w.Param] != nil {
				given[input], from["parameters."+input] = all[w.Param], w.Param
			}
		}
		if len(given) == 0 {
			continue
		}
		err := governance.Check(ctx, q, tenantID, slot.Component, given)
		var refused *problem.ValidationError
		var denied *problem.Denied
		switch {
		case errors.As(err, &refused):
			for _, f := range refused.Fields {
				if p, ok := from[f.Field]; ok {
					f.Field = p
				}
				f.Message = strings.TrimSuffix(f.Message, ".") + " for the factory's " + slot.Name
				v.Fields = append(v.Fields, f)
			}
		case errors.As(err, &denied):
			v.Add("landing_zone_id", "governance", "the factory's %s: %s", slot.Name, denied.Message)
		case err != nil:
			return err
		}
	}
	return v.Err()
}
