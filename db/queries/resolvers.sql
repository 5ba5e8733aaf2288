-- name: CreatePool :one
INSERT INTO ipam_pools (tenant_id, environment_id, landing_zone_id, name, prefix, reserved, created_by)
VALUES ($1, $2, $3, $4, $5, $6, $7)
RETURNING *;

-- name: GetPool :one
SELECT p.*, coalesce(e.name, '')::text AS environment_name, coalesce(z.name, '')::text AS landing_zone_name,
    coalesce(t.name, '')::text AS tenant_name
FROM ipam_pools p
LEFT JOIN environments e ON e.id = p.environment_id
LEFT JOIN tenants t ON t.id = p.tenant_id
LEFT JOIN landing_zones z ON z.id = p.landing_zone_id
WHERE p.id = $1 AND (p.tenant_id IS NULL OR t.deleted_at IS NULL);

-- name: LockPool :one
-- Allocations from one pool take turns, so each sees the ones before it.
SELECT * FROM ipam_pools WHERE id = $1 FOR UPDATE;

-- name: ListPools :many
-- Pools of the given tenants' environments; a landing zone's pools only with all_tenants.
-- Never a deleted tenant's: its environments are gone with it.
SELECT p.*, coalesce(e.name, '')::text AS environment_name, coalesce(z.name, '')::text AS landing_zone_name,
    coalesce(t.name, '')::text AS tenant_name,
    (SELECT count(*) FROM ipam_allocations a WHERE a.pool_id = p.id) AS allocations
FROM ipam_pools p
LEFT JOIN environments e ON e.id = p.environment_id
LEFT JOIN tenants t ON t.id = p.tenant_id
LEFT JOIN landing_zones z ON z.id = p.landing_zone_id
WHERE (sqlc.arg(all_tenants)::boolean OR p.tenant_id = ANY(sqlc.arg(tenant_ids)::uuid[]))
  AND (p.tenant_id IS NULL OR t.deleted_at IS NULL)
  AND (sqlc.narg(environment_id)::uuid IS NULL OR p.environment_id = sqlc.narg(environment_id))
  AND (sqlc.narg(landing_zone_id)::uuid IS NULL OR p.landing_zone_id = sqlc.narg(landing_zone_id))
ORDER BY p.landing_zone_id IS NULL, lower(coalesce(z.name, e.name)), lower(p.name);

-- name: PoolAllocations :many
-- A pool's allocations, with the inputs of the deployment's version that each fills: an
-- allocation is held under its resolver's key (ipam, or ipam.subnet), not under an input.
SELECT a.*, coalesce(d.name, '') AS deployment_name,
    coalesce((SELECT string_agg(b.key, ', ' ORDER BY b.key) FROM component_versions v, jsonb_each_text(v.resolver_bindings) b
        WHERE v.component_id = d.component_id AND v.version = d.version AND split_part(b.value, '.', 1) = 'ipam'
          AND (b.value = 'ipam.subnet') = (a.input = 'ipam.subnet')), '')::text AS inputs
FROM ipam_allocations a LEFT JOIN deployed_components d ON d.id = a.deployment_id
WHERE a.pool_id = $1
ORDER BY a.prefix;

-- name: AllocatedPrefixes :many
SELECT prefix FROM ipam_allocations WHERE pool_id = $1 ORDER BY prefix;

-- name: GetAllocation :one
SELECT * FROM ipam_allocations WHERE id = $1;

-- name: ChildPrefixes :many
-- The addresses handed out inside a subnet.
SELECT prefix FROM ipam_allocations WHERE parent_id = $1 ORDER BY prefix;

-- name: CreateAllocation :one
INSERT INTO ipam_allocations (pool_id, prefix, kind, deployment_id, operation_id, input, parent_id, replaces)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
RETURNING *;

-- name: DeploymentAllocation :one
-- What a deployment holds and uses for an input, with the prefix its address is part of: the
-- subnet it was handed out in, else its pool's.
SELECT a.*, coalesce(parent.prefix, pool.prefix)::cidr AS within
FROM ipam_allocations a
JOIN ipam_pools pool ON pool.id = a.pool_id
LEFT JOIN ipam_allocations parent ON parent.id = a.parent_id
WHERE a.deployment_id = $1 AND a.input = $2 AND a.replaces IS NULL;

