-- Stacks: versioned graphs of components whose inputs are wired to the stack's parameters and
-- to other slots' outputs, with a lifecycle state machine and named day-2 operations. A stack
-- instance deploys each slot as an ordinary deployment; its runs (deploy, destroy, upgrade, a
-- transition's action, a day-2 operation) are graphs of operations taken one run at a time.

CREATE TABLE stacks (
    id                  uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    -- NULL: a provider stack, offered to every tenant; else the tenant's own (a fork, or made there).
    tenant_id           uuid REFERENCES tenants (id) ON DELETE CASCADE,
    provider_id         uuid NOT NULL REFERENCES semantic_providers (id),
    name                text NOT NULL,
    display_name        text NOT NULL DEFAULT '',
    description         text NOT NULL DEFAULT '',
    -- What the editor changes: parameters, slots, state machine and day-2 operations, in the
    -- shape of stack.Definition. Publishing snapshots it into stack_versions.
    draft               jsonb NOT NULL DEFAULT '{}',
    forked_from_id      uuid REFERENCES stacks (id),
    forked_from_version integer,
    created_by          uuid REFERENCES users (id) ON DELETE SET NULL,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    deleted_at          timestamptz,
    CHECK ((forked_from_id IS NULL) = (forked_from_version IS NULL))
);
CREATE UNIQUE INDEX stacks_name_key ON stacks (coalesce(tenant_id, '00000000-0000-0000-0000-000000000000'), lower(name))
    WHERE deleted_at IS NULL;

-- An immutable published snapshot: the stack's parameters, its slots (each a pinned component
-- version and the wiring of its inputs) and its state machine. Day-2 operations of the version
-- are rows of stack_day2_operations.
CREATE TABLE stack_versions (
    stack_id     uuid NOT NULL REFERENCES stacks (id) ON DELETE CASCADE,
    version      integer NOT NULL CHECK (version > 0),
    definition   jsonb NOT NULL,
    changelog    text NOT NULL CHECK (changelog <> ''),
    published_by uuid REFERENCES users (id) ON DELETE SET NULL,
    published_at timestamptz NOT NULL DEFAULT now(),
    -- An archived version deploys no new instance; one in use is never archived.
    archived_at  timestamptz,
    PRIMARY KEY (stack_id, version)
);

CREATE TABLE stack_day2_operations (
    stack_id            uuid NOT NULL,
    version             integer NOT NULL,
    name                text NOT NULL,
    display_name        text NOT NULL DEFAULT '',
    description         text NOT NULL DEFAULT '',
    input_schema        jsonb NOT NULL DEFAULT '{"type":"object","properties":{}}',
    required_states     text[] NOT NULL DEFAULT '{}',
    -- The slot actions, in order: [{slot, do: update|refresh|upgrade|redeploy, inputs: {input: CEL}}].
    actions             jsonb NOT NULL DEFAULT '[]',
    triggers_transition text NOT NULL DEFAULT '',
    position            integer NOT NULL DEFAULT 0,
    PRIMARY KEY (stack_id, version, name),
    FOREIGN KEY (stack_id, version) REFERENCES stack_versions (stack_id, version) ON DELETE CASCADE
);

CREATE TABLE stack_instances (
    id                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id         uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    environment_id    uuid NOT NULL,
    stack_id          uuid NOT NULL REFERENCES stacks (id),
    version           integer NOT NULL,
    name              text NOT NULL,
    -- The stack's parameters as given; secret ones sealed with the master key named by secret_key_id.
    parameters        jsonb NOT NULL DEFAULT '{}',
    secret_parameters bytea,
    secret_key_id     text,
    status            text NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'deploying', 'active', 'degraded', 'failed', 'destroying', 'destroyed', 'upgrading')),
    -- The state machine's state; NULL until every slot is deployed.
    current_state     text,
    state_entered_at  timestamptz,
    -- Why the instance last failed, in words.
    error             text NOT NULL DEFAULT '',
    deployed_at       timestamptz,
    created_by        uuid REFERENCES users (id) ON DELETE SET NULL,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (stack_id, version) REFERENCES stack_versions (stack_id, version),
    FOREIGN KEY (environment_id, tenant_id) REFERENCES environments (id, tenant_id)
);
CREATE UNIQUE INDEX stack_instances_name_key ON stack_instances (environment_id, lower(name)) WHERE status <> 'destroyed';
CREATE INDEX stack_instances_tenant_idx ON stack_instances (tenant_id, created_at DESC);
CREATE INDEX stack_instances_stack_idx ON stack_instances (stack_id, version);

