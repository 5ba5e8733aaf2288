-- name: DeploymentPlace :one
-- Where a deployment's resources live and whose they are, for their inventory items.
SELECT d.tenant_id, d.environment_id, e.landing_zone_id, d.stack_instance_id, d.slot, d.component_id, d.version
FROM deployed_components d JOIN environments e ON e.id = d.environment_id
WHERE d.id = $1;

-- name: LockDeploymentItems :many
-- A deployment's items, locked for the end of the operation that changes them.
SELECT * FROM inventory_items WHERE deployment_id = $1 ORDER BY created_at, id FOR UPDATE;

-- name: CreateInventoryItem :one
INSERT INTO inventory_items (urn, type, provider_id, name, addresses, fqdns, image, outputs, refs, search,
    tenant_id, environment_id, landing_zone_id, stack_instance_id, slot, component_id, component_version, deployment_id,
    status, operation_id, created_operation_id)
VALUES (sqlc.arg(urn), sqlc.arg(type), sqlc.arg(provider_id), sqlc.arg(name), sqlc.arg(addresses), sqlc.arg(fqdns), sqlc.arg(image),
    sqlc.arg(outputs), sqlc.arg(refs), sqlc.arg(search), sqlc.narg(tenant_id), sqlc.narg(environment_id), sqlc.narg(landing_zone_id),
    sqlc.narg(stack_instance_id), sqlc.narg(slot), sqlc.narg(component_id), sqlc.narg(component_version), sqlc.narg(deployment_id),
    sqlc.arg(status), sqlc.narg(operation_id), sqlc.narg(operation_id))
RETURNING *;

-- name: UpdateInventoryItem :one
-- What an operation left a resource as, and the status it moves the item to from the one the
-- caller found (an item found elsewhere is left alone: no row).
UPDATE inventory_items SET
    type = sqlc.arg(type), provider_id = sqlc.arg(provider_id), name = sqlc.arg(name), addresses = sqlc.arg(addresses),
    fqdns = sqlc.arg(fqdns), image = sqlc.arg(image), outputs = sqlc.arg(outputs), refs = sqlc.arg(refs), search = sqlc.arg(search),
    stack_instance_id = sqlc.narg(stack_instance_id), slot = sqlc.narg(slot), component_id = sqlc.narg(component_id),
    component_version = sqlc.narg(component_version),
    status = sqlc.arg(status),
    status_at = CASE WHEN sqlc.arg(status)::text <> sqlc.arg(found)::text THEN now() ELSE status_at END,
    operation_id = sqlc.narg(operation_id), updated_at = now()
WHERE id = sqlc.arg(id) AND status = sqlc.arg(found)::text
RETURNING *;

-- name: MoveInventoryItem :one
-- Moves an item's status alone, from one the machine allows.
UPDATE inventory_items SET status = sqlc.arg(status), status_at = now(), operation_id = sqlc.narg(operation_id), updated_at = now()
WHERE id = sqlc.arg(id) AND status = ANY(sqlc.arg(sources)::text[])
RETURNING *;

-- name: ListInventoryItems :many
-- A page of the items the reader may see, newest first, narrowed by the filters given (ids:
-- among those items alone); without a status, those of the hidden statuses are left out. A
-- search asks for the term without separators too, which the trigram index serves (migration
-- 0054).
SELECT sqlc.embed(i), coalesce(t.name, '')::text AS tenant_name, coalesce(e.name, '')::text AS environment_name
FROM inventory_items i
LEFT JOIN tenants t ON t.id = i.tenant_id
LEFT JOIN environments e ON e.id = i.environment_id
WHERE (sqlc.arg(all_tenants)::bool OR i.tenant_id = ANY(sqlc.arg(tenant_ids)::uuid[]))
  AND (sqlc.narg(ids)::uuid[] IS NULL OR i.id = ANY(sqlc.narg(ids)::uuid[]))
  AND (sqlc.narg(search)::text IS NULL OR translate(i.search, '.-:/', '') LIKE '%' || translate(sqlc.narg(search)::text, '.-:/', '') || '%'
    AND i.search LIKE '%' || sqlc.narg(search)::text || '%')
  AND (sqlc.narg(type)::text IS NULL OR i.type = sqlc.narg(type)::text)
  AND (sqlc.narg(tenant_id)::uuid IS NULL OR i.tenant_id = sqlc.narg(tenant_id)::uuid)
  AND (sqlc.narg(environment)::text IS NULL OR lower(e.name) = lower(sqlc.narg(environment)::text))
  AND (sqlc.narg(status)::text IS NULL AND NOT i.status = ANY(sqlc.arg(hidden)::text[]) OR i.status = sqlc.narg(status)::text)
  AND (sqlc.narg(before)::timestamptz IS NULL OR (i.created_at, i.id) < (sqlc.narg(before)::timestamptz, sqlc.narg(before_id)::uuid))
