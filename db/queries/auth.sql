-- name: CreateSession :one
INSERT INTO sessions (token_hash, user_id, csrf_token, expires_at, enrol_only) VALUES ($1, $2, $3, $4, $5) RETURNING *;

-- name: GetSessionByHash :one
-- A session ends when unused until expires_at, and max_age_secs after sign-in however much
-- it is used.
-- With the roles its user holds now, as RolesOfUser reads them, in the same round trip: a
-- request reads both.
SELECT s.id AS session_id, s.csrf_token, s.expires_at, s.last_seen_at, s.created_at, s.enrol_only, sqlc.embed(u),
    roles.tenant_ids AS role_tenants, roles.roles AS role_names
FROM sessions s JOIN users u ON u.id = s.user_id
CROSS JOIN LATERAL (SELECT coalesce(array_agg(r.tenant_id), '{}')::uuid[] AS tenant_ids, coalesce(array_agg(r.role), '{}')::text[] AS roles
                    FROM roles_now r WHERE r.user_id = u.id) roles
WHERE s.token_hash = sqlc.arg(token_hash) AND s.expires_at > now()
  AND s.created_at > now() - make_interval(secs => sqlc.arg(max_age_secs)::float8)
  AND u.deleted_at IS NULL AND u.disabled_at IS NULL;

-- name: TouchSession :exec
UPDATE sessions SET last_seen_at = now(), expires_at = $2 WHERE id = $1;

-- name: DeleteSession :exec
DELETE FROM sessions WHERE id = $1 AND user_id = $2;

-- name: DeleteExpiredSessions :execrows
DELETE FROM sessions WHERE expires_at <= now();

-- name: CreateAPIToken :one
INSERT INTO api_tokens (user_id, name, token_hash, prefix, expires_at, scope, tenant_id)
VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *;

-- name: GetAPITokenByHash :one
-- Expired tokens too, so that the answer can say when the token expired. With the roles its
-- user holds now, as GetSessionByHash.
SELECT t.id AS token_id, t.last_used_at, t.expires_at, t.scope, t.tenant_id, sqlc.embed(u),
    roles.tenant_ids AS role_tenants, roles.roles AS role_names
FROM api_tokens t JOIN users u ON u.id = t.user_id
CROSS JOIN LATERAL (SELECT coalesce(array_agg(r.tenant_id), '{}')::uuid[] AS tenant_ids, coalesce(array_agg(r.role), '{}')::text[] AS roles
                    FROM roles_now r WHERE r.user_id = u.id) roles
WHERE t.token_hash = $1 AND t.revoked_at IS NULL AND u.deleted_at IS NULL AND u.disabled_at IS NULL;

-- name: TouchAPIToken :exec
UPDATE api_tokens SET last_used_at = now() WHERE id = $1;

-- name: ListAPITokens :many
SELECT sqlc.embed(t), coalesce(n.name, '')::text AS tenant_name
FROM api_tokens t LEFT JOIN tenants n ON n.id = t.tenant_id
WHERE t.user_id = $1 AND t.revoked_at IS NULL ORDER BY t.created_at DESC;

-- name: GetAPIToken :one
SELECT * FROM api_tokens WHERE id = $1 AND user_id = $2 AND revoked_at IS NULL;

-- name: RevokeAPIToken :execrows
UPDATE api_tokens SET revoked_at = now(), updated_at = now() WHERE id = $1 AND user_id = $2 AND revoked_at IS NULL;

-- name: RecordLoginAttempt :one
-- Every attempt is recorded before the password is checked, so concurrent guesses count.
INSERT INTO login_failures (email, client_ip) VALUES ($1, $2) RETURNING id;

-- name: CountLoginAttempts :one
SELECT count(*) FILTER (WHERE lower(email) = lower(sqlc.arg(email)))::bigint AS by_pair,
       count(*)::bigint AS by_ip
FROM login_failures
WHERE client_ip = sqlc.arg(client_ip) AND created_at > sqlc.arg(since)::timestamptz;

-- name: ForgetLoginAttempt :exec
DELETE FROM login_failures WHERE id = $1;

-- name: ClearLoginAttempts :exec
-- Signing in clears the pair's earlier failures: whoever is at that address knows the password.
DELETE FROM login_failures WHERE lower(email) = lower(sqlc.arg(email)) AND client_ip = sqlc.arg(client_ip);

-- name: DeleteOldLoginFailures :execrows
DELETE FROM login_failures WHERE created_at < $1;
