-- name: InsertAuditEvent :exec
INSERT INTO audit_events (actor_id, actor_email, tenant_id, action, target_type, target_id, diff)
VALUES ($1, $2, $3, $4, $5, $6, $7);

-- name: ListAuditEvents :many
-- Newest first, filtered; all_tenants lifts the tenant restriction for provider admins.
SELECT * FROM audit_events
WHERE (sqlc.arg(all_tenants)::boolean OR tenant_id = ANY(sqlc.arg(tenant_ids)::uuid[]))
  AND (sqlc.narg(actor)::text IS NULL OR actor_email ILIKE '%' || sqlc.narg(actor) || '%')
  AND (sqlc.narg(action)::text IS NULL OR action LIKE sqlc.narg(action) || '%')
  AND (sqlc.narg(target)::text IS NULL OR target_id = sqlc.narg(target) OR target_type = sqlc.narg(target))
  AND (sqlc.narg(since)::timestamptz IS NULL OR created_at >= sqlc.narg(since))
  AND (sqlc.narg(until)::timestamptz IS NULL OR created_at < sqlc.narg(until))
  AND (sqlc.narg(before_id)::bigint IS NULL OR id < sqlc.narg(before_id))
ORDER BY id DESC
LIMIT sqlc.arg(max_rows);
