-- Every API token expires and has a scope: full (whatever its user may do), read_only (safe
-- methods only) or tenant (within tenant_id alone). Tokens made before expiries were required
-- get one a year from now; expiry_assigned marks them, so the tokens page can say why.
ALTER TABLE api_tokens
    ADD COLUMN scope text NOT NULL DEFAULT 'full' CHECK (scope IN ('full', 'read_only', 'tenant')),
    ADD COLUMN tenant_id uuid REFERENCES tenants (id) ON DELETE CASCADE,
    ADD COLUMN expiry_assigned boolean NOT NULL DEFAULT false,
    ADD CONSTRAINT api_tokens_tenant_scope CHECK ((scope = 'tenant') = (tenant_id IS NOT NULL));
UPDATE api_tokens SET expires_at = now() + interval '1 year', expiry_assigned = true WHERE expires_at IS NULL;
ALTER TABLE api_tokens ALTER COLUMN expires_at SET NOT NULL;

-- A role in a tenant granted to a user by a provider admin until ends_at, on top of their
-- memberships. It ends by itself at ends_at (ended_why expired) or when revoked earlier.
CREATE TABLE elevations (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    tenant_id  uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    role       text NOT NULL CHECK (role IN ('read_only', 'user', 'tenant_admin')),
    reason     text NOT NULL CHECK (reason <> ''),
    granted_by uuid REFERENCES users (id) ON DELETE SET NULL,
    ends_at    timestamptz NOT NULL,
    status     text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'ended')),
    ended_why  text CHECK (ended_why IN ('expired', 'revoked')),
    ended_by   uuid REFERENCES users (id) ON DELETE SET NULL,
    ended_at   timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT elevations_ended_why CHECK ((status = 'ended') = (ended_why IS NOT NULL AND ended_at IS NOT NULL))
);
CREATE INDEX elevations_user_idx ON elevations (user_id) WHERE status = 'active';
CREATE INDEX elevations_due_idx ON elevations (ends_at) WHERE status = 'active';
CREATE INDEX elevations_recent_idx ON elevations (created_at DESC);
