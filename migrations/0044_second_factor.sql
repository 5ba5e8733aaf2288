-- A local account's second factor: a time-based one-time password (TOTP). The secret is sealed
-- with the master key. enabled_at stays NULL until the user has typed a first code from it, so
-- an enrolment left half-way asks for nothing at sign-in.
CREATE TABLE user_totp (
    user_id       uuid PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    secret        bytea NOT NULL,
    secret_key_id text NOT NULL,
    enabled_at    timestamptz,
    -- The time step of the last code taken: a code of that step or an earlier one is refused,
    -- so a code seen over a shoulder or in a proxy's log cannot be used again.
    last_step     bigint NOT NULL DEFAULT 0,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);

-- Recovery codes for a lost phone: only their hashes, each good for one sign-in.
CREATE TABLE recovery_codes (
    user_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    code_hash  bytea NOT NULL,
    used_at    timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, code_hash)
);

-- Sign-ins whose password was right, waiting for the second factor. The binding is a secret in a
-- short-lived cookie of the browser that typed the password; only its hash is kept. No session
-- exists until the second step succeeds.
CREATE TABLE second_factor_logins (
    binding_hash bytea PRIMARY KEY,
    user_id      uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    attempts     integer NOT NULL DEFAULT 0,
    expires_at   timestamptz NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX second_factor_logins_expires_idx ON second_factor_logins (expires_at);
CREATE INDEX second_factor_logins_user_idx ON second_factor_logins (user_id);

-- A session opened with a password by a provider admin who has no second factor while the
-- operator requires one: it may only enrol (and sign out) until the factor is on.
ALTER TABLE sessions ADD COLUMN enrol_only boolean NOT NULL DEFAULT false;

-- Security keys (WebAuthn) registered as a second factor beside the authenticator app. A row
-- holds the key's public half, its signature count and flags as go-webauthn keeps them:
-- nothing secret.
CREATE TABLE security_keys (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id       uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    credential_id bytea NOT NULL UNIQUE,
    credential    jsonb NOT NULL,
    name          text NOT NULL,
    last_used_at  timestamptz,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX security_keys_user_idx ON security_keys (user_id);

-- WebAuthn ceremonies in flight: the challenge Nimbus sent a browser, until it answers. Each is
-- taken once. The key is a hash: of the user's id for registering a key, of the sign-in's
-- binding for signing in with one.
CREATE TABLE webauthn_ceremonies (
    key_hash   bytea PRIMARY KEY,
    user_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    session    jsonb NOT NULL,
    expires_at timestamptz NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
