-- name: CreateEnvironment :one
-- Writes the status, as SetEnvironmentStatus and StartEnvironmentTransition do: only
-- app/orchestration/environment's transitions call these three, and no other query writes it (a test says so).
INSERT INTO environments (tenant_id, name, created_by, landing_zone_id, template_id, status, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *;

-- name: GetEnvironment :one
SELECT e.*, t.name AS tenant_name, coalesce(z.name, '')::text AS landing_zone_name, coalesce(tp.name, '')::text AS template_name,
    coalesce(z.provider, '')::text AS landing_zone_provider
FROM environments e JOIN tenants t ON t.id = e.tenant_id
LEFT JOIN landing_zones z ON z.id = e.landing_zone_id
LEFT JOIN environment_templates tp ON tp.id = e.template_id
WHERE e.id = $1 AND e.deleted_at IS NULL AND t.deleted_at IS NULL;

-- name: ListEnvironments :many
-- Environments of the tenants the viewer may see (all for provider admins), by tenant and name;
-- the system tenant's, which hold landing zones' system services, only when asked for.
SELECT e.*, t.name AS tenant_name, coalesce(z.name, '')::text AS landing_zone_name, coalesce(tp.name, '')::text AS template_name,
    coalesce(z.provider, '')::text AS landing_zone_provider
FROM environments e JOIN tenants t ON t.id = e.tenant_id
LEFT JOIN landing_zones z ON z.id = e.landing_zone_id
LEFT JOIN environment_templates tp ON tp.id = e.template_id
WHERE e.deleted_at IS NULL AND t.deleted_at IS NULL AND NOT t.system
  AND (sqlc.arg(all_tenants)::boolean OR e.tenant_id = ANY(sqlc.arg(tenant_ids)::uuid[]))
ORDER BY lower(t.name), lower(e.name);

-- name: LeadingEnvironments :many
-- The first environments, at most shown, of those the viewer may see and not gone (decommissioned),
-- as a glance puts them: those in a status of first (failed), then those in none of first or
-- last (under way), then those in last (settled), each by tenant and name.
SELECT e.*, t.name AS tenant_name, coalesce(z.name, '')::text AS landing_zone_name, coalesce(tp.name, '')::text AS template_name,
    coalesce(z.provider, '')::text AS landing_zone_provider
FROM environments e JOIN tenants t ON t.id = e.tenant_id
LEFT JOIN landing_zones z ON z.id = e.landing_zone_id
LEFT JOIN environment_templates tp ON tp.id = e.template_id
WHERE e.deleted_at IS NULL AND t.deleted_at IS NULL AND NOT t.system AND e.status <> sqlc.arg(gone)::text
  AND (sqlc.arg(all_tenants)::boolean OR e.tenant_id = ANY(sqlc.arg(tenant_ids)::uuid[]))
ORDER BY CASE WHEN e.status = ANY(sqlc.arg(first)::text[]) THEN 0 WHEN e.status = ANY(sqlc.arg(last)::text[]) THEN 2 ELSE 1 END,
    lower(t.name), lower(e.name)
LIMIT sqlc.arg(shown);

-- name: CountLiveEnvironments :one
-- How many environments LeadingEnvironments chooses from.
SELECT count(*) FROM environments e JOIN tenants t ON t.id = e.tenant_id
WHERE e.deleted_at IS NULL AND t.deleted_at IS NULL AND NOT t.system AND e.status <> sqlc.arg(gone)::text
  AND (sqlc.arg(all_tenants)::boolean OR e.tenant_id = ANY(sqlc.arg(tenant_ids)::uuid[]));

-- name: EnvironmentInTransition :one
-- The deployment's environment, when it is being provisioned or decommissioned. The share lock
-- waits for a change of its status under way, so an operation ending now never misses one.
SELECT e.id FROM environments e JOIN deployed_components d ON d.environment_id = e.id
WHERE d.id = $1 AND e.status IN ('provisioning', 'decommissioning')
FOR SHARE OF e;

-- name: ShareEnvironment :one
-- The environment's status, held until the transaction ends: a deployment recorded or an
-- operation queued meanwhile sees the status it will live with.
SELECT status FROM environments WHERE id = $1 FOR SHARE;

-- name: LockEnvironment :one
SELECT * FROM environments WHERE id = $1 FOR UPDATE;

-- name: SetEnvironmentStatus :exec
-- How a provisioning or decommissioning ended, and when it failed, which of the two did.
UPDATE environments SET status = $2, status_reason = $3, failed_transition = $4, updated_at = clock_timestamp() WHERE id = $1;

-- name: StartEnvironmentTransition :exec
-- A person starts provisioning or decommissioning: its steps' operations are theirs.
UPDATE environments SET status = $2, status_reason = '', status_by = $3, failed_transition = NULL, updated_at = clock_timestamp()
WHERE id = $1;

-- name: EnvironmentDeployments :many
-- An environment's deployments, with the template component each was made for and the last
-- operation on each.
SELECT d.id, d.name, d.status, d.outputs, d.created_at, d.template_component_id, d.component_id, c.name AS component_name, d.version,
    coalesce(tc.position, 0)::integer AS position, coalesce(tc.refers, '{}')::jsonb AS refers,
    coalesce(o.kind, '')::text AS last_kind, coalesce(o.status, '')::text AS last_status,
    coalesce(o.error, '')::text AS last_error, coalesce(o.created_at, 'epoch')::timestamptz AS last_at
FROM deployed_components d
JOIN components c ON c.id = d.component_id
LEFT JOIN template_components tc ON tc.id = d.template_component_id
LEFT JOIN LATERAL (SELECT kind, status, error, created_at FROM operations
    WHERE deployment_id = d.id ORDER BY created_at DESC, id DESC LIMIT 1) o ON true
WHERE d.environment_id = $1
ORDER BY d.created_at, coalesce(tc.position, 0), d.id;

-- name: ZoneLiveEnvironments :many
-- A zone's tenant environments that are not decommissioned.
SELECT e.id, e.name, e.tenant_id, t.name AS tenant_name, e.status FROM environments e JOIN tenants t ON t.id = e.tenant_id
WHERE e.landing_zone_id = $1 AND NOT t.system AND e.status <> 'decommissioned' AND e.deleted_at IS NULL
ORDER BY lower(t.name), lower(e.name);

-- name: EnvironmentAllocations :many
-- The addresses and subnets the environment's deployments hold, from any pool, with the inputs
-- each fills; an address handed out inside a subnet follows the subnet, naming it. moving marks
-- one handed out for a move still under way, beside the one it replaces.
SELECT a.prefix, a.kind, a.input, (a.replaces IS NOT NULL)::boolean AS moving, d.name AS deployment_name, d.id AS deployment_id, p.name AS pool_name,
    coalesce((SELECT string_agg(b.key, ', ' ORDER BY b.key) FROM component_versions v, jsonb_each_text(v.resolver_bindings) b
        WHERE v.component_id = d.component_id AND v.version = d.version AND split_part(b.value, '.', 1) = 'ipam'
          AND (b.value = 'ipam.subnet') = (a.input = 'ipam.subnet')), '')::text AS inputs,
    coalesce(parent.prefix::text, '')::text AS within,
    coalesce(pd.name, '')::text AS within_deployment
FROM ipam_allocations a
JOIN deployed_components d ON d.id = a.deployment_id
JOIN ipam_pools p ON p.id = a.pool_id
LEFT JOIN ipam_allocations parent ON parent.id = a.parent_id
LEFT JOIN deployed_components pd ON pd.id = parent.deployment_id
WHERE d.environment_id = $1
ORDER BY coalesce(parent.prefix, a.prefix), a.parent_id IS NOT NULL, a.prefix;
