-- name: LockBuiltins :exec
-- Serialises the shipping of built-in components between Nimbus processes starting together.
SELECT pg_advisory_xact_lock(hashtext('nimbus.builtin_components'));

-- name: ProviderComponentEverExisted :one
-- Whether the provider has, or once had, a provider-level component of this name: deleted
-- ones count, so a built-in component a provider admin deleted is not shipped again.
SELECT EXISTS (
    SELECT 1 FROM components
    WHERE provider_id = sqlc.arg(provider_id) AND tenant_id IS NULL AND lower(name) = lower(sqlc.arg(name))
);

-- name: ShippedComponent :one
-- A built-in component as it stands: its latest version, and its draft. Only one Nimbus ships
-- and keeps (is_system, not deleted) is found.
SELECT c.id, c.code AS draft_code, c.input_schema AS draft_input_schema, c.output_schema AS draft_output_schema,
    c.resolver_bindings AS draft_resolver_bindings, c.display_name, c.description, c.language,
    v.version, v.code, v.input_schema, v.output_schema, v.resolver_bindings, v.published_by
FROM components c JOIN component_versions v ON v.component_id = c.id AND v.version = c.latest_version
WHERE c.provider_id = sqlc.arg(provider_id) AND c.tenant_id IS NULL AND lower(c.name) = lower(sqlc.arg(name))
  AND c.is_system AND c.deleted_at IS NULL;