ORDER BY i.created_at DESC, i.id DESC
LIMIT sqlc.arg(max_rows);

-- name: InventorySearchHits :many
-- The first page of the items a search finds, as ListInventoryItems filters them, and how many
-- it found up to hit_cap. The matches are collected through the trigram index and sorted: the
-- newest-first index, walked with the term as a filter, reads every newer item before the
-- first match (those of "m-77" are the 770,000th to 779,999th of a million). found = hit_cap
-- says the term is common enough that its matches are better met walking newest first.
WITH hits AS MATERIALIZED (
    SELECT i.id, i.created_at FROM inventory_items i
    LEFT JOIN environments e ON e.id = i.environment_id
    WHERE (sqlc.arg(all_tenants)::bool OR i.tenant_id = ANY(sqlc.arg(tenant_ids)::uuid[]))
      AND translate(i.search, '.-:/', '') LIKE '%' || translate(sqlc.arg(search)::text, '.-:/', '') || '%'
      AND i.search LIKE '%' || sqlc.arg(search)::text || '%'
      AND (sqlc.narg(type)::text IS NULL OR i.type = sqlc.narg(type)::text)
      AND (sqlc.narg(tenant_id)::uuid IS NULL OR i.tenant_id = sqlc.narg(tenant_id)::uuid)
      AND (sqlc.narg(environment)::text IS NULL OR lower(e.name) = lower(sqlc.narg(environment)::text))
      AND (sqlc.narg(status)::text IS NULL AND NOT i.status = ANY(sqlc.arg(hidden)::text[]) OR i.status = sqlc.narg(status)::text)
      AND (sqlc.narg(before)::timestamptz IS NULL OR (i.created_at, i.id) < (sqlc.narg(before)::timestamptz, sqlc.narg(before_id)::uuid))
    LIMIT sqlc.arg(hit_cap)
)
SELECT id, (SELECT count(*) FROM hits) AS found FROM hits
ORDER BY created_at DESC, id DESC
LIMIT sqlc.arg(max_rows);

-- name: GetInventoryItem :one
SELECT sqlc.embed(i), coalesce(t.name, '')::text AS tenant_name, coalesce(e.name, '')::text AS environment_name,
    coalesce(d.name, '')::text AS deployment_name, coalesce(c.name, '')::text AS component_name,
    coalesce(z.name, '')::text AS zone_name
FROM inventory_items i
LEFT JOIN tenants t ON t.id = i.tenant_id
LEFT JOIN environments e ON e.id = i.environment_id
LEFT JOIN deployed_components d ON d.id = i.deployment_id
LEFT JOIN components c ON c.id = i.component_id
LEFT JOIN landing_zones z ON z.id = i.landing_zone_id
WHERE i.id = $1;

-- name: InventoryRelated :many
-- The items an item names by their provider's ids, and those that name it, among the items of
-- its tenant (or of its zone, for one no tenant holds).
SELECT i.id, i.name, i.type, i.status, r.key::text AS via, true AS outgoing
FROM inventory_items me
CROSS JOIN LATERAL jsonb_each_text(me.refs) AS r(key, value)
JOIN inventory_items i ON i.provider_id = r.value
WHERE me.id = sqlc.arg(id) AND i.id <> me.id
  AND i.tenant_id IS NOT DISTINCT FROM me.tenant_id AND i.landing_zone_id IS NOT DISTINCT FROM me.landing_zone_id
