-- name: EnsureOperationStep :exec
INSERT INTO operation_steps (operation_id, position, name) VALUES ($1, $2, $3)
ON CONFLICT (operation_id, name) DO NOTHING;

-- name: ListOperationSteps :many
SELECT * FROM operation_steps WHERE operation_id = $1 ORDER BY position;

-- name: MarkOperationStep :execrows
UPDATE operation_steps SET
    status = sqlc.arg(status),
    result = coalesce(sqlc.narg(result)::jsonb, result),
    error = sqlc.arg(error),
    attempts = attempts + CASE WHEN sqlc.arg(status) = 'running' THEN 1 ELSE 0 END,
    started_at = CASE WHEN sqlc.arg(status) = 'running' THEN now() ELSE started_at END,
    finished_at = CASE WHEN sqlc.arg(status) IN ('done', 'failed', 'undone', 'undo_failed') THEN now() ELSE NULL END,
    updated_at = now()
WHERE operation_id = sqlc.arg(operation_id) AND name = sqlc.arg(name);
