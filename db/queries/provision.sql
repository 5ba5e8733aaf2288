-- name: ProviderComponentsByName :many
-- A provider's own components of the given names, with their latest published versions.
SELECT c.id, c.name, c.latest_version
FROM components c
JOIN semantic_providers p ON p.id = c.provider_id
WHERE p.name = sqlc.arg(provider) AND c.tenant_id IS NULL AND c.deleted_at IS NULL
  AND c.name = ANY (sqlc.arg(names)::text[]);

-- name: SetZoneTenantStack :exec
UPDATE landing_zones SET tenant_stack_id = sqlc.narg(stack_id), updated_at = now() WHERE id = sqlc.arg(id);

-- name: TenantFactoryZones :many
-- The zones a tenant can be provisioned on: published, with a cluster and a tenant factory.
SELECT z.id, z.name, z.system_environment_id, z.tenant_stack_id, s.name AS stack_name,
       coalesce((SELECT max(v.version) FROM stack_versions v WHERE v.stack_id = s.id), 0)::int AS stack_version
FROM landing_zones z
JOIN stacks s ON s.id = z.tenant_stack_id AND s.deleted_at IS NULL
WHERE z.status = 'published' AND EXISTS (SELECT 1 FROM zone_clusters c WHERE c.landing_zone_id = z.id)
ORDER BY lower(z.name);

-- name: TenantNamespaces :many
-- A tenant's namespaces on clusters, with the factory instance that made each and how it stands.
SELECT n.*, z.name AS zone_name, i.name AS instance_name, coalesce(i.status, 'destroyed') AS instance_status,
       coalesce(i.error, '') AS instance_error
FROM tenant_namespaces n
JOIN landing_zones z ON z.id = n.landing_zone_id
LEFT JOIN stack_instances i ON i.id = n.stack_instance_id
WHERE n.tenant_id = $1
ORDER BY lower(z.name);

-- name: GetTenantNamespace :one
SELECT n.*, z.name AS zone_name, i.name AS instance_name, coalesce(i.status, 'destroyed') AS instance_status,
       coalesce(i.error, '') AS instance_error
FROM tenant_namespaces n
JOIN landing_zones z ON z.id = n.landing_zone_id
LEFT JOIN stack_instances i ON i.id = n.stack_instance_id
WHERE n.id = $1;

-- name: ForgetDecommissionedNamespaces :exec
-- Namespaces whose factory instance is destroyed are gone from the cluster: their rows give way
-- to a new provisioning of the tenant or of the namespace's name.
DELETE FROM tenant_namespaces n
WHERE n.landing_zone_id = sqlc.arg(landing_zone_id)
  AND (n.tenant_id = sqlc.arg(tenant_id) OR n.namespace = sqlc.arg(namespace))
  AND NOT EXISTS (SELECT 1 FROM stack_instances i WHERE i.id = n.stack_instance_id AND i.status <> 'destroyed');

-- name: FactoryCandidates :many
-- The provider's published stacks for Kubernetes, any of which may be a zone's tenant factory.
SELECT s.id, s.name, s.display_name
FROM stacks s
JOIN semantic_providers p ON p.id = s.provider_id
WHERE p.name = sqlc.arg(provider) AND s.tenant_id IS NULL AND s.deleted_at IS NULL
  AND EXISTS (SELECT 1 FROM stack_versions v WHERE v.stack_id = s.id)
ORDER BY lower(s.name);

-- name: TenantZoneDeployments :one
-- How many of a tenant's deployments on a zone are not destroyed: they live in its namespace.
SELECT count(*) FROM deployed_components d
JOIN environments e ON e.id = d.environment_id
WHERE d.tenant_id = $1 AND e.landing_zone_id = $2 AND d.status <> 'destroyed';

-- name: ZoneTenantNamespaces :many
-- The namespaces provisioned on a zone's cluster, with their tenants.
SELECT n.id, n.namespace, n.tenant_id, t.name AS tenant_name, coalesce(i.status, 'destroyed') AS instance_status
FROM tenant_namespaces n
JOIN tenants t ON t.id = n.tenant_id
LEFT JOIN stack_instances i ON i.id = n.stack_instance_id
WHERE n.landing_zone_id = $1
ORDER BY n.namespace;

-- name: InstanceTenantNamespace :one
-- The tenant namespace a factory instance made, if any.
SELECT * FROM tenant_namespaces WHERE stack_instance_id = $1;
