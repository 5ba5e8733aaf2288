-- Environments, deployments and the operations on them. An operation is the record of one
-- requested action; its steps are the saga's checkpoints; its log lines are kept in order.

CREATE TABLE environments (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id       uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    name            text NOT NULL,
    -- Landing zones arrive later; environments made before them have none.
    landing_zone_id uuid,
    status          text NOT NULL DEFAULT 'active'
        CHECK (status IN ('planned', 'provisioning', 'active', 'failed', 'decommissioning', 'decommissioned')),
    created_by      uuid REFERENCES users (id) ON DELETE SET NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    deleted_at      timestamptz,
    -- Lets deployments reference (environment, tenant) together, so they always agree.
    UNIQUE (id, tenant_id)
);
CREATE UNIQUE INDEX environments_name_key ON environments (tenant_id, lower(name)) WHERE deleted_at IS NULL;

CREATE TABLE deployed_components (
    id                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id         uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    environment_id    uuid NOT NULL,
    component_id      uuid NOT NULL REFERENCES components (id),
    version           integer NOT NULL,
    name              text NOT NULL,
    parameters        jsonb NOT NULL DEFAULT '{}',
    -- Secret parameters, sealed with the master key named by secret_key_id.
    secret_parameters bytea,
    secret_key_id     text,
    outputs           jsonb NOT NULL DEFAULT '{}',
    status            text NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'deploying', 'deployed', 'failed', 'destroying', 'destroyed', 'upgrading')),
    project           text NOT NULL,
    stack             text NOT NULL,
    state_location    text NOT NULL DEFAULT '',
    created_by        uuid REFERENCES users (id) ON DELETE SET NULL,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (component_id, version) REFERENCES component_versions (component_id, version),
    FOREIGN KEY (environment_id, tenant_id) REFERENCES environments (id, tenant_id)
);
CREATE UNIQUE INDEX deployed_components_name_key ON deployed_components (environment_id, lower(name))
    WHERE status <> 'destroyed';

CREATE TABLE operations (
    id                  uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    deployment_id       uuid NOT NULL REFERENCES deployed_components (id) ON DELETE CASCADE,
    kind                text NOT NULL CHECK (kind IN ('preview', 'deploy', 'update', 'upgrade', 'refresh', 'destroy')),
    status              text NOT NULL DEFAULT 'queued'
        CHECK (status IN ('queued', 'running', 'awaiting_approval', 'succeeded', 'failed', 'cancelled', 'rejected')),
    requested_by        uuid REFERENCES users (id) ON DELETE SET NULL,
    parameters          jsonb NOT NULL DEFAULT '{}',
    target_version      integer,
    error               text NOT NULL DEFAULT '',
    exit_code           integer,
    changes             jsonb NOT NULL DEFAULT '{}',
    -- Who holds the operation now and when they last said so; a stale heartbeat lets another
    -- worker take over.
    lease               uuid,
    heartbeat_at        timestamptz,
    cancel_requested_at timestamptz,
    log_truncated       boolean NOT NULL DEFAULT false,
    started_at          timestamptz,
    finished_at         timestamptz,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now()
);
-- One operation at a time per deployment; later ones wait, queued, in order.
CREATE UNIQUE INDEX operations_one_active ON operations (deployment_id) WHERE status IN ('running', 'awaiting_approval');
CREATE INDEX operations_deployment_idx ON operations (deployment_id, created_at DESC);
CREATE INDEX operations_stale_idx ON operations (heartbeat_at) WHERE status = 'running';

CREATE TABLE operation_steps (
    operation_id uuid NOT NULL REFERENCES operations (id) ON DELETE CASCADE,
    position     integer NOT NULL,
    name         text NOT NULL,
    status       text NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'running', 'done', 'failed', 'undoing', 'undone', 'undo_failed')),
    result       jsonb NOT NULL DEFAULT 'null',
    error        text NOT NULL DEFAULT '',
    attempts     integer NOT NULL DEFAULT 0,
    started_at   timestamptz,
    finished_at  timestamptz,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (operation_id, name)
);

CREATE TABLE operation_logs (
    id           bigserial PRIMARY KEY,
    operation_id uuid NOT NULL REFERENCES operations (id) ON DELETE CASCADE,
    created_at   timestamptz NOT NULL DEFAULT now(),
    line         text NOT NULL
);
CREATE INDEX operation_logs_operation_idx ON operation_logs (operation_id, id);
