-- name: CreateDeployment :one
INSERT INTO deployed_components (id, tenant_id, environment_id, component_id, version, name, parameters,
    secret_parameters, secret_key_id, project, stack, state_location, created_by)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
RETURNING *;

-- name: GetDeployment :one
SELECT d.*, c.name AS component_name, e.name AS environment_name
FROM deployed_components d
JOIN components c ON c.id = d.component_id
JOIN environments e ON e.id = d.environment_id
WHERE d.id = $1;

-- name: ListDeployments :many
SELECT d.*, c.name AS component_name, e.name AS environment_name
FROM deployed_components d
JOIN components c ON c.id = d.component_id
JOIN environments e ON e.id = d.environment_id
WHERE sqlc.arg(all_tenants)::boolean OR d.tenant_id = ANY(sqlc.arg(tenant_ids)::uuid[])
ORDER BY d.created_at DESC
LIMIT 200;

-- name: SetDeploymentStatus :exec
UPDATE deployed_components SET status = $2, updated_at = now() WHERE id = $1;

-- name: RecordDeploymentOutputs :exec
UPDATE deployed_components SET status = $2, outputs = $3, updated_at = now() WHERE id = $1;

-- name: CreateOperation :one
INSERT INTO operations (deployment_id, kind, requested_by, parameters, target_version)
VALUES ($1, $2, $3, $4, $5)
RETURNING *;

-- name: GetOperation :one
SELECT * FROM operations WHERE id = $1;

-- name: ListOperations :many
SELECT * FROM operations WHERE deployment_id = $1 ORDER BY created_at DESC, id DESC;

-- name: EarlierQueued :one
-- Whether an older request on the same deployment is still waiting: operations run in order.
SELECT EXISTS (
    SELECT 1 FROM operations o
    WHERE o.deployment_id = sqlc.arg(deployment_id) AND o.status = 'queued'
      AND (o.created_at, o.id) < (sqlc.arg(created_at)::timestamptz, sqlc.arg(id)::uuid)
);

-- name: ClaimOperation :one
-- Takes a queued operation, or a running one whose worker stopped beating.
UPDATE operations SET status = 'running', lease = sqlc.arg(lease), heartbeat_at = now(),
    started_at = coalesce(started_at, now()), updated_at = now()
WHERE id = sqlc.arg(id)
  AND (status = 'queued' OR (status = 'running' AND heartbeat_at < now() - interval '1 minute'))
RETURNING *;

-- name: HeartbeatOperation :one
-- Returns whether a cancel was asked for; no row means the lease was lost.
UPDATE operations SET heartbeat_at = now() WHERE id = $1 AND lease = $2 AND status = 'running'
RETURNING cancel_requested_at IS NOT NULL AS cancel_requested;

-- name: FinishOperation :execrows
UPDATE operations SET status = $3, error = $4, changes = $5, finished_at = now(), lease = NULL, updated_at = now()
WHERE id = $1 AND lease = $2;

-- name: CancelQueuedOperation :execrows
UPDATE operations SET status = 'cancelled', error = 'cancelled before it started', finished_at = now(), updated_at = now()
WHERE id = $1 AND status = 'queued';

-- name: RequestOperationCancel :execrows
UPDATE operations SET cancel_requested_at = now(), updated_at = now() WHERE id = $1 AND status = 'running';

-- name: StaleOperations :many
SELECT id FROM operations WHERE status = 'running' AND heartbeat_at < now() - interval '1 minute';

-- name: AppendOperationLog :exec
INSERT INTO operation_logs (operation_id, line) VALUES ($1, $2);

-- name: OperationLogs :many
SELECT id, created_at, line FROM operation_logs WHERE operation_id = $1 AND id > $2 ORDER BY id LIMIT 1000;

-- name: ReleaseOperation :exec
-- Hands a running operation back to the queue for its job's next attempt.
UPDATE operations SET status = 'queued', lease = NULL, updated_at = now() WHERE id = $1 AND lease = $2;

-- name: CountOperationLogs :one
SELECT count(*) FROM operation_logs WHERE operation_id = $1;

-- name: MarkLogTruncated :exec
UPDATE operations SET log_truncated = true WHERE id = $1;
