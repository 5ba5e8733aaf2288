-- name: ListProviders :many
SELECT * FROM semantic_providers ORDER BY name;

-- name: ListSemanticTypes :many
SELECT * FROM semantic_resource_types ORDER BY name;

-- name: ListProviderResourceTypes :many
SELECT prt.id, prt.pulumi_type, prt.description, p.name AS provider, t.name AS semantic_type
FROM provider_resource_types prt
JOIN semantic_providers p ON p.id = prt.provider_id
JOIN semantic_resource_types t ON t.id = prt.semantic_type_id
ORDER BY p.name, t.name, prt.pulumi_type;

-- name: GetProviderByName :one
SELECT * FROM semantic_providers WHERE name = $1;

-- name: GetSemanticTypeByName :one
SELECT * FROM semantic_resource_types WHERE name = $1;

-- name: CreateComponent :one
INSERT INTO components (tenant_id, provider_id, semantic_type_id, name, display_name, description,
    language, code, input_schema, output_schema, resolver_bindings, is_system, created_by, system_only)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
RETURNING id;

-- name: ComponentNameTaken :one
SELECT EXISTS (
    SELECT 1 FROM components
    WHERE provider_id = sqlc.arg(provider_id) AND tenant_id IS NOT DISTINCT FROM sqlc.narg(tenant_id)::uuid
      AND lower(name) = lower(sqlc.arg(name)) AND deleted_at IS NULL
);

-- name: GetComponent :one
SELECT c.*, p.name AS provider, t.name AS semantic_type, tn.name AS tenant_name
FROM components c
JOIN semantic_providers p ON p.id = c.provider_id
JOIN semantic_resource_types t ON t.id = c.semantic_type_id
LEFT JOIN tenants tn ON tn.id = c.tenant_id
WHERE c.id = $1 AND c.deleted_at IS NULL;

-- name: LockComponent :one
SELECT latest_version FROM components WHERE id = $1 AND deleted_at IS NULL FOR UPDATE;

-- name: ListComponents :many
-- The catalog: a page of the components the viewer may see, filtered, by name. A component's
-- live deployments are counted in the tenants whose deployments the viewer may list
-- (deployment_tenant_ids; all with all_tenants): another tenant's are none of theirs. The page
-- is chosen on narrow rows, walking the components by name, then each card is read.
-- CountComponents counts what it filters: a change to one is a change to both.
SELECT c.id, c.tenant_id, c.name, c.display_name, c.description, c.language, c.latest_version,
       c.is_system, c.updated_at, p.name AS provider, t.name AS semantic_type, tn.name AS tenant_name,
       (SELECT count(*) FROM deployed_components d WHERE d.component_id = c.id AND d.status <> 'destroyed'
          AND (sqlc.arg(all_tenants)::boolean OR d.tenant_id = ANY(sqlc.arg(deployment_tenant_ids)::uuid[]))) AS deployments
FROM (SELECT c.id
    FROM components c
    WHERE c.deleted_at IS NULL
      AND (sqlc.arg(all_tenants)::boolean OR c.tenant_id IS NULL OR c.tenant_id = ANY(sqlc.arg(tenant_ids)::uuid[]))
      -- Unpublished drafts only for those who may edit them.
      AND (sqlc.arg(all_tenants)::boolean OR c.latest_version > 0 OR c.tenant_id = ANY(sqlc.arg(editable_tenant_ids)::uuid[]))
      AND (sqlc.narg(search)::text IS NULL
           OR c.name ILIKE '%' || sqlc.narg(search) || '%'
           OR c.display_name ILIKE '%' || sqlc.narg(search) || '%'
           OR c.description ILIKE '%' || sqlc.narg(search) || '%')
      AND (sqlc.narg(provider)::text IS NULL OR c.provider_id = (SELECT id FROM semantic_providers WHERE name = sqlc.narg(provider)))
      AND (sqlc.narg(semantic_type)::text IS NULL
           OR c.semantic_type_id = (SELECT id FROM semantic_resource_types WHERE name = sqlc.narg(semantic_type)))
      AND (sqlc.narg(scope)::text IS NULL
           OR (sqlc.narg(scope) = 'provider' AND c.tenant_id IS NULL)
           OR (sqlc.narg(scope) = 'tenant' AND c.tenant_id IS NOT NULL))
      AND (NOT sqlc.arg(published_only)::boolean OR c.latest_version > 0)
      -- Components governance denies to all the viewer's tenants are hidden from those who may not
      -- change that.
      AND NOT c.id = ANY(sqlc.arg(hidden_ids)::uuid[])
      -- Tenants are offered what they can deploy: no part Nimbus deploys itself, and only
      -- components of a provider one of their environments deploys to (all_providers when one
      -- of them is in no landing zone, and so deploys to any).
      AND (sqlc.arg(all_tenants)::boolean OR NOT c.system_only)
      AND (sqlc.arg(all_tenants)::boolean OR sqlc.arg(all_providers)::boolean
           OR c.provider_id IN (SELECT id FROM semantic_providers WHERE name = ANY(sqlc.arg(providers)::text[])))
    ORDER BY lower(c.name), c.id
    LIMIT sqlc.arg(max_rows) OFFSET sqlc.arg(skip)) page