-- name: DeploymentHoldings :many
-- What a deployment holds for an input: the allocation in use first, then the one an operation
-- moves it to, each with the prefix its address is part of.
SELECT a.*, coalesce(parent.prefix, pool.prefix)::cidr AS within
FROM ipam_allocations a
JOIN ipam_pools pool ON pool.id = a.pool_id
LEFT JOIN ipam_allocations parent ON parent.id = a.parent_id
WHERE a.deployment_id = $1 AND a.input = $2
ORDER BY a.replaces IS NOT NULL;

-- name: AdoptAllocation :exec
-- An allocation handed out for a move that another operation (a preview of it, one that ended
-- without giving it back) began, taken on by the operation that moves the deployment now: its
-- undo gives it back.
UPDATE ipam_allocations SET operation_id = $2 WHERE id = $1;

-- name: DropAllocation :exec
-- A move's allocation no operation goes on with.
DELETE FROM ipam_allocations WHERE id = $1;

-- name: ReferredDeployments :many
-- The live deployments of an environment that an input naming one by an output's value may
-- mean: of the semantic type it refers to, with that value under that output.
SELECT d.id FROM deployed_components d
JOIN components c ON c.id = d.component_id
JOIN semantic_resource_types t ON t.id = c.semantic_type_id
WHERE d.environment_id = sqlc.arg(environment_id) AND t.name = sqlc.arg(semantic_type)::text
  AND d.outputs ->> sqlc.arg(output)::text = sqlc.arg(value)::text AND d.status <> 'destroyed'
ORDER BY d.created_at
LIMIT 2;

-- name: ReleaseOperationAllocations :execrows
-- What one operation allocated, given back when it is undone.
DELETE FROM ipam_allocations WHERE operation_id = $1;

-- name: ReleaseReplacedAllocations :execrows
-- What the allocations one operation moved its deployment to replace, given back when it
-- succeeds; the moved-to allocations' replaces clear with them (ON DELETE SET NULL).
DELETE FROM ipam_allocations old WHERE old.id IN (
    SELECT moved.replaces FROM ipam_allocations moved WHERE moved.operation_id = $1 AND moved.replaces IS NOT NULL);

-- name: ReleaseDeploymentAllocations :execrows
DELETE FROM ipam_allocations WHERE deployment_id = $1;

-- name: SetEnvironmentResolverConfig :one
INSERT INTO resolver_configurations (environment_id, type, config, updated_by)
VALUES ($1, $2, $3, $4)
ON CONFLICT (environment_id, type) WHERE environment_id IS NOT NULL
DO UPDATE SET config = EXCLUDED.config, updated_by = EXCLUDED.updated_by, updated_at = now()
RETURNING *;

-- name: SetZoneResolverConfig :one
INSERT INTO resolver_configurations (landing_zone_id, type, config, updated_by)
VALUES ($1, $2, $3, $4)
ON CONFLICT (landing_zone_id, type) WHERE landing_zone_id IS NOT NULL
DO UPDATE SET config = EXCLUDED.config, updated_by = EXCLUDED.updated_by, updated_at = now()
RETURNING *;

-- name: DeleteEnvironmentResolverConfig :execrows
-- Removes an environment's override, so the landing zone's configuration applies again.
DELETE FROM resolver_configurations WHERE environment_id = $1 AND type = $2;

-- name: OwnResolverConfigs :many
-- The configurations set on one environment or one landing zone itself.
SELECT * FROM resolver_configurations
WHERE environment_id = sqlc.narg(environment_id) OR landing_zone_id = sqlc.narg(landing_zone_id)
ORDER BY type;

