-- A landing zone may name a provider stack, its tenant factory, that gives each tenant
-- provisioned on the zone's Kubernetes cluster a namespace and the account its deploys use.
ALTER TABLE landing_zones ADD COLUMN tenant_stack_id uuid REFERENCES stacks (id);

-- A tenant's namespace on a zone's cluster: made by the factory's instance in the zone's system
-- environment, and what a tenant's Kubernetes deploys run in, with a token of the namespace's
-- service account. One per tenant and zone; a namespace belongs to one tenant.
CREATE TABLE tenant_namespaces (
    id                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id         uuid NOT NULL REFERENCES tenants (id),
    landing_zone_id   uuid NOT NULL REFERENCES landing_zones (id),
    namespace         text NOT NULL,
    stack_instance_id uuid REFERENCES stack_instances (id) ON DELETE SET NULL,
    created_by        uuid REFERENCES users (id) ON DELETE SET NULL,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, landing_zone_id),
    UNIQUE (landing_zone_id, namespace)
);
