-- name: GovernanceRules :many
-- The provider's and the tenant's rule for one component, whichever exist.
SELECT g.*, u.email AS updated_by_email
FROM component_governance g
LEFT JOIN users u ON u.id = g.updated_by
WHERE g.tenant_id = $1 AND g.component_id = $2;

-- name: TenantGovernanceRules :many
-- Every rule of one tenant, for the overview of its components.
SELECT g.*, u.email AS updated_by_email
FROM component_governance g
LEFT JOIN users u ON u.id = g.updated_by
WHERE g.tenant_id = $1;

-- name: UpsertGovernanceRule :one
INSERT INTO component_governance (component_id, tenant_id, set_by, is_allowed, parameter_constraints, max_instances, updated_by)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (tenant_id, component_id, set_by) DO UPDATE
SET is_allowed = EXCLUDED.is_allowed, parameter_constraints = EXCLUDED.parameter_constraints,
    max_instances = EXCLUDED.max_instances, updated_by = EXCLUDED.updated_by, updated_at = now()
RETURNING *;

-- name: DeniedComponents :many
-- Components denied, by either rule, in every one of the given tenants.
SELECT component_id
FROM component_governance
WHERE tenant_id = ANY(sqlc.arg(tenant_ids)::uuid[]) AND NOT is_allowed
GROUP BY component_id
HAVING count(DISTINCT tenant_id) = cardinality(sqlc.arg(tenant_ids)::uuid[]);

-- name: LockTenantInstances :exec
-- Serialises instance counting per tenant until the transaction ends. The text prefix keeps
-- the key apart from other advisory locks.
SELECT pg_advisory_xact_lock(hashtextextended('nimbus.governance.instances:' || sqlc.arg(tenant_id)::uuid::text, 0));

-- name: CountLiveDeployments :one
-- A deployment counts until it is destroyed, except one whose first deploy failed or was
-- cancelled: what it made was removed, and it holds nothing.
SELECT count(*) FROM deployed_components d
WHERE d.tenant_id = $1 AND d.component_id = $2 AND d.status <> 'destroyed'
  AND NOT (d.status IN ('failed', 'cancelled') AND NOT EXISTS (SELECT 1 FROM operations o WHERE o.deployment_id = d.id
      AND o.status = 'succeeded' AND o.kind IN ('deploy', 'update', 'upgrade')));

-- name: CountTenantLiveDeployments :many
SELECT d.component_id, count(*) AS live FROM deployed_components d
WHERE d.tenant_id = $1 AND d.status <> 'destroyed'
  AND NOT (d.status IN ('failed', 'cancelled') AND NOT EXISTS (SELECT 1 FROM operations o WHERE o.deployment_id = d.id
      AND o.status = 'succeeded' AND o.kind IN ('deploy', 'update', 'upgrade')))
GROUP BY d.component_id;

-- name: GovernableComponents :many
-- The published components a tenant can use, with the inputs of their latest version.
SELECT c.id, c.tenant_id, c.name, c.display_name, c.latest_version, p.name AS provider, v.input_schema
FROM components c
JOIN semantic_providers p ON p.id = c.provider_id
JOIN component_versions v ON v.component_id = c.id AND v.version = c.latest_version
WHERE c.deleted_at IS NULL AND (c.tenant_id IS NULL OR c.tenant_id = sqlc.arg(tenant_id)::uuid)
ORDER BY lower(c.name), c.id;

-- name: GovernableComponent :one
SELECT c.id, c.tenant_id, c.name, c.display_name, c.latest_version, p.name AS provider, v.input_schema
FROM components c
JOIN semantic_providers p ON p.id = c.provider_id
JOIN component_versions v ON v.component_id = c.id AND v.version = c.latest_version
WHERE c.id = sqlc.arg(component_id) AND c.deleted_at IS NULL
  AND (c.tenant_id IS NULL OR c.tenant_id = sqlc.arg(tenant_id)::uuid);

-- name: DeleteGovernanceRule :one
DELETE FROM component_governance WHERE tenant_id = $1 AND component_id = $2 AND set_by = $3
RETURNING *;
