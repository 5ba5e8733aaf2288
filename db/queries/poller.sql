-- name: PolledSources :many
-- The sources the cloud poller looks at.
SELECT id FROM event_sources WHERE kind = 'cloud_provider' AND active ORDER BY id;

-- name: LockPolledSource :one
-- Takes a source to save one poll; none when another poll is saving, or it is turned off or gone.
-- NO KEY: the events the poll logs take a key share of the same row.
SELECT * FROM event_sources WHERE id = $1 AND kind = 'cloud_provider' AND active
FOR NO KEY UPDATE SKIP LOCKED;

-- name: PollerState :many
SELECT resource, state, seen_at FROM event_poller_state WHERE source_id = $1;

-- name: SetPollerState :exec
INSERT INTO event_poller_state (source_id, resource, state, seen_at) VALUES ($1, $2, $3, $4)
ON CONFLICT (source_id, resource) DO UPDATE SET state = excluded.state, seen_at = excluded.seen_at;

-- name: ForgetPolledResource :exec
DELETE FROM event_poller_state WHERE source_id = $1 AND resource = $2;
