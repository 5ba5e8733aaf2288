package provision

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/domain/cluster"
	"nimbus/app/domain/component"
	"nimbus/app/domain/resolver"
	"nimbus/app/domain/stack"
	"nimbus/app/domain/tenant"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/audit"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// CreateFactory creates the tenant factory's stack as a draft of the built-in Kubernetes
// components, for a provider admin to read, change if need be, and publish.
func (s *Service) CreateFactory(ctx context.Context, actor access.Principal) (stack.Stack, error) {
	if !actor.ProviderAdmin {
		return stack.Stack{}, problem.ErrForbidden
	}
	def, err := FactoryDraft(ctx, db.Queries(s.pool))
	if err != nil {
		return stack.Stack{}, err
	}
	draft, err := json.Marshal(def)
	if err != nil {
		return stack.Stack{}, err
	}
	return s.stacks.Create(ctx, actor, stack.New{Provider: cluster.Provider, Name: FactoryName, DisplayName: "Kubernetes tenant factory",
		Description: "A tenant's namespace on the cluster with its quota and limits by tier and network policies that keep it to itself.",
		Draft:       draft})
}

// Factory is a zone's tenant factory: the stack each tenant provisioned on the zone gets.
type Factory struct {
	StackID   uuid.UUID `json:"stack_id"`
	StackName string    `json:"stack_name"`
}

// Zones returns the zones a tenant can be provisioned on, to provider admins.
func (s *Service) Zones(ctx context.Context, actor access.Principal) ([]tenant.NamespaceZone, error) {
	if !actor.ProviderAdmin {
		return nil, problem.ErrForbidden
	}
	q := db.Queries(s.pool)
	rows, err := q.TenantFactoryZones(ctx)
	if err != nil {
		return nil, fmt.Errorf("zones with a tenant factory: %w", err)
	}
	out := make([]tenant.NamespaceZone, len(rows))
	for i, r := range rows {
		out[i] = tenant.NamespaceZone{LandingZoneID: r.ID, ZoneName: r.Name, StackID: r.TenantStackID.UUID, StackName: r.StackName}
		def, err := stack.LoadVersion(ctx, q, r.TenantStackID.UUID, int(r.StackVersion))
		if err != nil {
			return nil, err
		}
		out[i].Tiers = tiersOf(def)
	}
	return out, nil
}

// tiersOf reads the values a factory's tier parameter may take.
func tiersOf(def stack.Definition) []string {
	schema := component.ParseSchema("parameters", def.Parameters, &problem.ValidationError{})
	p, ok := schema.Properties["tier"]
	if !ok {
		return nil
	}
	var out []string
	for _, e := range p.Enum {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// SetFactory names the stack the zone's tenants are provisioned with, or none (stackID nil):
// a published provider stack for Kubernetes whose parameters take the namespace. Tenants
// provisioned already keep the instances they have.
func (s *Service) SetFactory(ctx context.Context, actor access.Principal, zoneID uuid.UUID, stackID *uuid.UUID) error {
	if !actor.ProviderAdmin {
		return problem.ErrNotFound
	}
	return db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		z, err := q.LockLandingZone(ctx, zoneID)
		if errors.Is(err, pgx.ErrNoRows) {
			return problem.ErrNotFound
		}
		if err != nil {
			return err
		}
		if z.Provider != cluster.Provider {
			return problem.Invalid("stack_id", "provider", "%s is a %s zone: a tenant factory is for Kubernetes zones", z.Name, z.Provider)
		}
		diff := map[string]any{"stack_id": nil}
		if stackID != nil {
			st, err := s.stacks.Get(ctx, actor, *stackID)
			if errors.Is(err, problem.ErrNotFound) {
				return problem.Invalid("stack_id", "exists", "no stack with this ID")
			}
			if err != nil {
				return err
			}
			if err := fits(ctx, q, z, st); err != nil {
				return err
			}
			diff["stack_id"], diff["stack"] = st.ID.String(), st.Name
		}
		if err := q.SetZoneTenantStack(ctx, dbgen.SetZoneTenantStackParams{ID: z.ID, StackID: nullable(stackID)}); err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{Action: "landing_zone.tenant_factory", TargetType: "landing_zone", TargetID: z.ID.String(), Diff: diff})
	})
}

