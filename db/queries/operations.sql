-- The moves of an operation and the writes of its steps' checkpoints: the only statements that
-- write operations and operation_steps, called from app/orchestration/deploy/lifecycle.go alone. A move between
-- statuses names the status it starts from, so that a move from anywhere else changes no row.

-- name: CreateOperation :one
INSERT INTO operations (deployment_id, kind, requested_by, parameters, secret_parameters, secret_key_id, target_version, rotate, applies, refresh,
    source_link, source_ref, source_commit, source_code, adopts)
VALUES ($1, $2, $3, $4, $5, $6, $7, sqlc.arg(rotate)::text[], $8, sqlc.arg(refresh),
    sqlc.narg(source_link), sqlc.arg(source_ref), sqlc.arg(source_commit), sqlc.narg(source_code), sqlc.narg(adopts))
RETURNING *;

-- name: StartRestore :one
-- A restore runs in the request that asks for it, holding the deployment's active slot. It
-- waits first while a backup copies the states, as ClaimOperation does.
INSERT INTO operations (deployment_id, kind, status, requested_by, lease, heartbeat_at, started_at)
SELECT $1, 'restore', 'running', $2, $3, now(), now()
WHERE (SELECT true FROM pg_advisory_xact_lock_shared(7369646570))
RETURNING *;

-- name: RequeueRestoredOperations :many
-- Sends every operation a restored database shows running back to the queue: the workers that
-- ran it belong to the installation the backup was taken of.
UPDATE operations SET status = 'queued', lease = NULL, updated_at = now()
WHERE status = 'running'
RETURNING id;

-- name: ClaimOperation :one
-- Takes a queued operation, or a running one whose worker stopped beating. It waits first
-- while a backup copies the stacks' states, holding the lock shared until the transaction
-- ends: an operation taken then could write a state that the backup's snapshot of the
-- database shows no operation running on. The key is deploy.backupGate's.
UPDATE operations SET status = 'running', lease = sqlc.arg(lease), heartbeat_at = now(),
    started_at = coalesce(started_at, now()), updated_at = now()
WHERE id = sqlc.arg(id)
  AND (status = 'queued' OR (status = 'running' AND heartbeat_at < now() - interval '1 minute'))
  AND (SELECT true FROM pg_advisory_xact_lock_shared(7369646570))
RETURNING *;

-- name: HeartbeatOperation :one
-- Returns whether a cancel was asked for; no row means the lease was lost.
UPDATE operations SET heartbeat_at = now() WHERE id = $1 AND lease = $2 AND status = 'running'
RETURNING (cancel_requested_at IS NOT NULL)::boolean AS cancel_requested;

-- name: SetOperationParameters :exec
-- The parameters an operation applies, once its resolvers filled them.
UPDATE operations SET parameters = $2 WHERE id = $1;

-- name: SetOperationSecrets :exec
UPDATE operations SET secret_parameters = $2, secret_key_id = $3 WHERE id = $1;

-- name: MarkLogTruncated :exec
UPDATE operations SET log_truncated = true WHERE id = $1;

-- name: HandBackOperation :execrows
-- Hands a running operation back to the queue for its job's next attempt.
UPDATE operations SET status = 'queued', lease = NULL, updated_at = now() WHERE id = $1 AND lease = $2 AND status = 'running';

-- name: RequeueStaleOperation :execrows
-- Sends a running operation whose worker stopped beating back to the queue, to wait there for a
-- place among its tenant's operations; one whose worker is alive is let be.
UPDATE operations SET status = 'queued', lease = NULL, updated_at = now()
WHERE id = $1 AND status = 'running' AND heartbeat_at < now() - interval '1 minute';

-- name: ParkOperation :execrows
-- An operation waiting for approval gives up its lease and keeps its deployment's active slot;
-- its job ends, and approving queues it again. One whose cancel was asked for is not parked.
UPDATE operations SET status = 'awaiting_approval', lease = NULL, approval_asked_at = now(), approval_ended_at = NULL, updated_at = now()
WHERE id = $1 AND lease = $2 AND status = 'running' AND cancel_requested_at IS NULL;

-- name: ResumeOperation :one
-- Hands an approved operation back to the workers; no row when it no longer waited.
UPDATE operations SET status = 'queued', approval_ended_at = now(), updated_at = now() WHERE id = $1 AND status = 'awaiting_approval'
RETURNING kind;

-- name: EndWaitingOperation :execrows
-- Its outcome is its status: rejected by its approvers, or cancelled while it waited.
UPDATE operations SET status = sqlc.arg(status), outcome = sqlc.arg(status), error = sqlc.arg(error), approval_ended_at = now(), finished_at = now(), updated_at = now()
WHERE id = sqlc.arg(id) AND status = 'awaiting_approval';

-- name: CancelQueuedOperation :execrows
UPDATE operations SET status = 'cancelled', outcome = 'cancelled', error = 'cancelled before it started', finished_at = now(), updated_at = now()
WHERE id = $1 AND status = 'queued';

-- name: CancelQueuedPreviews :execrows
UPDATE operations SET status = 'cancelled', outcome = 'cancelled', error = 'withdrawn before it started: its deployment was let go', finished_at = now(), updated_at = now()
WHERE deployment_id = $1 AND kind = 'preview' AND status = 'queued';

-- name: RequestOperationCancel :execrows
UPDATE operations SET cancel_requested_at = now(), updated_at = now() WHERE id = $1 AND status = 'running';

