-- The inventory (issue 36): one configuration item per resource Nimbus manages, written by the
-- end of the operation that made, changed or deleted it, in the transaction that records that
-- end; and, later, what discovery finds in a zone's cloud that Nimbus does not manage.

CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- What the engine reported a resource became: the provider's id and its plain outputs, for the
-- inventory to take as the operation ends.
ALTER TABLE operation_resources
    ADD COLUMN provider_id text NOT NULL DEFAULT '',
    ADD COLUMN outputs     jsonb NOT NULL DEFAULT '{}';

CREATE TABLE inventory_items (
    id                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    urn               text NOT NULL DEFAULT '',
    type              text NOT NULL,
    provider_id       text NOT NULL DEFAULT '',
    name              text NOT NULL,
    -- What people search by, taken from the outputs: IP addresses, host names, the image.
    addresses         text[] NOT NULL DEFAULT '{}',
    fqdns             text[] NOT NULL DEFAULT '{}',
    image             text NOT NULL DEFAULT '',
    outputs           jsonb NOT NULL DEFAULT '{}',
    -- Other resources this one names by the provider's id, by the output that names them:
    -- {"networkId": "n-1"} puts a machine on a network.
    refs              jsonb NOT NULL DEFAULT '{}',
    -- The lower-cased words a search matches, in one column a trigram index serves.
    search            text NOT NULL DEFAULT '',
    tenant_id         uuid REFERENCES tenants (id) ON DELETE CASCADE,
    environment_id    uuid,
    landing_zone_id   uuid REFERENCES landing_zones (id) ON DELETE CASCADE,
    stack_instance_id uuid,
    slot              text,
    component_id      uuid REFERENCES components (id) ON DELETE SET NULL,
    component_version integer,
    deployment_id     uuid REFERENCES deployed_components (id) ON DELETE CASCADE,
    status            text NOT NULL
        CHECK (status IN ('active', 'changed', 'decommissioned', 'unmanaged', 'missing', 'ignored')),
    -- When the item took its status, and the operation that moved it there (none for discovery).
    status_at         timestamptz NOT NULL DEFAULT now(),
    operation_id      uuid REFERENCES operations (id) ON DELETE SET NULL,
    created_operation_id uuid REFERENCES operations (id) ON DELETE SET NULL,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now()
);

-- A managed resource is one item for the life of its deployment.
CREATE UNIQUE INDEX inventory_items_resource_key ON inventory_items (deployment_id, urn) WHERE deployment_id IS NOT NULL;
-- Keyset paging, newest first, over everything and within a tenant.
CREATE INDEX inventory_items_page_idx ON inventory_items (created_at DESC, id DESC);
CREATE INDEX inventory_items_tenant_page_idx ON inventory_items (tenant_id, created_at DESC, id DESC);
-- A search by any part of an address, a name, a host name or an id.
CREATE INDEX inventory_items_search_idx ON inventory_items USING gin (search gin_trgm_ops);
-- Relations are found by the provider's id.
CREATE INDEX inventory_items_provider_id_idx ON inventory_items (provider_id) WHERE provider_id <> '';
