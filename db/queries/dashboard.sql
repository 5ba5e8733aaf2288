-- name: ActiveOperations :many
-- Operations queued, running or waiting for approval in the given tenants, oldest first.
SELECT o.id, o.kind, o.status, o.created_at, o.started_at, d.id AS deployment_id, d.name AS deployment_name,
    e.name AS environment_name, t.name AS tenant_name
FROM operations o
JOIN deployed_components d ON d.id = o.deployment_id
JOIN environments e ON e.id = d.environment_id
JOIN tenants t ON t.id = d.tenant_id
WHERE o.status IN ('queued', 'running', 'awaiting_approval')
  AND (sqlc.arg(all_tenants)::boolean OR d.tenant_id = ANY(sqlc.arg(tenant_ids)::uuid[]))
ORDER BY o.created_at, o.id
LIMIT 20;

-- name: RecentFailures :many
-- Operations that failed in the given tenants since a time, newest first.
SELECT o.id, o.kind, o.error, o.finished_at, d.id AS deployment_id, d.name AS deployment_name,
    e.name AS environment_name, t.name AS tenant_name
FROM operations o
JOIN deployed_components d ON d.id = o.deployment_id
JOIN environments e ON e.id = d.environment_id
JOIN tenants t ON t.id = d.tenant_id
WHERE o.status = 'failed' AND o.finished_at >= sqlc.arg(since)::timestamptz
  AND (sqlc.arg(all_tenants)::boolean OR d.tenant_id = ANY(sqlc.arg(tenant_ids)::uuid[]))
ORDER BY o.finished_at DESC, o.id DESC
LIMIT 8;
