-- Environments with a time to live: a landing zone may give each environment opened in it a
-- default and a maximum lifetime; at its expiry an environment is decommissioned on its own,
-- after warnings a day and an hour before.

ALTER TABLE landing_zones
    ADD COLUMN default_ttl_seconds bigint CHECK (default_ttl_seconds > 0),
    ADD COLUMN max_ttl_seconds bigint CHECK (max_ttl_seconds > 0),
    ADD CONSTRAINT landing_zones_ttl_within_max CHECK (default_ttl_seconds <= max_ttl_seconds);

-- NULL: the environment does not expire.
ALTER TABLE environments ADD COLUMN expires_at timestamptz;
CREATE INDEX environments_expiry_idx ON environments (expires_at)
    WHERE expires_at IS NOT NULL AND status NOT IN ('decommissioning', 'decommissioned');

-- The warnings sent, each once per expiry: extending an environment sets a new expiry, which
-- is warned of afresh.
CREATE TABLE environment_expiry_warnings (
    environment_id uuid NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    expires_at     timestamptz NOT NULL,
    point          text NOT NULL CHECK (point IN ('day', 'hour')),
    sent_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (environment_id, expires_at, point)
);
