-- Landing zones shape where tenants deploy: one per provider backend, with the resolver
-- configuration its environments share, the system services deployed once for the zone, and
-- templates that environments are opened from. Approval policies make chosen operations wait
-- for a person's yes.

-- The provider's own tenant: it holds each landing zone's system services, so they are
-- deployments like any other. Nobody is a member; provider admins see it as they see all.
ALTER TABLE tenants ADD COLUMN system boolean NOT NULL DEFAULT false;
DROP INDEX tenants_name_key;
CREATE UNIQUE INDEX tenants_name_key ON tenants (lower(name)) WHERE deleted_at IS NULL AND NOT system;
CREATE UNIQUE INDEX tenants_one_system ON tenants (system) WHERE system;
INSERT INTO tenants (name, system) VALUES ('Provider (system services)', true);

CREATE TABLE landing_zones (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name        text NOT NULL,
    description text NOT NULL DEFAULT '',
    provider    text NOT NULL REFERENCES semantic_providers (name) ON UPDATE CASCADE,
    status      text NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'published', 'retired')),
    -- Where the zone's system services are deployed: an environment of the system tenant,
    -- made when the zone is created.
    system_environment_id uuid UNIQUE REFERENCES environments (id),
    created_by  uuid REFERENCES users (id) ON DELETE SET NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    published_at timestamptz,
    retired_at  timestamptz
);
CREATE UNIQUE INDEX landing_zones_name_key ON landing_zones (lower(name));

ALTER TABLE environments
    ADD CONSTRAINT environments_landing_zone_fk FOREIGN KEY (landing_zone_id) REFERENCES landing_zones (id),
    ADD COLUMN template_id uuid,
    -- What went wrong when provisioning or decommissioning failed, in words for the page.
    ADD COLUMN status_reason text NOT NULL DEFAULT '',
    -- Who started the provisioning or decommissioning under way: the operations its steps
    -- queue are theirs.
    ADD COLUMN status_by uuid REFERENCES users (id) ON DELETE SET NULL;
CREATE INDEX environments_landing_zone_idx ON environments (landing_zone_id) WHERE landing_zone_id IS NOT NULL;

-- A step of a provisioning tells the operations it started from older ones by comparing their
-- creation with the environment's last change of status. Both are stamped with the clock, not
-- the transaction's start: a step that waited for the environment's lock starts its operation
-- after the change it waited for.
ALTER TABLE operations ALTER COLUMN created_at SET DEFAULT clock_timestamp();

-- Resolver configurations belong to a landing zone, and an environment may override one type.
ALTER TABLE resolver_configurations
    ALTER COLUMN environment_id DROP NOT NULL,
    ADD COLUMN landing_zone_id uuid REFERENCES landing_zones (id) ON DELETE CASCADE,
    DROP CONSTRAINT resolver_configurations_environment_id_type_key,
    ADD CONSTRAINT resolver_configurations_one_scope CHECK ((environment_id IS NULL) <> (landing_zone_id IS NULL));
CREATE UNIQUE INDEX resolver_configurations_environment_key ON resolver_configurations (environment_id, type) WHERE environment_id IS NOT NULL;
CREATE UNIQUE INDEX resolver_configurations_zone_key ON resolver_configurations (landing_zone_id, type) WHERE landing_zone_id IS NOT NULL;

-- A pool belongs to one environment (and its tenant) or to a landing zone, shared by every
-- environment in it.
ALTER TABLE ipam_pools
    ALTER COLUMN tenant_id DROP NOT NULL,
    ALTER COLUMN environment_id DROP NOT NULL,
    ADD COLUMN landing_zone_id uuid REFERENCES landing_zones (id) ON DELETE CASCADE,
    ADD CONSTRAINT ipam_pools_one_scope CHECK ((environment_id IS NULL) <> (landing_zone_id IS NULL)
        AND (tenant_id IS NULL) = (environment_id IS NULL)),
    ADD CONSTRAINT ipam_pools_zone_name_key UNIQUE (landing_zone_id, name),
    ADD CONSTRAINT ipam_pools_zone_overlap EXCLUDE USING gist (landing_zone_id WITH =, prefix inet_ops WITH &&);

