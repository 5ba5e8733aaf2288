-- name: RecordDrift :one
-- What a drift check found, or that the resources are as recorded again (a reconcile, an
-- accept): the deployment's drift as it was before, for the event that tells of the change.
UPDATE deployed_components d SET drift_status = sqlc.arg(drift_status), drift = sqlc.arg(drift), drift_checked_at = now()
FROM deployed_components before
WHERE d.id = sqlc.arg(id) AND before.id = d.id
RETURNING before.drift_status AS was, before.drift AS was_drift, d.stack_instance_id, d.environment_id, d.tenant_id, d.name;

-- name: DriftDue :many
-- The deployments whose drift check is due: deployed, in an active environment whose own
-- interval or else its zone's is set, nothing under way on them, and whose last check was asked
-- for (or which were made) an interval ago, a failed one too, plus a share of up to a tenth of the interval of their own, so that a zone's
-- many deployments are not all checked at once. The most overdue first.
SELECT d.id
FROM deployed_components d
JOIN environments e ON e.id = d.environment_id AND e.status = 'active' AND e.deleted_at IS NULL
LEFT JOIN landing_zones z ON z.id = e.landing_zone_id
WHERE d.status = 'deployed' AND coalesce(e.drift_interval, z.drift_interval) > interval '0'
  AND coalesce((SELECT max(o.created_at) FROM operations o WHERE o.deployment_id = d.id AND o.kind = 'drift_check'), d.created_at)
      + coalesce(e.drift_interval, z.drift_interval) * (1 + (abs(hashtext(d.id::text)) % 100) / 1000.0) <= now()
  AND NOT EXISTS (SELECT 1 FROM operations o WHERE o.deployment_id = d.id AND o.status IN ('queued', 'running', 'awaiting_approval'))
ORDER BY d.drift_checked_at NULLS FIRST
LIMIT sqlc.arg(max_rows);

-- name: SetEnvironmentDriftInterval :exec
UPDATE environments SET drift_interval = make_interval(secs => sqlc.narg(seconds)::float8), updated_at = now() WHERE id = sqlc.arg(id);

-- name: SetZoneDriftInterval :exec
UPDATE landing_zones SET drift_interval = make_interval(secs => sqlc.narg(seconds)::float8), updated_at = now() WHERE id = sqlc.arg(id);

-- name: DriftIntervals :one
-- An environment's own drift interval and its zone's, in seconds; -1 where unset.
SELECT coalesce(extract(epoch FROM e.drift_interval), -1)::float8 AS own, coalesce(extract(epoch FROM z.drift_interval), -1)::float8 AS zone
FROM environments e LEFT JOIN landing_zones z ON z.id = e.landing_zone_id
WHERE e.id = $1;

-- name: ZoneDriftInterval :one
-- A zone's drift interval in seconds; -1 when unset.
SELECT coalesce(extract(epoch FROM drift_interval), -1)::float8 AS seconds FROM landing_zones WHERE id = $1;

-- name: CountDrifted :one
-- The deployments of the tenants a viewer sees whose last check found drift.
SELECT count(*) FROM deployed_components
WHERE drift_status = 'drifted' AND status <> 'destroyed'
  -- plan: kept (the tenants' switch picks no index: drifted deployments are few)
  AND (sqlc.arg(all_tenants)::boolean OR tenant_id = ANY(sqlc.arg(tenant_ids)::uuid[]));
