-- name: CreateEventSource :one
INSERT INTO event_sources (id, landing_zone_id, name, kind, config, secret, secret_key_id, created_by)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
RETURNING *;

-- name: GetEventSource :one
SELECT * FROM event_sources WHERE id = $1;

-- name: ZoneEventSources :many
SELECT * FROM event_sources WHERE landing_zone_id = $1 ORDER BY name;

-- name: SetEventSourceSecret :one
UPDATE event_sources SET secret = $2, secret_key_id = $3 WHERE id = $1 RETURNING *;

-- name: SetEventSourceActive :one
UPDATE event_sources SET active = $2 WHERE id = $1 RETURNING *;

-- name: DeleteEventSource :exec
DELETE FROM event_sources WHERE id = $1;

-- name: LogEvents :many
-- Writes the events of one request or poll in one statement, each once: an event whose
-- sender's id the source sent before returns no row. The events are a JSON array of
-- {event_id, type, subject, occurred_at, payload}, written in one order (by event_id), so that
-- two batches holding the same events cannot wait on each other.
INSERT INTO event_log (source_id, landing_zone_id, source_kind, event_id, type, subject, occurred_at, payload)
SELECT sqlc.arg(source_id)::uuid, sqlc.arg(landing_zone_id)::uuid, sqlc.arg(source_kind)::text,
       e.event_id, e.type, e.subject, e.occurred_at, e.payload
FROM jsonb_to_recordset(sqlc.arg(events)::jsonb) AS e(event_id text, type text, subject text, occurred_at timestamptz, payload jsonb)
ORDER BY e.event_id
ON CONFLICT (source_id, event_id) DO NOTHING
RETURNING id, event_id;

-- name: LockLoggedEvent :one
SELECT * FROM event_log WHERE id = $1 FOR UPDATE SKIP LOCKED;

-- name: RouteEvent :exec
UPDATE event_log
SET tenant_id = $2, environment_id = $3, instance_id = $4, deployment_id = $5, outcome = $6, detail = $7,
    rule_position = $8, trigger = $9, run_id = $10, routed_at = now()
WHERE id = $1;

-- name: EventTargetInstance :one
-- A stack instance an event names, when it lives in the source's landing zone.
-- Nimbus's own events (no zone) reach any.
SELECT i.id, i.tenant_id, i.environment_id, i.stack_id, i.version
FROM stack_instances i JOIN environments e ON e.id = i.environment_id
WHERE i.id = sqlc.arg(id) AND (sqlc.narg(zone)::uuid IS NULL OR e.landing_zone_id = sqlc.narg(zone));

-- name: EventTargetDeployment :one
-- A deployment an event names by its ID, when it lives in the source's landing zone.
SELECT d.id, d.tenant_id, d.environment_id, d.stack_instance_id
FROM deployed_components d JOIN environments e ON e.id = d.environment_id
WHERE d.id = sqlc.arg(id) AND (sqlc.narg(zone)::uuid IS NULL OR e.landing_zone_id = sqlc.narg(zone)) AND d.status <> 'destroyed';

-- name: EventTargetResource :many
-- The live deployments of the source's landing zone that hold a resource: one of their
-- resources has it as its URN, or one of their outputs has the value given, where the
-- component is the provider's (a tenant's program chooses its outputs, and could claim
-- another's machine).
SELECT d.id, d.tenant_id, d.environment_id, d.stack_instance_id
FROM deployed_components d JOIN environments e ON e.id = d.environment_id JOIN components c ON c.id = d.component_id
WHERE (sqlc.narg(zone)::uuid IS NULL OR e.landing_zone_id = sqlc.narg(zone)) AND d.status <> 'destroyed'
  AND ((c.tenant_id IS NULL AND EXISTS (SELECT 1 FROM jsonb_each_text(d.outputs) o WHERE o.value = sqlc.arg(resource)::text))
       OR EXISTS (SELECT 1 FROM operations op JOIN operation_resources r ON r.operation_id = op.id
                  WHERE op.deployment_id = d.id AND r.urn = sqlc.arg(resource)::text))
LIMIT 2;

-- name: EventRules :many
SELECT * FROM event_routing_rules WHERE stack_id = $1 AND version = $2 ORDER BY position;

