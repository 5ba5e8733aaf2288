-- Events coming in: where they come from (sources, per landing zone), how a stack version
-- turns them into transitions of its instances (routing rules), and what became of each one
-- (the event log).

CREATE TABLE event_sources (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    landing_zone_id uuid NOT NULL REFERENCES landing_zones (id) ON DELETE CASCADE,
    name            text NOT NULL CHECK (name ~ '^[a-z][a-z0-9-]{0,39}$'),
    kind            text NOT NULL CHECK (kind IN ('webhook', 'cloud_provider', 'nimbus')),
    -- What a poller needs (cloud_provider); empty for the others.
    config          jsonb NOT NULL DEFAULT '{}',
    -- A webhook's shared secret, sealed with the master key named by secret_key_id: senders
    -- present it as a bearer token or sign with it.
    secret          bytea,
    secret_key_id   text,
    active          boolean NOT NULL DEFAULT true,
    created_by      uuid REFERENCES users (id) ON DELETE SET NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (landing_zone_id, name),
    CHECK (kind <> 'webhook' OR secret IS NOT NULL AND secret_key_id IS NOT NULL)
);

-- A version's rules, in the order they are tried: the first that matches an event sends its
-- trigger to the instance the event names.
CREATE TABLE event_routing_rules (
    stack_id    uuid NOT NULL,
    version     integer NOT NULL,
    position    integer NOT NULL,
    -- The kind of source the event came from; '' for any.
    source_kind text NOT NULL DEFAULT '' CHECK (source_kind IN ('', 'webhook', 'cloud_provider', 'nimbus')),
    -- A glob over the event's type: vm.*, alert.firing.
    event_type  text NOT NULL,
    -- A CEL expression over event, true for the events the rule takes; '' takes all.
    filter      text NOT NULL DEFAULT '',
    trigger     text NOT NULL,
    PRIMARY KEY (stack_id, version, position),
    FOREIGN KEY (stack_id, version) REFERENCES stack_versions (stack_id, version) ON DELETE CASCADE
);

-- Every event accepted, written before it is routed so that a crash loses none; the router
-- fills in what it found. Payloads are kept with secrets redacted.
CREATE TABLE event_log (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    source_id       uuid REFERENCES event_sources (id) ON DELETE SET NULL,
    landing_zone_id uuid REFERENCES landing_zones (id) ON DELETE CASCADE,
    source_kind     text NOT NULL,
    -- The sender's own id of the event: the same one twice is stored once.
    event_id        text NOT NULL,
    type            text NOT NULL,
    subject         text NOT NULL DEFAULT '',
    occurred_at     timestamptz,
    received_at     timestamptz NOT NULL DEFAULT now(),
    payload         jsonb NOT NULL,
    -- Where the router found the event's target: the instance, or the deployment only.
    tenant_id       uuid REFERENCES tenants (id) ON DELETE CASCADE,
    environment_id  uuid,
    instance_id     uuid REFERENCES stack_instances (id) ON DELETE SET NULL,
    deployment_id   uuid REFERENCES deployed_components (id) ON DELETE SET NULL,
    -- pending until routed; then unrouted (no target), unmatched (no rule took it), refused
    -- (the instance's state does not take the trigger) or signalled (a transition run queued).
    outcome         text NOT NULL DEFAULT 'pending'
                    CHECK (outcome IN ('pending', 'unrouted', 'unmatched', 'refused', 'signalled')),
    detail          text NOT NULL DEFAULT '',
    rule_position   integer,
    trigger         text,
    run_id          uuid REFERENCES stack_runs (id) ON DELETE SET NULL,
    routed_at       timestamptz,
    -- Once per sender's id and source; a deleted source's events no longer collide.
    UNIQUE (source_id, event_id)
);

CREATE INDEX event_log_received_idx ON event_log (received_at DESC, id DESC);
CREATE INDEX event_log_tenant_idx ON event_log (tenant_id, received_at DESC, id DESC) WHERE tenant_id IS NOT NULL;
CREATE INDEX event_log_instance_idx ON event_log (instance_id, received_at DESC, id DESC) WHERE instance_id IS NOT NULL;
CREATE INDEX event_log_environment_idx ON event_log (environment_id, received_at DESC, id DESC) WHERE environment_id IS NOT NULL;
CREATE INDEX event_log_pending_idx ON event_log (received_at) WHERE outcome = 'pending';
