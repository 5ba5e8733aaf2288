-- name: CreateCheck :one
INSERT INTO component_checks (component_id, code, input_schema, requested_by)
VALUES ($1, $2, $3, $4) RETURNING *;

-- name: GetCheck :one
SELECT * FROM component_checks WHERE id = $1;

-- name: StartCheck :one
-- Claims a queued check; a check already finished is not run again.
UPDATE component_checks SET status = 'running', started_at = now(), updated_at = now(), output = ''
WHERE id = $1 AND status IN ('queued', 'running')
RETURNING *;

-- name: AppendCheckOutput :exec
-- Keeps the newest 256 KiB: the end of the engine's output says what went wrong.
UPDATE component_checks SET output = right(output || $2, 262144), updated_at = now() WHERE id = $1 AND status = 'running';

-- name: FinishCheck :exec
UPDATE component_checks SET status = $2, output = $3, changes = $4, finished_at = now(), updated_at = now()
WHERE id = $1;

-- name: LatestCheck :one
SELECT * FROM component_checks WHERE component_id = $1 ORDER BY created_at DESC LIMIT 1;
