-- Where Nimbus sends its own events: per tenant (or, without one, for every tenant), an HTTPS
-- endpoint, the types it wants, and the secret its deliveries are signed with.
CREATE TABLE event_subscriptions (
    id              uuid PRIMARY KEY,
    tenant_id       uuid REFERENCES tenants (id) ON DELETE CASCADE,
    name            text NOT NULL CHECK (name ~ '^[a-z][a-z0-9-]{0,39}$'),
    url             text NOT NULL,
    -- Globs over event types; empty takes every type.
    types           text[] NOT NULL DEFAULT '{}',
    secret          bytea NOT NULL,
    secret_key_id   text NOT NULL,
    active          boolean NOT NULL DEFAULT true,
    -- Attempts failed in a row; a subscription that keeps failing is turned off, saying why.
    failures        integer NOT NULL DEFAULT 0,
    failing_since   timestamptz,
    disabled_reason text NOT NULL DEFAULT '',
    created_by      uuid REFERENCES users (id) ON DELETE SET NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE NULLS NOT DISTINCT (tenant_id, name)
);

-- One event to one subscription, until it is delivered or given up.
CREATE TABLE event_deliveries (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    subscription_id uuid NOT NULL REFERENCES event_subscriptions (id) ON DELETE CASCADE,
    event_id        uuid NOT NULL REFERENCES event_log (id) ON DELETE CASCADE,
    status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed', 'cancelled')),
    attempts        integer NOT NULL DEFAULT 0,
    created_at      timestamptz NOT NULL DEFAULT now(),
    finished_at     timestamptz,
    UNIQUE (subscription_id, event_id)
);

CREATE INDEX event_deliveries_subscription_idx ON event_deliveries (subscription_id, created_at DESC);

-- Every attempt, as the receiver answered it.
CREATE TABLE event_delivery_attempts (
    delivery_id uuid NOT NULL REFERENCES event_deliveries (id) ON DELETE CASCADE,
    attempt     integer NOT NULL,
    at          timestamptz NOT NULL DEFAULT now(),
    status_code integer,
    error       text NOT NULL DEFAULT '',
    took_ms     integer NOT NULL DEFAULT 0,
    PRIMARY KEY (delivery_id, attempt)
);
