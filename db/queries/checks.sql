-- name: CreateCheck :one
INSERT INTO component_checks (component_id, code, input_schema, requested_by, landing_zone_id)
VALUES ($1, $2, $3, $4, sqlc.narg(landing_zone_id)) RETURNING *;

-- name: GetCheck :one
SELECT * FROM component_checks WHERE id = $1;

-- name: StartCheck :one
-- Claims a queued check; a check already finished is not run again. The clock, not the
-- transaction's start: the claim comes after the count of running checks it waited its turn for.
UPDATE component_checks SET status = 'running', started_at = clock_timestamp(), updated_at = now(), output = ''
WHERE id = $1 AND status IN ('queued', 'running')
RETURNING *;

-- name: AppendCheckOutput :exec
-- Keeps the newest 256 KiB, after a note when more came: the end of the engine's output says
-- what went wrong. The note is 27 characters, line break included.
UPDATE component_checks SET output = CASE
        WHEN length(output) + length(sqlc.arg(output)::text) <= 262144 THEN output || sqlc.arg(output)::text
        ELSE '[… earlier output dropped]' || E'\n' || right(output || sqlc.arg(output)::text, 262144 - 27) END,
    updated_at = now()
WHERE id = sqlc.arg(id) AND status = 'running';

-- name: FinishCheck :exec
UPDATE component_checks SET status = $2, output = $3, changes = $4, finished_at = now(), updated_at = now()
WHERE id = $1;

-- name: LatestCheck :one
SELECT * FROM component_checks WHERE component_id = $1 ORDER BY created_at DESC LIMIT 1;

-- name: CheckTenant :one
-- The tenant whose limits a check counts against; NULL for a provider-level component.
-- No row when the check has finished: there is nothing left to run.
SELECT c.tenant_id FROM component_checks ch JOIN components c ON c.id = ch.component_id
WHERE ch.id = $1 AND ch.status IN ('queued', 'running');

-- name: CountRunningChecks :one
-- The tenant's checks running now, leaving out one (the caller's own, on a retry) and those
-- that started more than stale_secs ago: a check that outran its timeout was lost with its node.
SELECT count(*) FROM component_checks ch JOIN components c ON c.id = ch.component_id
WHERE c.tenant_id IS NOT DISTINCT FROM sqlc.narg(tenant_id)::uuid AND ch.status = 'running'
  AND ch.started_at > now() - make_interval(secs => sqlc.arg(stale_secs)::float8) AND ch.id <> sqlc.arg(id);

-- name: RecentChecks :one
-- How many checks the tenant asked for in the last window_secs, and in how many seconds the
-- oldest of them leaves that window.
SELECT count(*) AS n,
    coalesce(extract(epoch FROM min(ch.created_at) + make_interval(secs => sqlc.arg(window_secs)::float8) - now()), 0)::float8 AS frees_in
FROM component_checks ch JOIN components c ON c.id = ch.component_id
WHERE c.tenant_id IS NOT DISTINCT FROM sqlc.narg(tenant_id)::uuid
  AND ch.created_at > now() - make_interval(secs => sqlc.arg(window_secs)::float8);