// fits refuses a stack that cannot be a zone's tenant factory, and one whose parts would ask the
// zone for a resolver it does not configure: every tenant provisioned would fail there.
func fits(ctx context.Context, q *dbgen.Queries, z dbgen.LandingZone, st stack.Stack) error {
	switch {
	case !st.ProviderLevel():
		return problem.Invalid("stack_id", "provider_level", "%s is a tenant's stack: a tenant factory is one of the provider's", st.Name)
	case st.Provider != cluster.Provider:
		return problem.Invalid("stack_id", "provider", "%s deploys to %s: a tenant factory deploys to Kubernetes", st.Name, st.Provider)
	case st.LatestVersion == 0:
		return problem.Invalid("stack_id", "published", "%s has no published version: publish it first", st.Name)
	}
	def, err := stack.LoadVersion(ctx, q, st.ID, st.LatestVersion)
	if err != nil {
		return err
	}
	schema := component.ParseSchema("parameters", def.Parameters, &problem.ValidationError{})
	if p, ok := schema.Properties["namespace"]; !ok || p.Type != "string" {
		return problem.Invalid("stack_id", "namespace", "%s takes no namespace parameter: a tenant factory is given the tenant's namespace", st.Name)
	}
	return resolved(ctx, q, z, def)
}

// resolved refuses a factory with a slot input left to a resolver the zone does not configure;
// an input the slot wires, or that has a default, needs none.
func resolved(ctx context.Context, q *dbgen.Queries, z dbgen.LandingZone, def stack.Definition) error {
	configs, err := q.OwnResolverConfigs(ctx, dbgen.OwnResolverConfigsParams{LandingZoneID: uuid.NullUUID{UUID: z.ID, Valid: true}})
	if err != nil {
		return err
	}
	configured := map[string]bool{}
	for _, c := range configs {
		configured[c.Type] = true
	}
	v := &problem.ValidationError{}
	for _, slot := range def.Slots {
		cv, err := q.GetComponentVersion(ctx, dbgen.GetComponentVersionParams{ComponentID: slot.Component, Version: int32(slot.Version)})
		if err != nil {
			return err
		}
		bindings, err := resolver.ParseBindings(cv.ResolverBindings)
		if err != nil {
			return err
		}
		inputs := component.ParseSchema("input_schema", cv.InputSchema, &problem.ValidationError{})
		for _, b := range bindings {
			p, ok := inputs.Properties[b.Input]
			if _, wired := slot.Inputs[b.Input]; wired || configured[b.Type] || !ok || p.Default != nil || !slices.Contains(inputs.Required, b.Input) {
				continue
			}
			v.Add("resolvers."+b.Type, "configured", "the factory's %s needs %s from %s, which landing zone %s does not configure",
				slot.Name, b.Input, resolver.Label(b.Type), z.Name)
		}
	}
	return v.Err()
}

func nullable(id *uuid.UUID) uuid.NullUUID {
	if id == nil {
		return uuid.NullUUID{}
	}
	return uuid.NullUUID{UUID: *id, Valid: true}
}

// Setting is a zone's tenant factory as its page shows it: the stack chosen, those that may be,
// and the namespaces provisioned on the zone.
type Setting struct {
	ZoneID     uuid.UUID     `json:"landing_zone_id"`
	ZoneName   string        `json:"landing_zone_name"`
	Factory    *Factory      `json:"factory"`
	Candidates []Factory     `json:"candidates"`
	Namespaces []ZoneTenancy `json:"namespaces"`
}

// ZoneTenancy is a namespace provisioned on a zone, and whose it is.
type ZoneTenancy struct {
	ID         uuid.UUID `json:"id"`
	Namespace  string    `json:"namespace"`
	TenantID   uuid.UUID `json:"tenant_id"`
	TenantName string    `json:"tenant_name"`
	Status     string    `json:"status"`
}

// Setting returns a Kubernetes zone's tenant factory, to provider admins.
func (s *Service) Setting(ctx context.Context, actor access.Principal, zoneID uuid.UUID) (Setting, error) {
	if !actor.ProviderAdmin {
		return Setting{}, problem.ErrNotFound
	}
	q := db.Queries(s.pool)
	z, err := q.GetLandingZone(ctx, zoneID)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && z.Provider != cluster.Provider {
		return Setting{}, problem.ErrNotFound
	}
	if err != nil {
		return Setting{}, err
	}
	out := Setting{ZoneID: z.ID, ZoneName: z.Name, Candidates: []Factory{}, Namespaces: []ZoneTenancy{}}
	candidates, err := q.FactoryCandidates(ctx, cluster.Provider)
	if err != nil {
		return Setting{}, err
	}
	for _, c := range candidates {
		f := Factory{StackID: c.ID, StackName: c.Name}
		out.Candidates = append(out.Candidates, f)
		if z.TenantStackID.Valid && z.TenantStackID.UUID == c.ID {
			out.Factory = &f
		}
	}
	spaces, err := q.ZoneTenantNamespaces(ctx, z.ID)
	if err != nil {
		return Setting{}, err
	}
	for _, n := range spaces {
		out.Namespaces = append(out.Namespaces, ZoneTenancy{ID: n.ID, Namespace: n.Namespace, TenantID: n.TenantID, TenantName: n.TenantName, Status: n.InstanceStatus})
	}
	return out, nil
}
