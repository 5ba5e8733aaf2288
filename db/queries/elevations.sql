-- name: CreateElevation :one
INSERT INTO elevations (user_id, tenant_id, role, reason, granted_by, ends_at, status)
VALUES ($1, $2, $3, $4, $5, $6, sqlc.arg(status)) RETURNING *;

-- name: LockElevation :one
SELECT sqlc.embed(e), u.email AS user_email
FROM elevations e JOIN users u ON u.id = e.user_id
WHERE e.id = $1 FOR UPDATE OF e;

-- name: EndElevation :one
UPDATE elevations
SET status = sqlc.arg(status), ended_why = sqlc.arg(why), ended_by = sqlc.arg(ended_by), ended_at = now(), updated_at = now()
WHERE id = sqlc.arg(id) AND status = ANY(sqlc.arg(sources)::text[])
RETURNING *;

-- name: DueElevations :many
-- Active elevations past their end, for the sweep that records their end.
SELECT id FROM elevations WHERE status = 'active' AND ends_at <= now() ORDER BY ends_at LIMIT 100;

-- name: RolesOfUser :many
-- The roles a user holds now (see roles_now); a tenant may come twice, and the caller keeps the
-- higher role.
SELECT tenant_id, role FROM roles_now WHERE user_id = $1;

-- name: HeldElevations :many
-- A user's elevations in force now, soonest ending first, for their account page.
SELECT e.id, e.tenant_id, t.name AS tenant_name, e.role, e.reason, e.ends_at
FROM elevations e JOIN tenants t ON t.id = e.tenant_id
WHERE e.user_id = $1 AND e.status = 'active' AND e.ends_at > now() AND t.deleted_at IS NULL
ORDER BY e.ends_at;

-- name: ListElevations :many
-- Active elevations, then those ended since the given time, newest first.
SELECT sqlc.embed(e), u.email AS user_email, t.name AS tenant_name,
       coalesce(g.email, '')::text AS granted_by_email, coalesce(x.email, '')::text AS ended_by_email
FROM elevations e
JOIN users u ON u.id = e.user_id
JOIN tenants t ON t.id = e.tenant_id
LEFT JOIN users g ON g.id = e.granted_by
LEFT JOIN users x ON x.id = e.ended_by
WHERE e.status = 'active' OR e.ended_at > sqlc.arg(since)::timestamptz
ORDER BY e.status = 'active' DESC, e.created_at DESC
LIMIT 200;
