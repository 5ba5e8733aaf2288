-- name: CreateUser :one
INSERT INTO users (email, password_hash, is_provider_admin) VALUES ($1, $2, $3) RETURNING *;

-- name: GetUser :one
SELECT * FROM users WHERE id = $1 AND deleted_at IS NULL;

-- name: GetUserByEmail :one
SELECT * FROM users WHERE lower(email) = lower($1) AND deleted_at IS NULL;

-- name: CountUsers :one
SELECT count(*) FROM users WHERE deleted_at IS NULL;

-- name: ListUsers :many
-- Every user for a provider admin (all_users), otherwise the users who belong to a tenant of
-- admin_tenants, those the viewer administers.
SELECT u.* FROM users u
WHERE u.deleted_at IS NULL
  AND (sqlc.arg(all_users)::boolean OR u.id IN (
       SELECT m.user_id FROM memberships m WHERE m.tenant_id = ANY(sqlc.arg(admin_tenants)::uuid[])))
ORDER BY lower(u.email);

-- name: UserSharesAdminTenant :one
-- Whether the user belongs to a tenant of admin_tenants, those the viewer administers.
SELECT EXISTS (
    SELECT 1 FROM memberships m WHERE m.user_id = $1 AND m.tenant_id = ANY(sqlc.arg(admin_tenants)::uuid[])
);

-- name: ListMembershipsOfUser :many
SELECT m.tenant_id, m.role, t.name AS tenant_name
FROM memberships m JOIN tenants t ON t.id = m.tenant_id
WHERE m.user_id = $1 AND t.deleted_at IS NULL
ORDER BY lower(t.name);

-- name: LockUsersForBootstrap :one
SELECT pg_advisory_xact_lock(121399085790580)::text; -- the migration lock key plus one

-- name: ListUserMemberships :many
-- The memberships of the given users in the tenants the viewer may see (all with all_tenants),
-- for the users list.
SELECT m.user_id, m.tenant_id, m.role, t.name AS tenant_name
FROM memberships m JOIN tenants t ON t.id = m.tenant_id
WHERE m.user_id = ANY(sqlc.arg(user_ids)::uuid[]) AND t.deleted_at IS NULL
  AND (sqlc.arg(all_tenants)::boolean OR m.tenant_id = ANY(sqlc.arg(tenant_ids)::uuid[]))
ORDER BY lower(t.name);

-- name: SetUserPassword :exec
UPDATE users SET password_hash = $2, updated_at = now() WHERE id = $1 AND deleted_at IS NULL;

-- name: UpdateUser :one
UPDATE users SET email = $2, is_provider_admin = $3, updated_at = now() WHERE id = $1 AND deleted_at IS NULL RETURNING *;

-- name: SetUserDisabled :one
UPDATE users SET disabled_at = CASE WHEN sqlc.arg(disabled)::boolean THEN coalesce(disabled_at, now()) END, updated_at = now()
WHERE id = $1 AND deleted_at IS NULL RETURNING *;

-- name: RemoveUser :exec
-- A removed user keeps their row, so the audit log and what they made still name them, and
-- frees their email for a new account.
UPDATE users SET deleted_at = now(), updated_at = now() WHERE id = $1 AND deleted_at IS NULL;

-- name: RemoveUserMemberships :exec
DELETE FROM memberships WHERE user_id = $1;

-- name: EndUserSessions :exec
-- Every session of the user but the one kept (none, with the nil ID).
DELETE FROM sessions WHERE user_id = $1 AND id <> sqlc.arg(keep)::uuid;

-- name: RevokeUserTokens :exec
UPDATE api_tokens SET revoked_at = now(), updated_at = now() WHERE user_id = $1 AND revoked_at IS NULL;

-- name: CountActiveProviderAdmins :one
-- Provider admins who can sign in, taken under a lock so that two admins cannot demote each
-- other at once and leave nobody.
SELECT count(*) FROM (SELECT id FROM users WHERE is_provider_admin AND deleted_at IS NULL AND disabled_at IS NULL FOR UPDATE) a;
