-- name: InsertAuditEvent :exec
INSERT INTO audit_events (actor_id, actor_email, tenant_id, action, target_type, target_id, diff)
VALUES ($1, $2, $3, $4, $5, $6, $7);

-- name: ListAuditEvents :many
-- Newest first, filtered; all_tenants lifts the tenant restriction for provider admins.
SELECT * FROM audit_events
WHERE (sqlc.arg(all_tenants)::boolean OR tenant_id = ANY(sqlc.arg(tenant_ids)::uuid[]))
  AND (sqlc.narg(actor)::text IS NULL OR actor_email ILIKE '%' || sqlc.narg(actor) || '%')
  AND (sqlc.narg(action)::text IS NULL OR action LIKE sqlc.narg(action) || '%')
  AND (sqlc.narg(target)::text IS NULL OR target_id = sqlc.narg(target) OR target_type = sqlc.narg(target))
  AND (sqlc.narg(since)::timestamptz IS NULL OR created_at >= sqlc.narg(since))
  AND (sqlc.narg(until)::timestamptz IS NULL OR created_at < sqlc.narg(until))
  AND (sqlc.narg(before_id)::bigint IS NULL OR id < sqlc.narg(before_id))
ORDER BY id DESC
LIMIT sqlc.arg(max_rows);

-- name: AuditTargetNames :many
-- What the log calls each target: its name now, or '' when there is no such row; deleted says
-- the row is kept but marked deleted. Targets are given as parallel arrays of type and ID; a
-- membership's ID is the tenant's and the user's joined by '/'. Each ID is made a uuid once, where
-- it is one, and kept apart (MATERIALIZED): cast in every row a lookup scans, it made a small
-- table's scan cost a page's time.
WITH t AS MATERIALIZED (SELECT ty.target_type, id.target_id,
      CASE WHEN id.target_id ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' THEN id.target_id::uuid END AS id
    FROM unnest(sqlc.arg(target_types)::text[]) WITH ORDINALITY AS ty(target_type, n)
    JOIN unnest(sqlc.arg(target_ids)::text[]) WITH ORDINALITY AS id(target_id, n) ON id.n = ty.n)
SELECT t.target_type::text AS target_type, t.target_id::text AS target_id, coalesce(CASE t.target_type
    WHEN 'tenant' THEN (SELECT x.name FROM tenants x WHERE x.id = t.id)
    WHEN 'user' THEN (SELECT x.email FROM users x WHERE x.id = t.id)
    WHEN 'membership' THEN (SELECT x.name || ': ' || u.email FROM tenants x, users u
        WHERE x.id = split_part(t.target_id, '/', 1)::uuid AND u.id = split_part(t.target_id, '/', 2)::uuid)
    WHEN 'component' THEN (SELECT x.name FROM components x WHERE x.id = t.id)
    WHEN 'deployment' THEN (SELECT x.name FROM deployed_components x WHERE x.id = t.id)
    WHEN 'operation' THEN (SELECT o.kind || ' of ' || d.name FROM operations o JOIN deployed_components d ON d.id = o.deployment_id
        WHERE o.id = t.id)
    WHEN 'environment' THEN (SELECT x.name FROM environments x WHERE x.id = t.id)
    WHEN 'landing_zone' THEN (SELECT x.name FROM landing_zones x WHERE x.id = t.id)
    WHEN 'ipam_pool' THEN (SELECT x.name FROM ipam_pools x WHERE x.id = t.id)
    WHEN 'approval_request' THEN (SELECT o.kind || ' of ' || d.name FROM approval_requests r
        JOIN operations o ON o.id = r.operation_id JOIN deployed_components d ON d.id = o.deployment_id
        WHERE r.id = t.id)
    WHEN 'api_token' THEN (SELECT x.name FROM api_tokens x WHERE x.id = t.id)
    WHEN 'image' THEN (SELECT x.os_family || ' ' || x.os_version || ' (' || x.provider || ')' FROM image_catalog x WHERE x.id = t.id)
    WHEN 'provider' THEN (SELECT x.display_name FROM semantic_providers x WHERE x.id = t.id)
    WHEN 'semantic_type' THEN (SELECT x.display_name FROM semantic_resource_types x WHERE x.id = t.id)
    WHEN 'resource_type' THEN (SELECT x.pulumi_type FROM provider_resource_types x WHERE x.id = t.id)
END, '')::text AS name,
coalesce(CASE t.target_type
    WHEN 'tenant' THEN (SELECT x.deleted_at IS NOT NULL FROM tenants x WHERE x.id = t.id)
    WHEN 'user' THEN (SELECT x.deleted_at IS NOT NULL FROM users x WHERE x.id = t.id)
    WHEN 'component' THEN (SELECT x.deleted_at IS NOT NULL FROM components x WHERE x.id = t.id)
    WHEN 'environment' THEN (SELECT x.deleted_at IS NOT NULL FROM environments x WHERE x.id = t.id)
END, false)::boolean AS deleted
FROM t;
