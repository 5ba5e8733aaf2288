-- name: SetZoneCluster :one
INSERT INTO zone_clusters (landing_zone_id, server, kubeconfig, secret_key_id, server_version, signed_in_as, checked_at, set_by)
VALUES ($1, $2, $3, $4, $5, $6, now(), $7)
ON CONFLICT (landing_zone_id) DO UPDATE SET
    server = excluded.server, kubeconfig = excluded.kubeconfig, secret_key_id = excluded.secret_key_id,
    server_version = excluded.server_version, signed_in_as = excluded.signed_in_as,
    checked_at = excluded.checked_at, set_by = excluded.set_by, updated_at = now()
RETURNING *;

-- name: GetZoneCluster :one
SELECT * FROM zone_clusters WHERE landing_zone_id = $1;

-- name: RemoveZoneCluster :execrows
DELETE FROM zone_clusters WHERE landing_zone_id = $1;

-- name: CheckedZoneCluster :one
UPDATE zone_clusters SET server_version = $2, signed_in_as = $3, checked_at = now()
WHERE landing_zone_id = $1 AND updated_at = $4
RETURNING *;

-- name: ZoneHasCluster :one
SELECT EXISTS (SELECT 1 FROM zone_clusters WHERE landing_zone_id = $1);

-- name: CreateTenantNamespace :one
INSERT INTO tenant_namespaces (tenant_id, landing_zone_id, namespace, stack_instance_id, created_by)
VALUES ($1, $2, $3, $4, $5)
RETURNING *;

-- name: TenantNamespace :one
-- A tenant's namespace on a zone's cluster, however its factory instance stands.
SELECT * FROM tenant_namespaces WHERE tenant_id = $1 AND landing_zone_id = $2;

-- name: LiveTenantNamespace :one
-- The namespace a tenant's Kubernetes deploys on a zone's cluster run in: one whose factory
-- has made it and is not taking it down (or that no factory instance of Nimbus's made).
SELECT n.* FROM tenant_namespaces n
LEFT JOIN stack_instances i ON i.id = n.stack_instance_id
WHERE n.tenant_id = $1 AND n.landing_zone_id = $2
  AND (n.stack_instance_id IS NULL OR i.status NOT IN ('pending', 'destroying', 'destroyed'));

-- name: ClusteredZones :many
-- The landing zones with a Kubernetes cluster, for discovery to look at each.
SELECT landing_zone_id FROM zone_clusters ORDER BY landing_zone_id;

-- name: LockZoneCluster :one
-- A zone's cluster, locked while a discovery records what it saw there.
SELECT landing_zone_id FROM zone_clusters WHERE landing_zone_id = $1 FOR UPDATE;