-- name: CreateEventRule :exec
INSERT INTO event_routing_rules (stack_id, version, position, source_kind, event_type, filter, trigger)
VALUES ($1, $2, $3, $4, $5, $6, $7);

-- name: EventLog :many
-- The log, newest first, filtered; keyset paging on (received_at, id).
SELECT l.*, s.name AS source_name, i.name AS instance_name, r.status AS run_status
FROM event_log l
LEFT JOIN event_sources s ON s.id = l.source_id
LEFT JOIN stack_instances i ON i.id = l.instance_id
LEFT JOIN stack_runs r ON r.id = l.run_id
WHERE (sqlc.narg(tenant)::uuid IS NULL OR l.tenant_id = sqlc.narg(tenant))
  AND (sqlc.narg(environment)::uuid IS NULL OR l.environment_id = sqlc.narg(environment))
  AND (sqlc.narg(instance)::uuid IS NULL OR l.instance_id = sqlc.narg(instance))
  AND (sqlc.narg(zone)::uuid IS NULL OR l.landing_zone_id = sqlc.narg(zone))
  AND (sqlc.narg(type)::text IS NULL OR l.type = sqlc.narg(type))
  AND (sqlc.narg(outcome)::text IS NULL OR l.outcome = sqlc.narg(outcome))
  AND (sqlc.narg(before_at)::timestamptz IS NULL OR (l.received_at, l.id) < (sqlc.narg(before_at), sqlc.narg(before_id)::uuid))
  AND (sqlc.arg(provider)::boolean OR l.tenant_id = ANY(sqlc.arg(tenants)::uuid[]))
ORDER BY l.received_at DESC, l.id DESC
LIMIT sqlc.arg(lim);

-- name: LogOwnEvent :one
-- One of Nimbus's own events, its target known: written in the transaction of the change.
INSERT INTO event_log (landing_zone_id, source_kind, event_id, type, subject, payload, tenant_id, environment_id, instance_id, deployment_id)
VALUES ((SELECT landing_zone_id FROM environments WHERE id = sqlc.narg(environment)::uuid), 'nimbus', gen_random_uuid()::text,
        sqlc.arg(type), sqlc.arg(subject), sqlc.arg(payload), sqlc.narg(tenant), sqlc.narg(environment), sqlc.narg(instance), sqlc.narg(deployment))
RETURNING id;

-- name: DeleteOldEvents :execrows
-- The log's retention: events received before the cutoff go, a batch at a time.
DELETE FROM event_log WHERE id IN (SELECT o.id FROM event_log o WHERE o.received_at < sqlc.arg(before)::timestamptz LIMIT 5000);

-- name: PendingEvents :many
-- Events waiting to be routed: Nimbus's own, which the sweep routes, and any other whose
-- routing job has not run a minute after it was accepted.
SELECT id FROM event_log
WHERE outcome = 'pending' AND (source_kind = 'nimbus' OR received_at < now() - interval '1 minute')
ORDER BY received_at LIMIT 500;

-- name: CreateSubscription :one
INSERT INTO event_subscriptions (id, tenant_id, name, url, types, secret, secret_key_id, created_by)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
RETURNING *;

-- name: GetSubscription :one
SELECT * FROM event_subscriptions WHERE id = $1;

-- name: ListSubscriptions :many
SELECT * FROM event_subscriptions
WHERE (sqlc.arg(provider)::boolean AND (sqlc.narg(tenant)::uuid IS NULL OR tenant_id = sqlc.narg(tenant)))
   OR (tenant_id = ANY(sqlc.arg(tenants)::uuid[]) AND (sqlc.narg(tenant)::uuid IS NULL OR tenant_id = sqlc.narg(tenant)))
ORDER BY tenant_id NULLS FIRST, name;

-- name: MoveSubscription :one
-- Moves a subscription whose status is still one of sources, forgetting the failures counted
-- so far: turned on again, it starts afresh. Called from app/orchestration/event/subscription.go alone.
UPDATE event_subscriptions SET status = sqlc.arg(status), failures = 0, failing_since = NULL, disabled_reason = ''
WHERE id = sqlc.arg(id) AND status = ANY(sqlc.arg(sources)::text[])
RETURNING *;

