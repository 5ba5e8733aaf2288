package tenant

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/lifecycle"
)

// Namespace is a tenant's namespace on a zone's cluster and the factory instance that made it.
type Namespace struct {
	ID            uuid.UUID `json:"id"`
	TenantID      uuid.UUID `json:"tenant_id"`
	LandingZoneID uuid.UUID `json:"landing_zone_id"`
	ZoneName      string    `json:"landing_zone_name"`
	Namespace     string    `json:"namespace"`
	// InstanceID is the factory's instance in the zone's system environment; Status is how it
	// stands (active once the namespace is ready, destroyed once it is decommissioned).
	InstanceID *uuid.UUID               `json:"stack_instance_id,omitempty"`
	Status     lifecycle.InstanceStatus `json:"status"`
	Error      string                   `json:"error,omitempty"`
	CreatedAt  time.Time                `json:"created_at"`
}

// NamespaceRequest asks for a tenant to be provisioned on a zone's cluster.
type NamespaceRequest struct {
	LandingZoneID uuid.UUID `json:"landing_zone_id"`
	// Namespace defaults to the tenant's name, made a valid namespace name.
	Namespace string `json:"namespace"`
	// Tier is passed to the factory when its stack takes one.
	Tier string `json:"tier"`
}

// NamespaceZone is a zone a tenant can be provisioned on: its tenant factory's stack, and the
// tiers that stack offers when it takes one.
type NamespaceZone struct {
	LandingZoneID uuid.UUID `json:"landing_zone_id"`
	ZoneName      string    `json:"landing_zone_name"`
	StackID       uuid.UUID `json:"stack_id"`
	StackName     string    `json:"stack_name"`
	Tiers         []string  `json:"tiers,omitempty"`
}

// Namespaces gives tenants namespaces on zones' clusters by running the zones' tenant
// factories. Running a factory is orchestration, which stands on tenants, so tenants reach it
// through this port and never import it; a Nimbus that provisions nothing has none.
type Namespaces interface {
	// Zones are the zones a tenant can be provisioned on; provider admins alone may ask.
	Zones(ctx context.Context, actor access.Principal) ([]NamespaceZone, error)
	List(ctx context.Context, actor access.Principal, tenantID uuid.UUID) ([]Namespace, error)
	Get(ctx context.Context, actor access.Principal, id uuid.UUID) (Namespace, error)
	// Vacant refuses, before a tenant named name is made, a namespace its cluster holds already.
	Vacant(ctx context.Context, name string, in NamespaceRequest) error
	Provision(ctx context.Context, actor access.Principal, tenantID uuid.UUID, in NamespaceRequest) (Namespace, error)
	// ProvisionTx provisions in the caller's transaction, so a tenant and its first namespace
	// are made together or not at all.
	ProvisionTx(ctx context.Context, tx pgx.Tx, actor access.Principal, tenantID uuid.UUID, in NamespaceRequest) (uuid.UUID, error)
	Decommission(ctx context.Context, actor access.Principal, id uuid.UUID) (Namespace, error)
	DecommissionTenant(ctx context.Context, actor access.Principal, tenantID uuid.UUID) ([]Namespace, error)
}
