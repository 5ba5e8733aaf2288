package component

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"nimbus/app/kernel/access"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// Deployed is a deployment of a component, as the component's page lists it.
type Deployed struct {
	ID            uuid.UUID
	Name          string
	EnvironmentID uuid.UUID
	Environment   string
	Version       int
	Status        string
	CreatedAt     time.Time
}

// maxDeployed bounds the deployments a component's page lists; the deployments page has all.
const maxDeployed = 50

// Deployments lists the newest deployments of a component the actor may see, in the tenants
// whose environments the actor may read.
func (s *Service) Deployments(ctx context.Context, actor access.Principal, id uuid.UUID) ([]Deployed, error) {
	if _, err := s.Get(ctx, actor, id); err != nil {
		return nil, err
	}
	rows, err := db.Queries(s.pool).ListDeployments(ctx, dbgen.ListDeploymentsParams{AllTenants: actor.ProviderAdmin,
		TenantIds: append([]uuid.UUID{}, actor.TenantsWith(access.EnvironmentRead)...), ComponentID: uuid.NullUUID{UUID: id, Valid: true},
		MaxRows: maxDeployed})
	if err != nil {
		return nil, fmt.Errorf("list deployments of component %s: %w", id, err)
	}
	out := make([]Deployed, len(rows))
	for i, r := range rows {
		out[i] = Deployed{ID: r.ID, Name: r.Name, EnvironmentID: r.EnvironmentID, Environment: r.EnvironmentName,
			Version: int(r.Version), Status: r.Status, CreatedAt: r.CreatedAt}
	}
	return out, nil
}
