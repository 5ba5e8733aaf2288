package landingzone

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/domain/resolver"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// Choice is something a landing zone's forms offer: its value and the name people read; for
// a component, its semantic type, which decides what a member's refers may name.
type Choice struct {
	Value string
	Label string
	Type  string
}

// Providers lists the providers a new landing zone may be for. Provider admins make zones.
func (s *Service) Providers(ctx context.Context, actor access.Principal) ([]Choice, error) {
	if !actor.Can(access.LandingZoneManage, uuid.Nil) {
		return nil, problem.ErrForbidden
	}
	rows, err := db.Queries(s.pool).ListProviders(ctx)
	if err != nil {
		return nil, fmt.Errorf("list providers: %w", err)
	}
	out := make([]Choice, len(rows))
	for i, p := range rows {
		out[i] = Choice{Value: p.Name, Label: p.DisplayName}
	}
	return out, nil
}

// ComponentChoices lists the components a zone may take as system services or in its
// templates: those of its provider, published for every tenant.
func (s *Service) ComponentChoices(ctx context.Context, actor access.Principal, zoneID uuid.UUID) ([]Choice, error) {
	q := db.Queries(s.pool)
	z, err := q.GetLandingZone(ctx, zoneID)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && !actor.ProviderAdmin {
		return nil, problem.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get landing zone: %w", err)
	}
	rows, err := q.ZoneComponentChoices(ctx, z.Provider)
	if err != nil {
		return nil, fmt.Errorf("components for zone %s: %w", zoneID, err)
	}
	out := make([]Choice, len(rows))
	for i, c := range rows {
		out[i] = Choice{Value: c.ID.String(), Label: c.Name, Type: c.SemanticType}
	}
	return out, nil
}

// Inputs returns the input schema of a component's latest version, for the forms that give a
// zone's templates and system services their parameters; the inputs it binds to resolvers, and
// those of them the zone's resolvers fill, by resolver type.
func (s *Service) Inputs(ctx context.Context, actor access.Principal, zoneID, componentID uuid.UUID) (schema []byte, bound, filled map[string]string, err error) {
	q := db.Queries(s.pool)
	z, err := q.GetLandingZone(ctx, zoneID)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && !actor.ProviderAdmin {
		return nil, nil, nil, problem.ErrNotFound
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("get landing zone: %w", err)
	}
	comp, err := q.GetComponent(ctx, componentID)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && (comp.TenantID.Valid || comp.LatestVersion == 0) {
		return nil, nil, nil, problem.Invalid("component_id", "exists", "choose a component from the list")
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("get component: %w", err)
	}
	ver, err := q.GetComponentVersion(ctx, dbgen.GetComponentVersionParams{ComponentID: comp.ID, Version: comp.LatestVersion})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("component version: %w", err)
	}
	bindings, _ := resolver.ParseBindings(ver.ResolverBindings) // publishing the version checked them
	bound = map[string]string{}
	for _, b := range bindings {
		bound[b.Input] = b.Type
	}
	filled, err = filledHere(ctx, q, z, ver.ResolverBindings)
	return ver.InputSchema, bound, filled, err
}
