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
