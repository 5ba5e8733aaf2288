package ipam

import (
	"context"
	"fmt"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// Scope is a landing zone or an environment a new pool may belong to: the form's value
// (landing_zone:ID or environment:ID) and the name people read.
type Scope struct {
	Value string
	Label string
}

// Scopes lists what a new pool may belong to: every landing zone and every environment.
// Provider admins make pools.
func (s *Service) Scopes(ctx context.Context, actor access.Principal) (zones, environments []Scope, err error) {
	if !actor.ProviderAdmin {
		return nil, nil, problem.ErrForbidden
	}
	q := db.Queries(s.pool)
	zs, err := q.ListLandingZones(ctx, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("list landing zones: %w", err)
	}
	envs, err := q.ListEnvironments(ctx, dbgen.ListEnvironmentsParams{AllTenants: true})
	if err != nil {
		return nil, nil, fmt.Errorf("list environments: %w", err)
	}
	for _, z := range zs {
		zones = append(zones, Scope{Value: "landing_zone:" + z.ID.String(), Label: z.Name})
	}
	for _, e := range envs {
		environments = append(environments, Scope{Value: "environment:" + e.ID.String(), Label: e.TenantName + " / " + e.Name})
	}
	return zones, environments, nil
}
