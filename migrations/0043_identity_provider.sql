-- The OpenID Connect identity provider people may sign in with (at most one: the singleton
-- column). The endpoints are those its discovery document named when a provider admin saved it,
-- so a sign-in fetches no discovery document; the client secret is sealed with the master key.
CREATE TABLE identity_provider (
    singleton              boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    name                   text NOT NULL,
    issuer                 text NOT NULL,
    client_id              text NOT NULL,
    client_secret          bytea NOT NULL,
    secret_key_id          text NOT NULL,
    scopes                 text[] NOT NULL,
    groups_claim           text NOT NULL,
    local_login            boolean NOT NULL DEFAULT true,
    authorization_endpoint text NOT NULL,
    token_endpoint         text NOT NULL,
    jwks_uri               text NOT NULL,
    end_session_endpoint   text NOT NULL DEFAULT '',
    set_by                 uuid REFERENCES users (id) ON DELETE SET NULL,
    created_at             timestamptz NOT NULL DEFAULT now(),
    updated_at             timestamptz NOT NULL DEFAULT now()
);

-- Which role a value of the groups claim gives: a role in a tenant, or provider admin (no tenant).
CREATE TABLE identity_provider_mappings (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    claim      text NOT NULL,
    role       text NOT NULL CHECK (role IN ('read_only', 'user', 'tenant_admin', 'provider_admin')),
    tenant_id  uuid REFERENCES tenants (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CHECK ((role = 'provider_admin') = (tenant_id IS NULL)),
    UNIQUE NULLS NOT DISTINCT (claim, tenant_id)
);

-- The user an identity provider's subject signs in as. A user is found by the subject, never by
-- email alone: whoever controls an email at the provider does not thereby own a local account.
CREATE TABLE user_identities (
    issuer     text NOT NULL,
    subject    text NOT NULL,
    user_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (issuer, subject)
);
CREATE INDEX user_identities_user_idx ON user_identities (user_id);

-- Sign-ins sent to the identity provider and not yet back. The state is single-use: the
-- callback deletes its row, so a replayed state finds none. The binding is a secret in a
-- short-lived cookie of the browser that began the sign-in; only hashes are kept.
CREATE TABLE oidc_logins (
    state_hash   bytea PRIMARY KEY,
    binding_hash bytea NOT NULL,
    nonce        text NOT NULL,
    -- The PKCE verifier is what makes a stolen authorization code useless: sealed, as every
    -- secret Nimbus keeps.
    verifier        bytea NOT NULL,
    verifier_key_id text NOT NULL,
    next         text NOT NULL,
    expires_at   timestamptz NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX oidc_logins_expires_idx ON oidc_logins (expires_at);