-- name: DeleteSubscription :exec
DELETE FROM event_subscriptions WHERE id = $1;

-- name: SubscriptionsFor :many
-- The active subscriptions an event of a tenant goes to: the tenant's own and the provider-wide.
SELECT id, types FROM event_subscriptions
WHERE status = 'active' AND (tenant_id IS NULL OR tenant_id = sqlc.narg(tenant)::uuid);

-- name: CreateDelivery :one
INSERT INTO event_deliveries (subscription_id, event_id) VALUES ($1, $2)
ON CONFLICT DO NOTHING
RETURNING id;

-- name: GetDelivery :one
SELECT d.*, s.url, s.secret, s.secret_key_id, s.status AS subscription_status, s.name AS subscription_name
FROM event_deliveries d JOIN event_subscriptions s ON s.id = d.subscription_id
WHERE d.id = $1;

-- name: RecordAttempt :exec
WITH a AS (
    INSERT INTO event_delivery_attempts (delivery_id, attempt, status_code, error, took_ms)
    VALUES (sqlc.arg(id), sqlc.arg(attempt), sqlc.narg(status_code), sqlc.arg(error), sqlc.arg(took_ms))
)
UPDATE event_deliveries SET attempts = sqlc.arg(attempt), status = sqlc.arg(status),
    finished_at = CASE WHEN sqlc.arg(status)::text = 'pending' THEN NULL ELSE now() END
WHERE id = sqlc.arg(id);

-- name: SubscriptionSucceeded :exec
UPDATE event_subscriptions SET failures = 0, failing_since = NULL WHERE id = $1;

-- name: SubscriptionFailed :one
-- Counts a failed attempt; an active subscription whose attempts have all failed, at least
-- limit_failures of them over at least limit_span, moves to disabled, saying why. was_status
-- tells the attempt that disabled it from those after. at is when the attempt failed. Called
-- from app/orchestration/event/subscription.go alone.
UPDATE event_subscriptions s
SET failures = s.failures + 1,
    failing_since = coalesce(s.failing_since, sqlc.arg(at)::timestamptz),
    status = CASE WHEN s.status = 'active' AND s.failures + 1 >= sqlc.arg(limit_failures)::integer
                   AND sqlc.arg(at)::timestamptz - coalesce(s.failing_since, sqlc.arg(at)::timestamptz) >= sqlc.arg(limit_span)::interval THEN 'disabled' ELSE s.status END,
    disabled_reason = CASE WHEN s.status = 'active' AND s.failures + 1 >= sqlc.arg(limit_failures)::integer
                   AND sqlc.arg(at)::timestamptz - coalesce(s.failing_since, sqlc.arg(at)::timestamptz) >= sqlc.arg(limit_span)::interval THEN sqlc.arg(reason)::text ELSE s.disabled_reason END
FROM (SELECT o.id, o.status AS was_status FROM event_subscriptions o WHERE o.id = sqlc.arg(id) FOR UPDATE) old
WHERE s.id = old.id
RETURNING s.*, old.was_status;

-- name: FinishDelivery :exec
UPDATE event_deliveries SET status = $2, finished_at = now() WHERE id = $1;

-- name: SubscriptionDeliveries :many
SELECT d.*, l.type AS event_type, l.subject AS event_subject
FROM event_deliveries d JOIN event_log l ON l.id = d.event_id
WHERE d.subscription_id = $1
ORDER BY d.created_at DESC, d.id DESC
LIMIT 200;

-- name: DeliveryAttempts :many
SELECT * FROM event_delivery_attempts WHERE delivery_id = ANY(sqlc.arg(ids)::uuid[]) ORDER BY delivery_id, attempt;

-- name: LoggedEvent :one
SELECT * FROM event_log WHERE id = $1;

-- name: AnyPendingEvent :one
-- Whether the sweep has anything to route (as PendingEvents finds it).
SELECT EXISTS (SELECT 1 FROM event_log
    WHERE outcome = 'pending' AND (source_kind = 'nimbus' OR received_at < now() - interval '1 minute'))::boolean;