-- name: FinishOperation :execrows
-- Ends a running operation with its outcome as fields, beside the message it keeps.
UPDATE operations SET status = sqlc.arg(status), error = sqlc.arg(error), changes = sqlc.arg(changes), exit_code = sqlc.arg(exit_code),
    outcome = sqlc.arg(outcome), failed_step = sqlc.arg(failed_step), undone = sqlc.arg(undone), rolled_back = sqlc.arg(rolled_back),
    timed_out_after = sqlc.narg(timed_out_after), refusals = sqlc.arg(refusals),
    finished_at = now(), lease = NULL, updated_at = now()
WHERE id = sqlc.arg(id) AND lease = sqlc.arg(lease) AND status = 'running';

-- name: LoadOperationSteps :many
-- The operation's steps in their order, creating, each at its place in the list, those of
-- names not yet recorded. The steps read are those there before the statement began: the ones
-- it creates come from its INSERT.
WITH created AS (
    INSERT INTO operation_steps (operation_id, position, name)
    SELECT sqlc.arg(operation_id)::uuid, (s.position - 1)::integer, s.name
    FROM unnest(sqlc.arg(names)::text[]) WITH ORDINALITY AS s (name, position)
    ON CONFLICT (operation_id, name) DO NOTHING
    RETURNING *
)
SELECT * FROM created
UNION ALL
SELECT * FROM operation_steps WHERE operation_id = sqlc.arg(operation_id)
ORDER BY position;

-- name: PreviewResult :one
-- What a succeeded preview's step saved, its changes and the engine's plan, and when it began.
SELECT s.result, o.created_at FROM operation_steps s JOIN operations o ON o.id = s.operation_id
WHERE s.operation_id = $1 AND s.name = 'preview' AND s.status = 'done' AND o.kind = 'preview' AND o.status = 'succeeded';

-- name: ListOperationSteps :many
SELECT * FROM operation_steps WHERE operation_id = $1 ORDER BY position;

-- name: MarkOperationSteps :execrows
-- Moves steps of the operation, each to its status with its error and result (a NULL result
-- keeps the recorded one); none when one of the names is not a step of the operation. A step's
-- do runs from started_at to finished_at, its engine processes within it (their times given as
-- text, '' for none, as an array cannot hold a NULL time here); its undo runs later, from
-- undo_started_at to undo_finished_at. Running again starts them all afresh.
UPDATE operation_steps s SET
    status = m.status,
    result = coalesce(m.result, s.result),
    error = m.error,
    attempts = s.attempts + CASE WHEN m.status = 'running' THEN 1 ELSE 0 END,
    started_at = CASE WHEN m.status = 'running' THEN now() ELSE s.started_at END,
    finished_at = CASE WHEN m.status IN ('done', 'failed') THEN now()
        WHEN m.status IN ('undoing', 'undone', 'undo_failed') THEN s.finished_at END,
    engine_started_at = CASE WHEN m.status = 'running' THEN NULL
        ELSE coalesce(nullif(m.engine_started_at, '')::timestamptz, s.engine_started_at) END,
    engine_finished_at = CASE WHEN m.status = 'running' THEN NULL
        ELSE coalesce(nullif(m.engine_finished_at, '')::timestamptz, s.engine_finished_at) END,
    undo_started_at = CASE WHEN m.status = 'undoing' THEN now()
        WHEN m.status IN ('undone', 'undo_failed') THEN s.undo_started_at END,
    undo_finished_at = CASE WHEN m.status IN ('undone', 'undo_failed') THEN now() END,
    updated_at = now()
FROM (SELECT unnest(sqlc.arg(names)::text[]) AS name, unnest(sqlc.arg(statuses)::text[]) AS status,
        unnest(sqlc.arg(results)::jsonb[]) AS result, unnest(sqlc.arg(errors)::text[]) AS error,
        unnest(sqlc.arg(engine_starts)::text[]) AS engine_started_at, unnest(sqlc.arg(engine_ends)::text[]) AS engine_finished_at) m
WHERE s.operation_id = sqlc.arg(operation_id) AND s.name = m.name
    AND (SELECT count(*) FROM operation_steps WHERE operation_id = sqlc.arg(operation_id) AND name = ANY (sqlc.arg(names)::text[]))
        = cardinality(sqlc.arg(names)::text[]);

-- name: OperationWait :one
-- When the operation last began and stopped waiting for approval.
SELECT approval_asked_at, approval_ended_at FROM operations WHERE id = $1;

-- name: RewindOperationSteps :execrows
-- Sends a waiting operation back to a step: it and every step after it run again. No row
-- changes when the operation does not wait, or has no step of that name.
UPDATE operation_steps s SET status = 'pending', result = 'null', error = '', finished_at = NULL, updated_at = now()
FROM operations o
WHERE o.id = s.operation_id AND o.id = sqlc.arg(operation_id) AND o.status = 'awaiting_approval'
  AND s.position >= (SELECT r.position FROM operation_steps r WHERE r.operation_id = o.id AND r.name = sqlc.arg(step));

-- name: ForgetPlan :exec
-- What a preview planned for each resource, dropped when the operation previews again.
DELETE FROM operation_resources WHERE operation_id = $1;

-- name: AdoptionsOf :many
-- The statuses of the operations that adopt an inventory item, for a request to adopt it again.
SELECT status FROM operations WHERE adopts = $1;