JOIN components c ON c.id = page.id
JOIN semantic_providers p ON p.id = c.provider_id
JOIN semantic_resource_types t ON t.id = c.semantic_type_id
LEFT JOIN tenants tn ON tn.id = c.tenant_id
ORDER BY lower(c.name), c.id;

-- name: CountComponents :one
-- How many components the catalog's filter matches: ListComponents's filter, counted apart
-- so that the count reads narrow rows and the page only its own.
SELECT count(*) FROM components c
WHERE c.deleted_at IS NULL
  AND (sqlc.arg(all_tenants)::boolean OR c.tenant_id IS NULL OR c.tenant_id = ANY(sqlc.arg(tenant_ids)::uuid[]))
  AND (sqlc.arg(all_tenants)::boolean OR c.latest_version > 0 OR c.tenant_id = ANY(sqlc.arg(editable_tenant_ids)::uuid[]))
  AND (sqlc.narg(search)::text IS NULL
       OR c.name ILIKE '%' || sqlc.narg(search) || '%'
       OR c.display_name ILIKE '%' || sqlc.narg(search) || '%'
       OR c.description ILIKE '%' || sqlc.narg(search) || '%')
  AND (sqlc.narg(provider)::text IS NULL OR c.provider_id = (SELECT id FROM semantic_providers WHERE name = sqlc.narg(provider)))
  AND (sqlc.narg(semantic_type)::text IS NULL
       OR c.semantic_type_id = (SELECT id FROM semantic_resource_types WHERE name = sqlc.narg(semantic_type)))
  AND (sqlc.narg(scope)::text IS NULL
       OR (sqlc.narg(scope) = 'provider' AND c.tenant_id IS NULL)
       OR (sqlc.narg(scope) = 'tenant' AND c.tenant_id IS NOT NULL))
  AND (NOT sqlc.arg(published_only)::boolean OR c.latest_version > 0)
  AND NOT c.id = ANY(sqlc.arg(hidden_ids)::uuid[])
  AND (sqlc.arg(all_tenants)::boolean OR NOT c.system_only)
  AND (sqlc.arg(all_tenants)::boolean OR sqlc.arg(all_providers)::boolean
       OR c.provider_id IN (SELECT id FROM semantic_providers WHERE name = ANY(sqlc.arg(providers)::text[])));

-- name: UpdateComponentDraft :exec
-- Every change of the draft is a new revision of it.
UPDATE components SET display_name = $2, description = $3, language = $4, code = $5,
    input_schema = $6, output_schema = $7, resolver_bindings = $8, revision = revision + 1, updated_at = now()
WHERE id = $1;

-- name: SoftDeleteComponent :exec
UPDATE components SET deleted_at = now(), updated_at = now() WHERE id = $1;

-- name: InsertComponentVersion :one
INSERT INTO component_versions (component_id, version, language, code, input_schema, output_schema,
    resolver_bindings, changelog, published_by, release)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
RETURNING *;

-- name: SetLatestVersion :exec
UPDATE components SET latest_version = $2, updated_at = now() WHERE id = $1;

-- name: ListComponentVersions :many
SELECT v.id, v.component_id, v.version, v.language, v.changelog, v.published_at, v.archived_at, v.release,
       u.email AS published_by_email
FROM component_versions v
LEFT JOIN users u ON u.id = v.published_by
WHERE v.component_id = $1
ORDER BY v.version DESC;

-- name: GetComponentVersion :one
SELECT v.*, u.email AS published_by_email
FROM component_versions v
LEFT JOIN users u ON u.id = v.published_by
WHERE v.component_id = $1 AND v.version = $2;

-- name: VersionInUse :one
SELECT EXISTS (
    SELECT 1 FROM deployed_components
    WHERE component_id = $1 AND version = $2 AND status <> 'destroyed'
);

-- name: ArchiveComponentVersion :execrows
UPDATE component_versions SET archived_at = now(), updated_at = now()
WHERE component_id = $1 AND version = $2 AND archived_at IS NULL;

-- name: CreateProvider :one
INSERT INTO semantic_providers (name, display_name, description) VALUES ($1, $2, $3) RETURNING *;

-- name: CreateSemanticType :one
INSERT INTO semantic_resource_types (name, display_name, description) VALUES ($1, $2, $3) RETURNING *;

-- name: CreateProviderResourceType :one
INSERT INTO provider_resource_types (provider_id, semantic_type_id, pulumi_type, description)
VALUES ($1, $2, $3, $4) RETURNING *;

-- name: ProvidersOfTenants :one
-- The providers the tenants' live environments deploy to, and whether one of those environments
-- is in no landing zone (and so deploys to any provider).
SELECT coalesce(array_agg(DISTINCT z.provider) FILTER (WHERE z.provider IS NOT NULL), '{}')::text[] AS providers,
    coalesce(bool_or(e.landing_zone_id IS NULL), false)::boolean AS any_provider
FROM environments e
LEFT JOIN landing_zones z ON z.id = e.landing_zone_id
WHERE e.tenant_id = ANY(sqlc.arg(tenant_ids)::uuid[]) AND e.deleted_at IS NULL AND e.status <> 'decommissioned';

-- name: ComponentResourceTypes :many
-- The engine's resource types of a component's provider and semantic type.
SELECT pulumi_type FROM provider_resource_types WHERE provider_id = $1 AND semantic_type_id = $2;
