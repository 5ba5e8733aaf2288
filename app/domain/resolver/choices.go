package resolver

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// PoolChoice is an IP pool the IPAM resolver of an environment or a landing zone may hand
// out from.
type PoolChoice struct {
	ID           uuid.UUID
	Name, Prefix string
	// Shared marks a pool of an environment's landing zone, offered on the environment's page.
	Shared bool
}

// EnvironmentPools lists the pools an environment's IPAM resolver may use: the environment's
// own, and its landing zone's for those who configure its resolvers.
func (s *Service) EnvironmentPools(ctx context.Context, actor access.Principal, environmentID uuid.UUID) ([]PoolChoice, error) {
	env, err := s.environment(ctx, actor, environmentID)
	if err != nil {
		return nil, err
	}
	q := db.Queries(s.pool)
	pools, err := q.ListPools(ctx, dbgen.ListPoolsParams{AllTenants: true, EnvironmentID: nullUUID(environmentID)})
	if err != nil {
		return nil, fmt.Errorf("pools of environment %s: %w", environmentID, err)
	}
	if actor.Can(access.ResolverConfigManage, env.TenantID) && env.LandingZoneID.Valid {
		shared, err := q.ListPools(ctx, dbgen.ListPoolsParams{AllTenants: true, LandingZoneID: env.LandingZoneID})
		if err != nil {
			return nil, fmt.Errorf("pools of landing zone %s: %w", env.LandingZoneID.UUID, err)
		}
		pools = append(pools, shared...)
	}
	out := make([]PoolChoice, len(pools))
	for i, p := range pools {
		out[i] = PoolChoice{ID: p.ID, Name: p.Name, Prefix: p.Prefix.String(), Shared: p.LandingZoneID.Valid}
	}
	return out, nil
}

// ZonePools lists the pools of a landing zone, which its IPAM resolver may use.
func (s *Service) ZonePools(ctx context.Context, actor access.Principal, zoneID uuid.UUID) ([]PoolChoice, error) {
	if _, err := s.zone(ctx, actor, zoneID); err != nil {
		return nil, err
	}
	pools, err := db.Queries(s.pool).ListPools(ctx, dbgen.ListPoolsParams{AllTenants: true, LandingZoneID: nullUUID(zoneID)})
	if err != nil {
		return nil, fmt.Errorf("pools of landing zone %s: %w", zoneID, err)
	}
	out := make([]PoolChoice, len(pools))
	for i, p := range pools {
		out[i] = PoolChoice{ID: p.ID, Name: p.Name, Prefix: p.Prefix.String()}
	}
	return out, nil
}

// ImageProviders lists the providers an image may be added for. Provider admins keep the
// image catalog.
func (s *Service) ImageProviders(ctx context.Context, actor access.Principal) ([]string, error) {
	if !actor.ProviderAdmin {
		return nil, problem.ErrForbidden
	}
	providers, err := db.Queries(s.pool).ListProviders(ctx)
	if err != nil {
		return nil, fmt.Errorf("list providers: %w", err)
	}
	names := make([]string, len(providers))
	for i, p := range providers {
		names[i] = p.Name
	}
	return names, nil
}

// IssuedName is a name the naming resolver handed out in an environment.
type IssuedName struct {
	Name, FQDN string
	// Deployment names the deployment that holds the name; DeploymentID is nil once it is gone.
	Deployment   string
	DeploymentID uuid.UUID
	Created      time.Time
}

// IssuedNames lists the names the naming resolver handed out in an environment.
func (s *Service) IssuedNames(ctx context.Context, actor access.Principal, environmentID uuid.UUID) ([]IssuedName, error) {
	if _, err := s.environment(ctx, actor, environmentID); err != nil {
		return nil, err
	}
	rows, err := db.Queries(s.pool).IssuedNames(ctx, environmentID)
	if err != nil {
		return nil, fmt.Errorf("names issued in environment %s: %w", environmentID, err)
	}
	out := make([]IssuedName, len(rows))
	for i, n := range rows {
		out[i] = IssuedName{Name: n.Name, FQDN: n.Fqdn, Deployment: n.DeploymentName, DeploymentID: n.DeploymentID.UUID, Created: n.CreatedAt}
	}
	return out, nil
}
