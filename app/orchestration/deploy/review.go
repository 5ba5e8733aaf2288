package deploy

import (
	"context"
	"errors"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/domain/component"
	"nimbus/app/domain/governance"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// Review checks a deploy request as Deploy would, recording nothing, and reports every
// problem at once: the environment, the deployment's name, each input, the tenant's
// governance and its instance limit. Deploy stops at the first of these stages that fails;
// a person filling in a form wants to fix everything in one round. given holds problems found
// before (form values that did not parse), which win for their fields.
func (s *Service) Review(ctx context.Context, actor access.Principal, req Request, given error) error {
	all := &problem.ValidationError{}
	seen := map[string]bool{}
	// add keeps the first problem of each field; an error that is no validation problem
	// (a denial, a failure) is returned as it is.
	add := func(err error) error {
		var v *problem.ValidationError
		if err == nil || !errors.As(err, &v) {
			return err
		}
		for _, f := range v.Fields {
			if !seen[f.Field] {
				seen[f.Field] = true
				all.Fields = append(all.Fields, f)
			}
		}
		return nil
	}
	if err := add(given); err != nil {
		return err
	}
	badName := ""
	switch name := strings.TrimSpace(req.Name); {
	case name == "":
		badName = "give the deployment a name: 1–40 lower-case letters, digits and -, starting with a letter"
	case !deploymentName.MatchString(name):
		badName = "must be 1–40 lower-case letters, digits and -, starting with a letter"
	}
	if badName != "" {
		if err := add(problem.Invalid("name", "pattern", "%s", badName)); err != nil {
			return err
		}
		// prepare checks the inputs only once the name is right: with the name's problem
		// known, it is given one that passes.
		req.Name = "x"
	}
	if req.EnvironmentID == uuid.Nil {
		all.Add("environment_id", "required", "choose an environment")
		return all.Err()
	}
	q := db.Queries(s.pool)
	if _, err := s.prepare(ctx, q, actor, req); add(err) != nil {
		return err
	}
	if seen["environment_id"] || seen["component_id"] || seen["version"] {
		return all.Err() // nothing further can be known
	}
	env, err := q.GetEnvironment(ctx, req.EnvironmentID)
	if err != nil {
		return err
	}
	if all.Err() != nil {
		// prepare stopped before governance: check the values that passed, with the defaults
		// of the rest.
		if err := add(s.governed(ctx, q, env.TenantID, req)); err != nil {
			return err
		}
	}
	err = db.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		return governance.CheckInstances(ctx, db.Queries(tx), env.TenantID, req.ComponentID)
	})
	if err := add(err); err != nil {
		return err
	}
	return all.Err()
}

// governed checks the request's parameters that fit the version's inputs against the
// tenant's governance.
func (s *Service) governed(ctx context.Context, q *dbgen.Queries, tenant uuid.UUID, req Request) error {
	comp, err := q.GetComponent(ctx, req.ComponentID)
	if err != nil {
		return err
	}
	ver, err := version(ctx, q, comp, int32(req.Version))
	if err != nil {
		return err
	}
	schema := component.ParseSchema("input_schema", ver.InputSchema, &problem.ValidationError{})
	if schema == nil {
		return nil
	}
	// Apply's problems are known already; what it returns is the values that fit.
	fit := schema.Apply("parameters", req.Parameters, &problem.ValidationError{})
	return governance.Check(ctx, q, tenant, comp.ID, fit)
}
