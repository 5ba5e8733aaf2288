package inventory

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/lifecycle"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/audit"
	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/views"
)

// Ignore sets an unmanaged item aside: a provider admin says the resource is known and meant
// to stay outside Nimbus. It leaves the list unless asked for (status=ignored), and discovery
// does not bring it back as unmanaged while the cloud holds it.
func (s *Service) Ignore(ctx context.Context, actor access.Principal, id uuid.UUID) (Item, error) {
	return s.setAside(ctx, actor, id, Unmanaged, Ignored, "inventory.ignore")
}

// Unignore takes an ignored item back to unmanaged, to be adopted or ignored again.
func (s *Service) Unignore(ctx context.Context, actor access.Principal, id uuid.UUID) (Item, error) {
	return s.setAside(ctx, actor, id, Ignored, Unmanaged, "inventory.unignore")
}

// setAside moves the item from one status to another, audited as action, for a provider
// admin alone: what discovery found is the provider's.
func (s *Service) setAside(ctx context.Context, actor access.Principal, id uuid.UUID, from, to Status, action string) (Item, error) {
	var out Item
	err := db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		it, err := lockFound(ctx, q, actor, id, from)
		if err != nil {
			return err
		}
		row, err := setAside(ctx, q, it, to)
		if err != nil {
			return err
		}
		out = itemOf(row, "", "")
		return audit.Record(ctx, q, actor, audit.Event{Action: action, TargetType: "inventory_item", TargetID: id.String(),
			Diff: map[string]any{"name": it.Name, "type": it.Type, "provider_id": it.ProviderID, "status": string(to)}})
	})
	return out, err
}

// Found is an unmanaged item as an adoption of it needs it: what the cloud calls the resource,
// and the zone whose cloud holds it.
type Found struct {
	ID, Zone         uuid.UUID
	Type, ProviderID string
}

// Adoptable locks an unmanaged item for a provider admin to adopt into a deployment, in q's
// transaction: not found for one who may not see it, refused for one who sees it but is no
// provider admin, and invalid on its status unless it is unmanaged.
func Adoptable(ctx context.Context, q *dbgen.Queries, actor access.Principal, id uuid.UUID) (Found, error) {
	it, err := lockFound(ctx, q, actor, id, Unmanaged)
	if err != nil {
		return Found{}, err
	}
	return Found{ID: it.ID, Zone: it.LandingZoneID.UUID, Type: it.Type, ProviderID: it.ProviderID}, nil
}

// lockFound locks an item a provider admin moves, which must have the status want.
func lockFound(ctx context.Context, q *dbgen.Queries, actor access.Principal, id uuid.UUID, want Status) (dbgen.InventoryItem, error) {
	it, err := q.LockInventoryItem(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && !visible(actor, it) {
		return it, problem.ErrNotFound
	}
	if err != nil {
		return it, fmt.Errorf("inventory item %s: %w", id, err)
	}
	if !actor.ProviderAdmin {
		return it, problem.ErrForbidden
	}
	if Status(it.Status) != want {
		return it, problem.Invalid("status", string(want), "%s is %s, not %s", it.Name, it.Status, want)
	}
	return it, nil
}

// AdoptChoices are what an unmanaged item's page offers to adopt it into: the components of its
// type, and the active environments of its zone.
type AdoptChoices struct {
	Components, Environments []views.Option
}

// adoptChoices reads the choices for an item a provider admin is shown.
func (s *Service) adoptChoices(ctx context.Context, d Detail) (AdoptChoices, error) {
	var out AdoptChoices
	if d.Status != Unmanaged || d.LandingZoneID == nil {
		return out, nil
	}
	q := db.Queries(s.pool)
	comps, err := q.AdoptionComponents(ctx, d.Type)
	if err != nil {
		return out, fmt.Errorf("components to adopt %s into: %w", d.ID, err)
	}
	for _, c := range comps {
		out.Components = append(out.Components, views.Option{Value: c.ID.String(), Label: c.Name})
	}
	envs, err := q.AdoptionEnvironments(ctx, dbgen.AdoptionEnvironmentsParams{LandingZoneID: nullID(*d.LandingZoneID),
		Status: string(lifecycle.EnvironmentActive)})
	if err != nil {
		return out, fmt.Errorf("environments to adopt %s into: %w", d.ID, err)
	}
	for _, e := range envs {
		out.Environments = append(out.Environments, views.Option{Value: e.ID.String(), Label: e.TenantName + " / " + e.Name})
	}
	return out, nil
}
