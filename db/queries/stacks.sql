-- name: CreateStack :one
INSERT INTO stacks (tenant_id, provider_id, name, display_name, description, draft, forked_from_id, forked_from_version, created_by)
VALUES (sqlc.narg(tenant_id), sqlc.arg(provider_id), sqlc.arg(name), sqlc.arg(display_name), sqlc.arg(description),
        sqlc.arg(draft), sqlc.narg(forked_from_id), sqlc.narg(forked_from_version), sqlc.narg(created_by))
RETURNING id;

-- name: StackNameTaken :one
SELECT EXISTS (
    SELECT 1 FROM stacks
    WHERE tenant_id IS NOT DISTINCT FROM sqlc.narg(tenant_id)::uuid AND lower(name) = lower(sqlc.arg(name)) AND deleted_at IS NULL
);

-- name: GetStack :one
-- A live stack with its provider's and tenant's names, its latest version (0 before the first
-- publish) and, for a fork, its parent's name and latest version.
SELECT s.*, p.name AS provider, tn.name AS tenant_name,
       coalesce((SELECT max(v.version) FROM stack_versions v WHERE v.stack_id = s.id), 0)::int AS latest_version,
       parent.name AS parent_name,
       coalesce((SELECT max(v.version) FROM stack_versions v WHERE v.stack_id = s.forked_from_id), 0)::int AS parent_latest_version
FROM stacks s
JOIN semantic_providers p ON p.id = s.provider_id
LEFT JOIN tenants tn ON tn.id = s.tenant_id
LEFT JOIN stacks parent ON parent.id = s.forked_from_id
WHERE s.id = $1 AND s.deleted_at IS NULL;

-- name: LockStack :one
-- Held until the end of the caller's transaction, so that two publishes or edits of one stack
-- take turns.
SELECT id FROM stacks WHERE id = $1 AND deleted_at IS NULL FOR UPDATE;

-- name: ListStacks :many
-- The stacks the viewer may see (all with all_tenants; else provider stacks and those of
-- tenant_ids), filtered, newest change first. Those who may not edit see published ones only:
-- editable_tenant_ids are the tenants whose drafts the viewer sees.
SELECT s.id, s.tenant_id, s.name, s.display_name, s.description, s.forked_from_id, s.forked_from_version,
       s.created_at, s.updated_at, p.name AS provider, tn.name AS tenant_name,
       coalesce((SELECT max(v.version) FROM stack_versions v WHERE v.stack_id = s.id), 0)::int AS latest_version
FROM stacks s
JOIN semantic_providers p ON p.id = s.provider_id
LEFT JOIN tenants tn ON tn.id = s.tenant_id
WHERE s.deleted_at IS NULL
  AND (sqlc.arg(all_tenants)::boolean OR s.tenant_id IS NULL OR s.tenant_id = ANY(sqlc.arg(tenant_ids)::uuid[]))
  AND (sqlc.arg(all_tenants)::boolean OR s.tenant_id = ANY(sqlc.arg(editable_tenant_ids)::uuid[])
       OR EXISTS (SELECT 1 FROM stack_versions v WHERE v.stack_id = s.id))
  AND (sqlc.arg(search)::text = '' OR s.name ILIKE '%' || sqlc.arg(search) || '%' OR s.display_name ILIKE '%' || sqlc.arg(search) || '%')
  AND (sqlc.arg(provider)::text = '' OR p.name = sqlc.arg(provider))
  AND (sqlc.arg(scope)::text = '' OR (sqlc.arg(scope) = 'provider') = (s.tenant_id IS NULL))
  AND (sqlc.narg(tenant_id)::uuid IS NULL OR s.tenant_id = sqlc.narg(tenant_id))
ORDER BY s.updated_at DESC, s.id
LIMIT sqlc.arg(max_rows);

-- name: UpdateStackDraft :exec
UPDATE stacks SET display_name = $2, description = $3, draft = $4, updated_at = now() WHERE id = $1;

-- name: SoftDeleteStack :exec
UPDATE stacks SET deleted_at = now(), updated_at = now() WHERE id = $1;

-- name: StackLiveInstances :one
-- How many instances of the stack, or of one version of it (version 0: any), are not destroyed.
SELECT count(*) FROM stack_instances
WHERE stack_id = sqlc.arg(stack_id) AND status <> 'destroyed' AND (sqlc.arg(version)::int = 0 OR version = sqlc.arg(version));

-- name: CreateStackVersion :one
-- The next version of the stack; the caller holds the stack's lock.
INSERT INTO stack_versions (stack_id, version, definition, changelog, published_by)
SELECT sqlc.arg(stack_id), coalesce(max(version), 0) + 1, sqlc.arg(definition), sqlc.arg(changelog), sqlc.narg(published_by)
FROM stack_versions WHERE stack_id = sqlc.arg(stack_id)
RETURNING version;

-- name: CreateStackOperation :exec
INSERT INTO stack_day2_operations (stack_id, version, name, display_name, description, input_schema, required_states, actions, triggers_transition, position)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10);

-- name: ListStackVersions :many
SELECT v.version, v.changelog, v.published_at, v.archived_at, u.email AS published_by
FROM stack_versions v LEFT JOIN users u ON u.id = v.published_by
WHERE v.stack_id = $1
ORDER BY v.version DESC;

-- name: GetStackVersion :one
SELECT v.version, v.changelog, v.published_at, v.archived_at, u.email AS published_by
FROM stack_versions v LEFT JOIN users u ON u.id = v.published_by
WHERE v.stack_id = $1 AND v.version = $2;

-- name: ArchiveStackVersion :exec
UPDATE stack_versions SET archived_at = coalesce(archived_at, now()) WHERE stack_id = $1 AND version = $2;

-- name: SlotComponents :many
-- The components a stack's slots name, with each of their published versions, for checking
-- that each slot pins a version the stack may use.
SELECT c.id, c.tenant_id, c.provider_id, c.name, c.deleted_at, v.version, v.archived_at
FROM components c
LEFT JOIN component_versions v ON v.component_id = c.id
WHERE c.id = ANY(sqlc.arg(ids)::uuid[]);

-- name: StacksPinningVersion :many
-- The stacks whose published, unarchived versions pin a component version in a slot.
SELECT DISTINCT s.name FROM stack_versions v
JOIN stacks s ON s.id = v.stack_id AND s.deleted_at IS NULL
CROSS JOIN LATERAL jsonb_array_elements(v.definition->'slots') AS slot
WHERE v.archived_at IS NULL
  AND slot->>'component_id' = sqlc.arg(component_id)::text AND (slot->>'version')::int = sqlc.arg(version)::int
ORDER BY s.name;
