-- name: CreateLandingZone :one
INSERT INTO landing_zones (name, description, provider, created_by) VALUES ($1, $2, $3, $4) RETURNING *;

-- name: SetSystemEnvironment :exec
UPDATE landing_zones SET system_environment_id = $2, updated_at = now() WHERE id = $1;

-- name: GetLandingZone :one
SELECT * FROM landing_zones WHERE id = $1;

-- name: LockLandingZone :one
SELECT * FROM landing_zones WHERE id = $1 FOR UPDATE;

-- name: ShareLandingZone :one
-- The zone as it stays until the transaction ends: not retired meanwhile.
SELECT * FROM landing_zones WHERE id = $1 FOR SHARE;

-- name: SetLandingZoneStatus :exec
UPDATE landing_zones
SET status = sqlc.arg(status)::text, updated_at = now(),
    published_at = CASE WHEN sqlc.arg(status)::text = 'published' THEN now() ELSE published_at END,
    retired_at = CASE WHEN sqlc.arg(status)::text = 'retired' THEN now() ELSE retired_at END
WHERE id = sqlc.arg(id);

-- name: ListLandingZones :many
SELECT z.*, (SELECT count(*) FROM environments e
        WHERE e.landing_zone_id = z.id AND e.id IS DISTINCT FROM z.system_environment_id
          AND e.status <> 'decommissioned' AND e.deleted_at IS NULL) AS environments
FROM landing_zones z
WHERE (sqlc.narg(status)::text IS NULL OR z.status = sqlc.narg(status))
ORDER BY lower(z.name);

-- name: SystemTenant :one
SELECT id FROM tenants WHERE system;

-- name: CreateTemplate :one
INSERT INTO environment_templates (landing_zone_id, name, description, system, created_by)
VALUES ($1, $2, $3, $4, $5) RETURNING *;

-- name: GetTemplate :one
SELECT t.*, z.name AS landing_zone_name, z.status AS landing_zone_status, z.provider
FROM environment_templates t JOIN landing_zones z ON z.id = t.landing_zone_id
WHERE t.id = $1;

-- name: ZoneTemplates :many
-- A zone's templates, its system template (the system services) first.
SELECT * FROM environment_templates WHERE landing_zone_id = $1 ORDER BY system DESC, lower(name);

-- name: PublishedTemplates :many
-- The templates environments may be made from.
SELECT t.id, t.name, t.description, z.id AS landing_zone_id, z.name AS landing_zone_name
FROM environment_templates t JOIN landing_zones z ON z.id = t.landing_zone_id
WHERE NOT t.system AND t.withdrawn_at IS NULL AND z.status = 'published'
ORDER BY lower(z.name), lower(t.name);

-- name: WithdrawTemplate :execrows
UPDATE environment_templates SET withdrawn_at = now(), updated_at = now()
WHERE id = $1 AND landing_zone_id = $2 AND NOT system AND withdrawn_at IS NULL;

-- name: RemoveTemplateComponent :execrows
DELETE FROM template_components WHERE id = $1 AND template_id = $2;

-- name: SystemTemplate :one
SELECT * FROM environment_templates WHERE landing_zone_id = $1 AND system;

-- name: AddTemplateComponent :one
INSERT INTO template_components (template_id, component_id, name, parameters, refers, position)
VALUES ($1, $2, $3, $4, $5, (SELECT coalesce(max(position), 0) + 1 FROM template_components WHERE template_id = $1))
RETURNING *;

-- name: TemplateComponents :many
SELECT tc.*, c.name AS component_name, c.latest_version, c.resolver_bindings, p.name AS provider, t.name AS semantic_type
FROM template_components tc
JOIN components c ON c.id = tc.component_id
JOIN semantic_providers p ON p.id = c.provider_id
JOIN semantic_resource_types t ON t.id = c.semantic_type_id
WHERE tc.template_id = $1
ORDER BY tc.position;

-- name: ZoneTemplateComponents :many
-- Every component a zone's templates name, with the inputs and bindings of its latest version.
SELECT tc.name, tc.parameters, t.name AS template_name, t.system, (t.withdrawn_at IS NOT NULL)::boolean AS withdrawn,
       c.name AS component_name, v.resolver_bindings, v.input_schema
FROM template_components tc
JOIN environment_templates t ON t.id = tc.template_id
JOIN components c ON c.id = tc.component_id
JOIN component_versions v ON v.component_id = c.id AND v.version = c.latest_version
WHERE t.landing_zone_id = $1
ORDER BY t.system DESC, lower(t.name), tc.position;

-- name: ZoneComponentChoices :many
-- The components a zone of the provider can use: published, for every tenant.
SELECT c.id, c.name, t.name AS semantic_type FROM components c JOIN semantic_providers p ON p.id = c.provider_id
JOIN semantic_resource_types t ON t.id = c.semantic_type_id
WHERE p.name = $1 AND c.tenant_id IS NULL AND c.latest_version > 0 AND c.deleted_at IS NULL
ORDER BY lower(c.name);

-- name: ZoneOfSystemEnvironment :one
-- The landing zone whose system services the environment holds, if it is such an environment.
SELECT * FROM landing_zones WHERE system_environment_id = $1;
