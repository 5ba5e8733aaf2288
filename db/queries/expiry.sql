-- name: SetEnvironmentExpiry :exec
-- A new expiry. It leaves updated_at alone: that marks the last change of status, which the
-- graph runner compares with its operations.
UPDATE environments SET expires_at = $2 WHERE id = $1;

-- name: ExpiringEnvironments :many
-- Environments past their first warning point (a day before expiry, or halfway through a
-- shorter life) that are not being taken down already, soonest expiry first. One whose
-- decommissioning failed waits for a person to retry it.
SELECT e.id, e.tenant_id, e.name, e.status, e.created_at, e.expires_at::timestamptz AS expires_at
FROM environments e
WHERE e.expires_at IS NOT NULL AND e.deleted_at IS NULL
  AND e.status IN ('planned', 'provisioning', 'active', 'failed')
  AND (e.status <> 'failed' OR e.failed_transition IS DISTINCT FROM 'decommission')
  AND e.expires_at - least(interval '1 day', (e.expires_at - e.created_at) / 2) <= now()
ORDER BY e.expires_at
LIMIT 100;

-- name: RecordExpiryWarning :execrows
-- One warning of an expiry, recorded once: no row is written when it was sent already.
INSERT INTO environment_expiry_warnings (environment_id, expires_at, point) VALUES ($1, $2, $3)
ON CONFLICT DO NOTHING;

-- name: SetLandingZoneTTL :exec
UPDATE landing_zones SET default_ttl_seconds = $2, max_ttl_seconds = $3, updated_at = now() WHERE id = $1;

-- name: ExpiredEnvironmentInstances :many
-- An expired environment's stack instances not destroyed, and whether a destroy was asked of
-- each since the expiry: one asked for and failed is not asked again.
SELECT i.id, i.name, i.status,
    EXISTS (SELECT 1 FROM stack_runs r WHERE r.instance_id = i.id AND r.kind = 'destroy' AND r.created_at >= sqlc.arg(since)::timestamptz) AS asked
FROM stack_instances i
WHERE i.environment_id = sqlc.arg(environment_id) AND i.status <> 'destroyed'
ORDER BY i.name;
