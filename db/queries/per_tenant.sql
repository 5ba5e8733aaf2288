-- name: LockTenantPlaces :exec
-- Serialises, for the rest of the transaction and across every replica, the callers that count
-- one tenant's work of a scope and then add to it: checks asked for, checks running, operations
-- running. A NULL tenant is the provider's own work, which counts as one more tenant.
SELECT pg_advisory_xact_lock(hashtextextended('nimbus.' || sqlc.arg(scope)::text || ':' ||
    coalesce(sqlc.narg(tenant_id)::uuid::text, 'provider'), 0));
