-- name: GetIdentityProvider :one
SELECT * FROM identity_provider;

-- name: SetIdentityProvider :one
INSERT INTO identity_provider (name, issuer, client_id, client_secret, secret_key_id, scopes, groups_claim, local_login,
    authorization_endpoint, token_endpoint, jwks_uri, end_session_endpoint, set_by)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
ON CONFLICT (singleton) DO UPDATE SET name = excluded.name, issuer = excluded.issuer, client_id = excluded.client_id,
    client_secret = excluded.client_secret, secret_key_id = excluded.secret_key_id, scopes = excluded.scopes,
    groups_claim = excluded.groups_claim, local_login = excluded.local_login,
    authorization_endpoint = excluded.authorization_endpoint, token_endpoint = excluded.token_endpoint,
    jwks_uri = excluded.jwks_uri, end_session_endpoint = excluded.end_session_endpoint, set_by = excluded.set_by,
    updated_at = now()
RETURNING *;

-- name: RemoveIdentityProvider :execrows
DELETE FROM identity_provider;

-- name: ListIdentityProviderMappings :many
SELECT m.claim, m.role, m.tenant_id, coalesce(t.name, '')::text AS tenant_name
FROM identity_provider_mappings m LEFT JOIN tenants t ON t.id = m.tenant_id AND t.deleted_at IS NULL
WHERE m.tenant_id IS NULL OR t.id IS NOT NULL
ORDER BY m.claim, lower(t.name);

-- name: ClearIdentityProviderMappings :exec
DELETE FROM identity_provider_mappings;

-- name: AddIdentityProviderMapping :exec
INSERT INTO identity_provider_mappings (claim, role, tenant_id) VALUES ($1, $2, $3);

-- name: GetTenantByName :one
SELECT * FROM tenants WHERE lower(name) = lower($1) AND deleted_at IS NULL;

-- name: GetUserIdentity :one
SELECT u.* FROM user_identities i JOIN users u ON u.id = i.user_id
WHERE i.issuer = $1 AND i.subject = $2 AND u.deleted_at IS NULL;

-- name: AddUserIdentity :exec
INSERT INTO user_identities (issuer, subject, user_id) VALUES ($1, $2, $3);

-- name: UserHasIdentity :one
SELECT EXISTS (SELECT 1 FROM user_identities WHERE user_id = $1);

-- name: SetProviderAdmin :exec
UPDATE users SET is_provider_admin = $2, updated_at = now() WHERE id = $1 AND deleted_at IS NULL;

-- name: StartOIDCLogin :exec
INSERT INTO oidc_logins (state_hash, binding_hash, nonce, verifier, verifier_key_id, next, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7);

-- name: TakeOIDCLogin :one
-- A state is taken once: a second callback with it finds nothing.
DELETE FROM oidc_logins WHERE state_hash = $1 RETURNING *;

-- name: DeleteExpiredOIDCLogins :execrows
DELETE FROM oidc_logins WHERE expires_at <= now();
