package provision

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"nimbus/app/domain/governance"
	"nimbus/app/domain/stack"
	"nimbus/app/kernel/problem"
	"nimbus/db/dbgen"
)

// governed refuses a provisioning that the tenant's governance would refuse were the tenant to
// deploy the factory's components itself: each slot input that the factory's parameters alone
// give (the tier, and the quota's values worked out from it) is checked against the rule of the
// slot's component for the tenant, so a provider admin bounds a tenant's tier, or its pods, as
// any other parameter. A refusal names the factory's parameter the input comes from; inputs
// wired to another slot's output are checked when their slot deploys.
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
	schemas, err := stack.LoadSchemas(ctx, q, def)
	if err != nil {
		return err
	}
	all := schemas.Params.Apply("parameters", params, &problem.ValidationError{})
	v := &problem.ValidationError{}
	for _, slot := range def.Slots {
		known := stack.FromParams(ctx, schemas, slot, all)
		if len(known) == 0 {
			continue
		}
		given := map[string]any{}
		for input, k := range known {
			given[input] = k.Value
		}
		err := governance.Check(ctx, q, tenantID, slot.Component, given)
		var refused *problem.ValidationError
		var denied *problem.Denied
		switch {
		case errors.As(err, &refused):
			for _, f := range refused.Fields {
				v.Fields = append(v.Fields, factoryField(f, slot.Name, known, params))
			}
		case errors.As(err, &denied):
			v.Add("landing_zone_id", "governance", "the factory's %s: %s", slot.Name, denied.Message)
		case err != nil:
			return err
		}
	}
	return v.Err()
}

// factoryField names a refusal of a slot's input by the parameter of the provisioning it comes
// from, and says which input it is and how it was worked out, unless it is that parameter
// passed on as it is. One from no parameter the provisioning sets is the factory's own doing,
// refused for the zone.
func factoryField(f problem.FieldError, slot string, known map[string]stack.Known, params map[string]any) problem.FieldError {
	input, ok := problem.Within(f.Field, "parameters")
	if !ok {
		input = f.Field
	}
	k := known[input]
	if k.Kind == stack.Param && k.Params[0] == input {
		if _, ok := params[input]; ok {
			f.Field, f.Message = input, fmt.Sprintf("%s for the factory's %s", f.Message, slot)
			return f
		}
	}
	var from []string
	f.Field = "landing_zone_id"
	for _, p := range k.Params {
		if v, ok := params[p]; ok {
			from = append(from, fmt.Sprintf("%s %s", p, shown(v)))
			if f.Field == "landing_zone_id" {
				f.Field = p
			}
		}
	}
	how := "set by the factory"
	if len(from) > 0 {
		how = "from " + strings.Join(from, " and ")
	}
	f.Message = fmt.Sprintf("the factory's %s, input %s (%s): %s", slot, input, how, f.Message)
	return f
}

// shown is a parameter's value as a refusal quotes it.
func shown(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(v)
}
