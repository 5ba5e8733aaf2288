-- name: CreateTenant :one
INSERT INTO tenants (name) VALUES ($1) RETURNING *;

-- name: GetTenant :one
SELECT * FROM tenants WHERE id = $1 AND deleted_at IS NULL;

-- name: TenantNameTaken :one
SELECT EXISTS (SELECT 1 FROM tenants WHERE lower(name) = lower($1) AND deleted_at IS NULL AND NOT system);

-- name: ListTenants :many
-- Every tenant for a provider admin (all_tenants), otherwise the tenants given, those the
-- principal holds a role in (by membership or elevation, within a token's scope); never the
-- system tenant, which holds landing zones' system services and has no members.
-- Members are counted as TenantContents counts them: deleted users are no one's members.
SELECT t.*, (SELECT count(*) FROM memberships m JOIN users u ON u.id = m.user_id
             WHERE m.tenant_id = t.id AND u.deleted_at IS NULL) AS member_count
FROM tenants t
WHERE t.deleted_at IS NULL AND NOT t.system
  AND (sqlc.arg(all_tenants)::boolean
       OR t.id = ANY(sqlc.arg(tenant_ids)::uuid[]))
ORDER BY lower(t.name);

-- name: ListMembers :many
SELECT m.tenant_id, m.user_id, m.role, m.created_at, u.email
FROM memberships m
JOIN users u ON u.id = m.user_id
WHERE m.tenant_id = $1 AND u.deleted_at IS NULL
ORDER BY lower(u.email);

-- name: GetMembership :one
SELECT * FROM memberships WHERE tenant_id = $1 AND user_id = $2;

-- name: UpsertMembership :one
INSERT INTO memberships (tenant_id, user_id, role) VALUES ($1, $2, $3)
ON CONFLICT (tenant_id, user_id) DO UPDATE SET role = excluded.role, updated_at = now()
RETURNING *;

-- name: DeleteMembership :execrows
DELETE FROM memberships WHERE tenant_id = $1 AND user_id = $2;

-- name: RenameTenant :one
UPDATE tenants SET name = sqlc.arg(name), updated_at = now()
WHERE id = sqlc.arg(id) AND deleted_at IS NULL AND NOT system
RETURNING *;

-- name: TenantContents :one
-- What keeps a tenant from being deleted: the people in it and what they made, still there.
SELECT
    (SELECT count(*) FROM memberships m JOIN users u ON u.id = m.user_id
     WHERE m.tenant_id = sqlc.arg(id) AND u.deleted_at IS NULL) AS members,
    (SELECT count(*) FROM environments e WHERE e.tenant_id = sqlc.arg(id) AND e.deleted_at IS NULL
     AND e.status <> 'decommissioned') AS environments,
    (SELECT count(*) FROM deployed_components d WHERE d.tenant_id = sqlc.arg(id) AND d.status <> 'destroyed') AS deployments,
    (SELECT count(*) FROM components c WHERE c.tenant_id = sqlc.arg(id) AND c.deleted_at IS NULL) AS components,
    (SELECT count(*) FROM tenant_namespaces n JOIN stack_instances i ON i.id = n.stack_instance_id
     WHERE n.tenant_id = sqlc.arg(id) AND i.status <> 'destroyed') AS namespaces;

-- name: DeleteTenant :execrows
-- Deleted tenants are kept, marked, for the audit log and the records that name them.
UPDATE tenants SET deleted_at = now(), updated_at = now()
WHERE id = $1 AND deleted_at IS NULL AND NOT system;

-- name: LockTenant :one
SELECT id FROM tenants WHERE id = $1 FOR UPDATE;

-- name: ShareTenant :one
-- A live tenant, held until the end of the caller's transaction so that it is not deleted under
-- what the caller adds to it. A delete that commits first leaves no row: the deleted_at
-- condition is checked again on the row as the delete left it.
SELECT * FROM tenants WHERE id = $1 AND deleted_at IS NULL FOR SHARE;

-- name: RequestTenantRemoval :exec
UPDATE tenants SET removal_requested_at = now(), updated_at = now() WHERE id = $1 AND deleted_at IS NULL;

-- name: DropTenantRemoval :exec
UPDATE tenants SET removal_requested_at = NULL, updated_at = now() WHERE id = $1;

-- name: LockTenantRemoval :one
-- A live tenant, locked, with when its removal was asked for (null when it was not).
SELECT id, name, removal_requested_at FROM tenants WHERE id = $1 AND deleted_at IS NULL FOR UPDATE;

-- name: TenantAdminEmails :many
-- Who administers a tenant, for telling others whom to ask.
SELECT u.email FROM memberships m JOIN users u ON u.id = m.user_id
WHERE m.tenant_id = $1 AND m.role = 'tenant_admin' AND u.deleted_at IS NULL
ORDER BY lower(u.email)
LIMIT 5;