-- Each slot of an instance is a deployment.
ALTER TABLE deployed_components
    ADD COLUMN stack_instance_id uuid REFERENCES stack_instances (id),
    ADD COLUMN slot text;
CREATE UNIQUE INDEX deployed_components_slot_key ON deployed_components (stack_instance_id, slot)
    WHERE stack_instance_id IS NOT NULL AND status <> 'destroyed';

-- A run is one piece of work on an instance: its deploy, destroy, upgrade or rollback, a
-- transition's action, a day-2 operation. Signals (a person, the API, a timeout, later events)
-- are runs queued behind the one under way: one runs at a time per instance, in order.
CREATE TABLE stack_runs (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    instance_id   uuid NOT NULL REFERENCES stack_instances (id) ON DELETE CASCADE,
    kind          text NOT NULL CHECK (kind IN ('deploy', 'destroy', 'upgrade', 'rollback', 'compensate', 'transition', 'day2')),
    status        text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'refused')),
    -- transition: the trigger fired; day2: the operation's name and the transition it fires after.
    trigger       text NOT NULL DEFAULT '',
    operation     text NOT NULL DEFAULT '',
    inputs        jsonb NOT NULL DEFAULT '{}',
    -- upgrade and rollback: the version the run moves the instance to, and from.
    from_version  integer,
    to_version    integer,
    -- Where the signal came from: person, api, timeout, day2, event.
    source        text NOT NULL DEFAULT 'person',
    requested_by  uuid REFERENCES users (id) ON DELETE SET NULL,
    -- Set on a first deploy: keep what was made when it fails, for a retry.
    keep_on_failure boolean NOT NULL DEFAULT false,
    error         text NOT NULL DEFAULT '',
    created_at    timestamptz NOT NULL DEFAULT now(),
    started_at    timestamptz,
    finished_at   timestamptz
);
CREATE UNIQUE INDEX stack_runs_one_active ON stack_runs (instance_id) WHERE status = 'running';
CREATE INDEX stack_runs_instance_idx ON stack_runs (instance_id, created_at DESC);

-- The graph of a run: each step one operation on one slot's deployment, started when the steps
-- it waits for have succeeded. operation_id is recorded with the operation it started, in one
-- transaction, so a restart knows what each step did.
CREATE TABLE stack_run_steps (
    run_id        uuid NOT NULL REFERENCES stack_runs (id) ON DELETE CASCADE,
    name          text NOT NULL,
    slot          text NOT NULL,
    action        text NOT NULL CHECK (action IN ('deploy', 'update', 'refresh', 'upgrade', 'redeploy', 'destroy')),
    after         text[] NOT NULL DEFAULT '{}',
    position      integer NOT NULL,
    operation_id  uuid REFERENCES operations (id) ON DELETE SET NULL,
    -- What the step changes, worked out when it starts (inputs from upstream outputs, a version).
    detail        jsonb NOT NULL DEFAULT '{}',
    PRIMARY KEY (run_id, name)
);

-- Every change of an instance's state, with what caused it and the operations it ran.
CREATE TABLE stack_state_history (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    instance_id  uuid NOT NULL REFERENCES stack_instances (id) ON DELETE CASCADE,
    from_state   text,
    to_state     text NOT NULL,
    trigger      text NOT NULL DEFAULT '',
    source       text NOT NULL DEFAULT 'person',
    actor        uuid REFERENCES users (id) ON DELETE SET NULL,
    run_id       uuid REFERENCES stack_runs (id) ON DELETE SET NULL,
    operations   uuid[] NOT NULL DEFAULT '{}',
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX stack_state_history_instance_idx ON stack_state_history (instance_id, created_at DESC);
