-- name: ApprovalDeciders :many
-- Who may decide a request: provider admins, and members of its tenant holding one of roles
-- (those that hold the right to decide and the role it asks for); not its requester unless
-- its policies let them.
SELECT u.id FROM approval_requests r, users u
WHERE r.id = sqlc.arg(request) AND u.deleted_at IS NULL
  AND (r.requester_may_approve OR r.requested_by IS DISTINCT FROM u.id)
  AND (u.is_provider_admin OR EXISTS (SELECT 1 FROM memberships m
      WHERE m.user_id = u.id AND m.tenant_id = r.tenant_id AND m.role = ANY(sqlc.arg(roles)::text[])));

-- name: ApprovalRequester :one
SELECT requested_by FROM approval_requests WHERE id = $1;

-- name: OperationRequester :one
SELECT requested_by FROM operations WHERE id = $1;

-- name: EnvironmentCreator :one
SELECT created_by FROM environments WHERE id = $1;

-- name: DeploymentCreator :one
SELECT created_by FROM deployed_components WHERE id = $1;

-- name: TenantAdmins :many
-- The admins of a tenant; of a provider-level thing (no tenant), the provider admins.
SELECT u.id FROM users u
WHERE u.deleted_at IS NULL AND CASE WHEN sqlc.narg(tenant)::uuid IS NULL THEN u.is_provider_admin
    ELSE EXISTS (SELECT 1 FROM memberships m WHERE m.user_id = u.id AND m.tenant_id = sqlc.narg(tenant) AND m.role = 'tenant_admin') END;

-- name: Notify :execrows
-- One notification of an event for each of users who may still see its tenant and who take
-- its kind in their inbox (inbox_default when they never said).
INSERT INTO notifications (user_id, event_id, tenant_id, kind, title, link)
SELECT u.id, sqlc.arg(event), sqlc.narg(tenant), sqlc.arg(kind), sqlc.arg(title), sqlc.arg(link) FROM users u
WHERE u.id = ANY(sqlc.arg(users)::uuid[]) AND u.deleted_at IS NULL
  AND (sqlc.narg(tenant)::uuid IS NULL OR u.is_provider_admin
      OR EXISTS (SELECT 1 FROM memberships m WHERE m.user_id = u.id AND m.tenant_id = sqlc.narg(tenant)))
  AND coalesce((SELECT p.inbox FROM notification_preferences p WHERE p.user_id = u.id AND p.kind = sqlc.arg(kind)),
      sqlc.arg(inbox_default)::boolean)
ON CONFLICT (event_id, user_id) DO NOTHING;

-- name: ListNotifications :many
-- A person's notifications, newest first, after a cursor.
SELECT * FROM notifications
WHERE user_id = sqlc.arg(user_id)
  AND (NOT sqlc.arg(unread)::boolean OR read_at IS NULL)
  AND (sqlc.narg(after_at)::timestamptz IS NULL OR (created_at, id) < (sqlc.narg(after_at)::timestamptz, sqlc.arg(after_id)::uuid))
ORDER BY created_at DESC, id DESC
LIMIT sqlc.arg(max_rows);

-- name: CountUnreadNotifications :one
SELECT count(*) FROM notifications WHERE user_id = $1 AND read_at IS NULL;

-- name: MarkNotificationRead :one
UPDATE notifications SET read_at = coalesce(read_at, now())
WHERE id = sqlc.arg(id) AND user_id = sqlc.arg(user_id)
RETURNING *;

-- name: MarkAllNotificationsRead :execrows
UPDATE notifications SET read_at = now() WHERE user_id = $1 AND read_at IS NULL;

-- name: NotificationPreferences :many
SELECT * FROM notification_preferences WHERE user_id = $1;

-- name: SetNotificationPreference :exec
INSERT INTO notification_preferences (user_id, kind, inbox, email) VALUES ($1, $2, $3, $4)
ON CONFLICT (user_id, kind) DO UPDATE SET inbox = excluded.inbox, email = excluded.email, updated_at = now();

-- name: WantsDigest :one
SELECT EXISTS (SELECT 1 FROM notification_digests WHERE user_id = $1);

-- name: StartDigest :exec
INSERT INTO notification_digests (user_id) VALUES ($1) ON CONFLICT DO NOTHING;

-- name: StopDigest :exec
DELETE FROM notification_digests WHERE user_id = $1;
