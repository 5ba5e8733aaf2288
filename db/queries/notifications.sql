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
-- its kind in their inbox or by mail (on_default when they never said).
INSERT INTO notifications (user_id, event_id, tenant_id, kind, title, link, inbox)
SELECT u.id, sqlc.arg(event), sqlc.narg(tenant), sqlc.arg(kind), sqlc.arg(title), sqlc.arg(link), w.inbox FROM users u
CROSS JOIN LATERAL (SELECT coalesce(p.inbox, sqlc.arg(on_default)::boolean) AS inbox, coalesce(p.email, sqlc.arg(on_default)::boolean) AS email
    FROM (SELECT 1) one LEFT JOIN notification_preferences p ON p.user_id = u.id AND p.kind = sqlc.arg(kind)) w
WHERE u.id = ANY(sqlc.arg(users)::uuid[]) AND u.deleted_at IS NULL AND (w.inbox OR w.email)
  AND (sqlc.narg(tenant)::uuid IS NULL OR u.is_provider_admin
      OR EXISTS (SELECT 1 FROM memberships m WHERE m.user_id = u.id AND m.tenant_id = sqlc.narg(tenant)))
ON CONFLICT (event_id, user_id) DO NOTHING;

-- name: MailNotifications :many
-- A mail for each notification of an event whose reader takes its kind by mail one at a time
-- (not in a digest), when mail is set up at all.
INSERT INTO notification_mails (user_id, notification_id)
SELECT n.user_id, n.id FROM notifications n
WHERE n.event_id = sqlc.arg(event) AND EXISTS (SELECT 1 FROM mail_settings)
  AND NOT EXISTS (SELECT 1 FROM notification_digests d WHERE d.user_id = n.user_id)
  AND coalesce((SELECT p.email FROM notification_preferences p WHERE p.user_id = n.user_id AND p.kind = n.kind),
      sqlc.arg(on_default)::boolean)
ON CONFLICT (notification_id) WHERE notification_id IS NOT NULL DO NOTHING
RETURNING id;

-- name: ListNotifications :many
-- A person's notifications, newest first, after a cursor, with why their mail failed.
SELECT sqlc.embed(n), coalesce(m.error, '')::text AS mail_error FROM notifications n
LEFT JOIN notification_mails m ON m.notification_id = n.id AND m.failed_at IS NOT NULL
WHERE n.user_id = sqlc.arg(user_id) AND n.inbox
  AND (NOT sqlc.arg(unread)::boolean OR n.read_at IS NULL)
  AND (sqlc.narg(after_at)::timestamptz IS NULL OR (n.created_at, n.id) < (sqlc.narg(after_at)::timestamptz, sqlc.arg(after_id)::uuid))
ORDER BY n.created_at DESC, n.id DESC
LIMIT sqlc.arg(max_rows);

-- name: CountUnreadNotifications :one
SELECT count(*) FROM notifications WHERE user_id = $1 AND read_at IS NULL AND inbox;

-- name: MarkNotificationRead :one
UPDATE notifications SET read_at = coalesce(read_at, now())
WHERE id = sqlc.arg(id) AND user_id = sqlc.arg(user_id) AND inbox
RETURNING *;

-- name: MarkAllNotificationsRead :execrows
UPDATE notifications SET read_at = now() WHERE user_id = $1 AND read_at IS NULL AND inbox;

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

-- name: MailSettings :one
SELECT * FROM mail_settings;

-- name: SetMailSettings :exec
INSERT INTO mail_settings (host, port, tls, username, password, password_key_id, from_address, base_url, set_by)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (singleton) DO UPDATE SET host = excluded.host, port = excluded.port, tls = excluded.tls,
    username = excluded.username, password = excluded.password, password_key_id = excluded.password_key_id,
    from_address = excluded.from_address, base_url = excluded.base_url, set_by = excluded.set_by, updated_at = now();

-- name: MailToSend :one
-- A mail with its reader's address and, for a single one, its notification.
SELECT m.id, m.user_id, m.notification_id, m.since, m.created_at, m.status, u.email,
    coalesce(n.title, '')::text AS title, coalesce(n.link, '')::text AS link
FROM notification_mails m JOIN users u ON u.id = m.user_id
LEFT JOIN notifications n ON n.id = m.notification_id
WHERE m.id = $1;

-- name: DigestOf :many
-- What a digest tells: its reader's notifications of its span, still unread, of the kinds they
-- take by mail (those of on_by_default when they never said).
SELECT * FROM notifications n
WHERE n.user_id = sqlc.arg(user_id) AND n.read_at IS NULL AND n.created_at > sqlc.arg(since) AND n.created_at <= sqlc.arg(until)
  AND coalesce((SELECT p.email FROM notification_preferences p WHERE p.user_id = n.user_id AND p.kind = n.kind),
      n.kind = ANY(sqlc.arg(on_by_default)::text[]))
ORDER BY n.created_at, n.id
LIMIT 200;

-- name: MailSent :execrows
UPDATE notification_mails SET status = sqlc.arg(status), sent_at = now(), attempts = attempts + 1, error = ''
WHERE id = sqlc.arg(id) AND status = ANY(sqlc.arg(sources)::text[]);

-- name: MailAttemptFailed :execrows
-- An attempt that failed: the mail stays pending for the next, or its last ends it failed.
UPDATE notification_mails SET status = sqlc.arg(status), attempts = attempts + 1, error = sqlc.arg(error),
    failed_at = CASE WHEN sqlc.arg(status)::text = 'failed' THEN now() END
WHERE id = sqlc.arg(id) AND status = ANY(sqlc.arg(sources)::text[]);

-- name: FailedMails :many
-- The deliveries that failed, newest first, for the operator.
SELECT m.id, m.failed_at, m.error, m.attempts, u.email, coalesce(n.kind, 'digest')::text AS kind
FROM notification_mails m JOIN users u ON u.id = m.user_id
LEFT JOIN notifications n ON n.id = m.notification_id
WHERE m.failed_at IS NOT NULL
ORDER BY m.failed_at DESC
LIMIT 50;

-- name: DueDigests :many
-- Queues a digest mail for each reader whose last one was a day ago or more and who has
-- something unread since that they take by mail, and moves their span on.
WITH due AS (
    UPDATE notification_digests d SET sent_until = now()
    WHERE d.sent_until <= now() - interval '1 day' AND EXISTS (SELECT 1 FROM mail_settings)
      AND EXISTS (SELECT 1 FROM notifications n WHERE n.user_id = d.user_id AND n.read_at IS NULL AND n.created_at > d.sent_until
          AND coalesce((SELECT p.email FROM notification_preferences p WHERE p.user_id = n.user_id AND p.kind = n.kind),
              n.kind = ANY(sqlc.arg(on_by_default)::text[])))
    RETURNING d.user_id, (SELECT x.sent_until FROM notification_digests x WHERE x.user_id = d.user_id) AS since
)
INSERT INTO notification_mails (user_id, since)
SELECT user_id, since FROM due
RETURNING id;