-- A template lists the components every environment made from it gets. Each zone also has one
-- system template: its system services, deployed into the zone's system environment when the
-- zone is published, just as an environment's mandatory components are when it is made.
CREATE TABLE environment_templates (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    landing_zone_id uuid NOT NULL REFERENCES landing_zones (id) ON DELETE CASCADE,
    name            text NOT NULL,
    description     text NOT NULL DEFAULT '',
    system          boolean NOT NULL DEFAULT false,
    -- A withdrawn template opens no more environments; those made from it keep it.
    withdrawn_at    timestamptz,
    created_by      uuid REFERENCES users (id) ON DELETE SET NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX environment_templates_name_key ON environment_templates (landing_zone_id, lower(name));
CREATE UNIQUE INDEX environment_templates_one_system ON environment_templates (landing_zone_id) WHERE system;

ALTER TABLE environments ADD CONSTRAINT environments_template_fk FOREIGN KEY (template_id) REFERENCES environment_templates (id);

-- The components every environment of a template gets, deployed in position order.
CREATE TABLE template_components (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    template_id  uuid NOT NULL REFERENCES environment_templates (id) ON DELETE CASCADE,
    component_id uuid NOT NULL REFERENCES components (id),
    name         text NOT NULL,
    parameters   jsonb NOT NULL DEFAULT '{}',
    position     integer NOT NULL
);
CREATE UNIQUE INDEX template_components_name_key ON template_components (template_id, lower(name));

-- Which deployment an environment's provisioning made for each template component: the next
-- one is deployed when the one before it succeeds.
ALTER TABLE deployed_components ADD COLUMN template_component_id uuid REFERENCES template_components (id);

-- The dashboard's lists: what runs now, and what failed lately.
CREATE INDEX operations_active_idx ON operations (created_at) WHERE status IN ('queued', 'running', 'awaiting_approval');
CREATE INDEX operations_failed_idx ON operations (finished_at DESC) WHERE status = 'failed';

CREATE TABLE approval_policies (
    id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    scope              text NOT NULL CHECK (scope IN ('landing_zone', 'environment', 'component')),
    scope_id           uuid NOT NULL,
    operations         text[] NOT NULL CHECK (operations <@ ARRAY['deploy', 'update', 'upgrade', 'destroy'] AND cardinality(operations) > 0),
    approvals_required integer NOT NULL DEFAULT 1 CHECK (approvals_required BETWEEN 1 AND 10),
    approver_role      text NOT NULL CHECK (approver_role IN ('user', 'tenant_admin', 'provider_admin')),
    created_by         uuid REFERENCES users (id) ON DELETE SET NULL,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX approval_policies_scope_idx ON approval_policies (scope, scope_id);

-- What an operation waiting for approval needs, and how the wait ended. An operation has one
-- request at a time: a void one (the deployment changed after the preview it showed) is
-- followed by a new one after a new preview.
CREATE TABLE approval_requests (
    id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    operation_id       uuid NOT NULL REFERENCES operations (id) ON DELETE CASCADE,
    tenant_id          uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    requested_by       uuid REFERENCES users (id) ON DELETE SET NULL,
    approvals_required integer NOT NULL CHECK (approvals_required BETWEEN 1 AND 10),
    approver_role      text NOT NULL CHECK (approver_role IN ('user', 'tenant_admin', 'provider_admin')),
    status             text NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'approved', 'rejected', 'expired', 'void', 'cancelled')),
    -- When the preview it shows was made; a change to the deployment after it voids the request.
    previewed_at       timestamptz NOT NULL,
    expires_at         timestamptz NOT NULL,
    decided_at         timestamptz,
    created_at         timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX approval_requests_operation_key ON approval_requests (operation_id) WHERE status <> 'void';
-- The queue, the count in the navigation and the expiry sweep read only pending requests.
CREATE INDEX approval_requests_pending_idx ON approval_requests (tenant_id, created_at) WHERE status = 'pending';

CREATE TABLE approval_decisions (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    request_id uuid NOT NULL REFERENCES approval_requests (id) ON DELETE CASCADE,
    user_id    uuid NOT NULL REFERENCES users (id),
    decision   text NOT NULL CHECK (decision IN ('approve', 'reject')),
    comment    text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now(),
    -- Nobody decides twice.
    UNIQUE (request_id, user_id)
);
