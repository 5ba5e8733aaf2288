-- name: CreateEnvironment :one
INSERT INTO environments (tenant_id, name, created_by) VALUES ($1, $2, $3) RETURNING *;

-- name: GetEnvironment :one
SELECT e.*, t.name AS tenant_name FROM environments e JOIN tenants t ON t.id = e.tenant_id
WHERE e.id = $1 AND e.deleted_at IS NULL;

-- name: ListEnvironments :many
-- Environments of the tenants the viewer may see (all for provider admins), by tenant and name.
SELECT e.*, t.name AS tenant_name FROM environments e JOIN tenants t ON t.id = e.tenant_id
WHERE e.deleted_at IS NULL AND t.deleted_at IS NULL
  AND (sqlc.arg(all_tenants)::boolean OR e.tenant_id = ANY(sqlc.arg(tenant_ids)::uuid[]))
ORDER BY lower(t.name), lower(e.name);
