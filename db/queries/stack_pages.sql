-- name: StackChoices :many
-- The stacks the list of stack instances filters by, and offers to deploy when published:
-- provider stacks and the tenants' own.
SELECT s.id, s.name, s.display_name,
    EXISTS (SELECT 1 FROM stack_versions v WHERE v.stack_id = s.id AND v.archived_at IS NULL) AS published
FROM stacks s
WHERE s.deleted_at IS NULL
  AND (s.tenant_id IS NULL OR sqlc.arg(all_tenants)::boolean OR s.tenant_id = ANY(sqlc.arg(tenant_ids)::uuid[]))
ORDER BY lower(s.name);

-- name: ComponentNames :many
-- The names of components, for the slots of a stack drawn.
SELECT id, name FROM components WHERE id = ANY(sqlc.arg(ids)::uuid[]);
