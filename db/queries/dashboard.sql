-- name: ActiveOperations :many
-- Operations in the given tenants under way (queued or running) and waiting for approval, at
-- most 20 of each, oldest first. The statuses are written out so that a plan kept for any
-- tenants still reads the index of active operations.
SELECT * FROM (
    -- plan: kept (the tenants' switch picks no index: active operations are few)
    (SELECT o.id, o.kind, o.status, o.created_at, o.started_at, d.id AS deployment_id, d.name AS deployment_name,
         e.id AS environment_id, e.name AS environment_name, t.id AS tenant_id, t.name AS tenant_name
     FROM operations o
     JOIN deployed_components d ON d.id = o.deployment_id
     JOIN environments e ON e.id = d.environment_id
     JOIN tenants t ON t.id = d.tenant_id
     WHERE o.status IN ('queued', 'running')
       AND (sqlc.arg(all_tenants)::boolean OR d.tenant_id = ANY(sqlc.arg(tenant_ids)::uuid[]))
     ORDER BY o.created_at, o.id
     LIMIT 20)
    UNION ALL
    (SELECT o.id, o.kind, o.status, o.created_at, o.started_at, d.id AS deployment_id, d.name AS deployment_name,
         e.id AS environment_id, e.name AS environment_name, t.id AS tenant_id, t.name AS tenant_name
     FROM operations o
     JOIN deployed_components d ON d.id = o.deployment_id
     JOIN environments e ON e.id = d.environment_id
     JOIN tenants t ON t.id = d.tenant_id
     WHERE o.status = 'awaiting_approval'
       AND (sqlc.arg(all_tenants)::boolean OR d.tenant_id = ANY(sqlc.arg(tenant_ids)::uuid[]))
     ORDER BY o.created_at, o.id
     LIMIT 20)
) active
ORDER BY created_at, id;

-- name: RecentFailures :many
-- Operations that failed in the given tenants since a time, newest first.
SELECT o.id, o.kind, o.error, o.finished_at, d.id AS deployment_id, d.name AS deployment_name,
    e.id AS environment_id, e.name AS environment_name, t.id AS tenant_id, t.name AS tenant_name
FROM operations o
JOIN deployed_components d ON d.id = o.deployment_id
JOIN environments e ON e.id = d.environment_id
JOIN tenants t ON t.id = d.tenant_id
WHERE o.status = 'failed' AND o.finished_at >= sqlc.arg(since)::timestamptz
  -- plan: kept (the tenants' switch picks no index: a week's failures are few)
  AND (sqlc.arg(all_tenants)::boolean OR d.tenant_id = ANY(sqlc.arg(tenant_ids)::uuid[]))
ORDER BY o.finished_at DESC, o.id DESC
LIMIT 8;

-- name: FirstSteps :one
-- What a fresh install has done yet of the steps that make it useful, in the tenants people
-- use (never the system tenant's): the dashboard's checklist for provider admins.
SELECT
    EXISTS (SELECT 1 FROM tenants WHERE deleted_at IS NULL AND NOT system) AS has_tenant,
    EXISTS (SELECT 1 FROM memberships m JOIN tenants t ON t.id = m.tenant_id
            WHERE t.deleted_at IS NULL AND NOT t.system) AS has_member,
    EXISTS (SELECT 1 FROM environments e JOIN tenants t ON t.id = e.tenant_id
            WHERE e.deleted_at IS NULL AND t.deleted_at IS NULL AND NOT t.system) AS has_environment,
    EXISTS (SELECT 1 FROM ipam_pools) AS has_pool,
    EXISTS (SELECT 1 FROM landing_zones WHERE status = 'published') AS has_zone,
    EXISTS (SELECT 1 FROM deployed_components d JOIN tenants t ON t.id = d.tenant_id
            WHERE t.deleted_at IS NULL AND NOT t.system) AS has_deployment;