-- name: EffectiveResolverConfigs :many
-- What resolves in an environment: per type, its own override, else its landing zone's.
SELECT DISTINCT ON (c.type) c.*
FROM resolver_configurations c
JOIN environments e ON e.id = sqlc.arg(environment_id)::uuid
WHERE c.environment_id = e.id OR c.landing_zone_id = e.landing_zone_id
ORDER BY c.type, c.environment_id IS NULL;

-- name: NextInSequence :one
INSERT INTO naming_sequences (scope, last) VALUES ($1, 1)
ON CONFLICT (scope) DO UPDATE SET last = naming_sequences.last + 1, updated_at = now()
RETURNING last;

-- name: IssueName :one
INSERT INTO issued_names (environment_id, name, fqdn, deployment_id, operation_id, input)
VALUES ($1, $2, $3, $4, $5, $6)
RETURNING *;

-- name: DeploymentName :one
SELECT * FROM issued_names WHERE deployment_id = $1 AND input = $2;

-- name: ReleaseOperationNames :execrows
DELETE FROM issued_names WHERE operation_id = $1;

-- name: ReleaseDeploymentNames :execrows
DELETE FROM issued_names WHERE deployment_id = $1;

-- name: IssuedNames :many
SELECT n.*, coalesce(d.name, '') AS deployment_name
FROM issued_names n LEFT JOIN deployed_components d ON d.id = n.deployment_id
WHERE n.environment_id = $1 ORDER BY n.created_at DESC LIMIT 500;

-- name: NameTaken :one
SELECT EXISTS (SELECT 1 FROM issued_names WHERE environment_id = $1 AND lower(name) = lower(sqlc.arg(name)));

-- name: LastInSequence :one
SELECT coalesce((SELECT last FROM naming_sequences WHERE scope = $1), 0)::bigint;

-- name: ResolverContext :one
-- What the resolvers of a deployment may know of it.
SELECT t.name AS tenant_name, e.name AS environment_name, c.name AS component_name, st.name AS semantic_type,
    sp.name AS provider
FROM deployed_components d
JOIN tenants t ON t.id = d.tenant_id
JOIN environments e ON e.id = d.environment_id
JOIN components c ON c.id = d.component_id
JOIN semantic_resource_types st ON st.id = c.semantic_type_id
JOIN semantic_providers sp ON sp.id = c.provider_id
WHERE d.id = $1;

-- name: FindImage :one
SELECT * FROM image_catalog
WHERE provider = $1 AND lower(os_family) = lower(sqlc.arg(os_family)) AND lower(os_version) = lower(sqlc.arg(os_version))
  AND lower(architecture) = lower(sqlc.arg(architecture));

-- name: ListImages :many
SELECT * FROM image_catalog ORDER BY provider, lower(os_family), os_version, architecture;

-- name: CreateImage :one
INSERT INTO image_catalog (provider, os_family, os_version, architecture, image_id, image_name)
VALUES ($1, $2, $3, $4, $5, $6)
RETURNING *;

-- name: DeleteImage :execrows
DELETE FROM image_catalog WHERE id = $1;

-- name: OverlappingPool :one
-- A pool sharing an address with the prefix among those the landing zone's environments use:
-- the zone's own pools and its environments'.
SELECT p.name FROM ipam_pools p LEFT JOIN environments e ON e.id = p.environment_id
WHERE p.prefix && sqlc.arg(prefix)::cidr
  AND (p.landing_zone_id = sqlc.arg(landing_zone_id)::uuid OR e.landing_zone_id = sqlc.arg(landing_zone_id)::uuid)
LIMIT 1;

-- name: CatalogImageComponents :many
-- The provider's own components whose latest version takes an input from the image catalog,
-- with that version's bindings and input schema: an entry of the catalog must fit one of them.
SELECT c.name, v.resolver_bindings, v.input_schema
FROM components c
JOIN semantic_providers p ON p.id = c.provider_id
JOIN component_versions v ON v.component_id = c.id AND v.version = c.latest_version
WHERE p.name = $1 AND c.tenant_id IS NULL AND c.deleted_at IS NULL
  AND v.resolver_bindings @? '$.* ? (@ == "image_catalog" || @ == "image_catalog.image_id")'
ORDER BY c.name;