UNION ALL
SELECT i.id, i.name, i.type, i.status, r.key::text AS via, false AS outgoing
FROM inventory_items me
JOIN inventory_items i ON i.tenant_id IS NOT DISTINCT FROM me.tenant_id AND i.id <> me.id
CROSS JOIN LATERAL jsonb_each_text(i.refs) AS r(key, value)
WHERE me.id = sqlc.arg(id) AND me.provider_id <> '' AND r.value = me.provider_id
  AND i.landing_zone_id IS NOT DISTINCT FROM me.landing_zone_id
ORDER BY outgoing DESC, name
LIMIT 200;

-- name: LockZoneItems :many
-- The items of a zone of one type, locked for a discovery's look at its cloud.
SELECT * FROM inventory_items WHERE landing_zone_id = $1 AND type = $2 ORDER BY created_at, id FOR UPDATE;

-- name: ClaimedProviderIDs :many
-- Which of the provider's ids some item of the type still holds, in any zone.
SELECT DISTINCT provider_id FROM inventory_items
WHERE type = sqlc.arg(type) AND provider_id = ANY(sqlc.arg(ids)::text[]) AND status <> sqlc.arg(gone)::text;

-- name: DiscoverInventoryItem :one
INSERT INTO inventory_items (type, provider_id, name, search, landing_zone_id, status)
VALUES (sqlc.arg(type), sqlc.arg(provider_id), sqlc.arg(provider_id), lower(sqlc.arg(provider_id)), sqlc.arg(landing_zone_id), sqlc.arg(status))
RETURNING *;

-- name: UnmanagedItemsOf :many
-- The items discovery made of a resource an operation now manages, locked to be let go.
SELECT * FROM inventory_items
WHERE deployment_id IS NULL AND type = $1 AND provider_id = $2 AND status = ANY(sqlc.arg(statuses)::text[]) FOR UPDATE;

-- name: LockInventoryItem :one
-- An item, locked for a person's move of it (ignoring it, adopting it).
SELECT * FROM inventory_items WHERE id = $1 FOR UPDATE;

-- name: AdoptInventoryItem :one
-- What discovery found of a resource, taken over by the deployment whose operation now manages
-- it: the item becomes the deployment's, with what the operation left of the resource.
UPDATE inventory_items SET
    urn = sqlc.arg(urn), type = sqlc.arg(type), name = sqlc.arg(name), addresses = sqlc.arg(addresses),
    fqdns = sqlc.arg(fqdns), image = sqlc.arg(image), outputs = sqlc.arg(outputs), refs = sqlc.arg(refs), search = sqlc.arg(search),
    tenant_id = sqlc.narg(tenant_id), environment_id = sqlc.narg(environment_id), landing_zone_id = sqlc.narg(landing_zone_id),
    stack_instance_id = sqlc.narg(stack_instance_id), slot = sqlc.narg(slot), component_id = sqlc.narg(component_id),
    component_version = sqlc.narg(component_version), deployment_id = sqlc.narg(deployment_id),
    status = sqlc.arg(status), status_at = now(), operation_id = sqlc.narg(operation_id),
    created_operation_id = sqlc.narg(operation_id), updated_at = now()
WHERE id = sqlc.arg(id) AND status = ANY(sqlc.arg(sources)::text[])
RETURNING *;

-- name: AdoptionComponents :many
-- The published components an item of the type can be adopted into, for the item's page.
SELECT c.id, c.name FROM components c
JOIN provider_resource_types prt ON prt.provider_id = c.provider_id AND prt.semantic_type_id = c.semantic_type_id
WHERE prt.pulumi_type = $1 AND c.latest_version > 0 AND c.deleted_at IS NULL
ORDER BY c.name LIMIT 200;

-- name: AdoptionEnvironments :many
-- The environments of a zone, of the status given, an item of the zone can be adopted into.
SELECT e.id, e.name, t.name AS tenant_name FROM environments e JOIN tenants t ON t.id = e.tenant_id
WHERE e.landing_zone_id = $1 AND e.status = sqlc.arg(status)::text
ORDER BY t.name, e.name LIMIT 200;
