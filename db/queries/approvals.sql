-- name: CreateApprovalPolicy :one
INSERT INTO approval_policies (scope, scope_id, operations, approvals_required, approver_role, created_by, by_provider_admin,
    requester_may_approve)
VALUES (sqlc.arg(scope), sqlc.arg(scope_id), sqlc.arg(operations)::text[], sqlc.arg(approvals_required),
    sqlc.arg(approver_role), sqlc.arg(created_by), sqlc.arg(by_provider_admin), sqlc.arg(requester_may_approve))
RETURNING *;

-- name: ListApprovalPolicies :many
-- The policies that bind deployments of the given tenants (all of them with all_tenants): on
-- their environments, on the landing zones of their environments, and on the components they
-- can use. scope_tenant_id is the environment's tenant, for environment policies.
SELECT p.*,
    CASE p.scope WHEN 'landing_zone' THEN coalesce(z.name, '')
        WHEN 'environment' THEN coalesce(t.name || ' / ' || e.name, '')
        ELSE coalesce(c.name, '') END::text AS scope_name,
    e.tenant_id AS scope_tenant_id,
    coalesce(u.email, '')::text AS created_by_email
FROM approval_policies p
LEFT JOIN landing_zones z ON p.scope = 'landing_zone' AND z.id = p.scope_id
LEFT JOIN environments e ON p.scope = 'environment' AND e.id = p.scope_id
LEFT JOIN tenants t ON t.id = e.tenant_id
LEFT JOIN components c ON p.scope = 'component' AND c.id = p.scope_id
LEFT JOIN users u ON u.id = p.created_by
WHERE (sqlc.narg(id)::uuid IS NULL OR p.id = sqlc.narg(id))
  AND (t.id IS NULL OR t.deleted_at IS NULL)
  AND (sqlc.arg(all_tenants)::boolean
    OR (p.scope = 'environment' AND e.tenant_id = ANY(sqlc.arg(tenant_ids)::uuid[]))
    OR (p.scope = 'component' AND (c.tenant_id IS NULL OR c.tenant_id = ANY(sqlc.arg(tenant_ids)::uuid[])))
    OR (p.scope = 'landing_zone' AND EXISTS (SELECT 1 FROM environments ze
        WHERE ze.landing_zone_id = p.scope_id AND ze.deleted_at IS NULL AND ze.tenant_id = ANY(sqlc.arg(tenant_ids)::uuid[]))))
ORDER BY p.scope, scope_name, p.created_at;

-- name: DeleteApprovalPolicy :execrows
DELETE FROM approval_policies WHERE id = $1;

-- name: ApprovalScopeZone :one
SELECT id, name FROM landing_zones WHERE id = $1;

-- name: ApprovalScopeEnvironment :one
SELECT id, tenant_id, name FROM environments WHERE id = $1 AND deleted_at IS NULL;

-- name: ApprovalScopeComponent :one
SELECT id, tenant_id, name FROM components WHERE id = $1 AND deleted_at IS NULL;

-- name: ApprovalScopeChoices :many
-- What a policy may be set on, for the form: landing zones and components for provider admins
-- (with_provider), and the environments of the given tenants (all with all_tenants).
SELECT 'landing_zone'::text AS scope, z.id, z.name::text AS name FROM landing_zones z
WHERE sqlc.arg(with_provider)::boolean
UNION ALL
SELECT 'environment'::text, e.id, (t.name || ' / ' || e.name)::text FROM environments e JOIN tenants t ON t.id = e.tenant_id
WHERE e.deleted_at IS NULL AND t.deleted_at IS NULL
  AND (sqlc.arg(all_tenants)::boolean OR e.tenant_id = ANY(sqlc.arg(tenant_ids)::uuid[]))
UNION ALL
SELECT 'component'::text, c.id, c.name::text FROM components c
WHERE sqlc.arg(with_provider)::boolean AND c.deleted_at IS NULL
ORDER BY 1, 3;

-- name: ApprovalPoliciesFor :many
-- The policies that bind an operation of the kind on a deployment of the component in the
-- environment: the component's, the environment's and its landing zone's. A zone's policies
-- are for its tenants' environments, not for its own system services, which the provider
-- deploys and retires with the zone.
SELECT p.approvals_required, p.approver_role, p.requester_may_approve FROM approval_policies p
WHERE sqlc.arg(kind)::text = ANY(p.operations)
  AND ((p.scope = 'component' AND p.scope_id = sqlc.arg(component_id)::uuid)
    OR (p.scope = 'environment' AND p.scope_id = sqlc.arg(environment_id)::uuid)
    OR (p.scope = 'landing_zone' AND p.scope_id = (SELECT e.landing_zone_id FROM environments e
        JOIN landing_zones z ON z.id = e.landing_zone_id
        WHERE e.id = sqlc.arg(environment_id)::uuid AND z.system_environment_id IS DISTINCT FROM e.id)));

-- name: CurrentApprovalRequest :one
SELECT * FROM approval_requests WHERE operation_id = $1 AND status <> 'void';

-- name: OpenApprovalRequest :one
-- The request of an operation that has just been previewed; it shows the preview step's plan.
-- A run's request (run_id) is opened once: when another of its operations opened it first,
-- nothing is inserted and the caller reads that one.
INSERT INTO approval_requests (operation_id, tenant_id, requested_by, approvals_required, approver_role, previewed_at, expires_at,
    requester_may_approve, run_id)
SELECT o.id, d.tenant_id, o.requested_by, sqlc.arg(approvals_required), sqlc.arg(approver_role),
    coalesce((SELECT s.finished_at FROM operation_steps s WHERE s.operation_id = o.id AND s.name = 'preview'), now()),
    now() + make_interval(secs => sqlc.arg(ttl_seconds)::float8), sqlc.arg(requester_may_approve), sqlc.narg(run_id)::uuid
FROM operations o JOIN deployed_components d ON d.id = o.deployment_id
WHERE o.id = sqlc.arg(operation_id)
ON CONFLICT (run_id) WHERE run_id IS NOT NULL AND status <> 'void' DO NOTHING
RETURNING *;

-- name: RunOfOperation :one
-- The stack run an operation is a step of.
SELECT st.run_id FROM stack_run_steps st WHERE st.operation_id = $1 LIMIT 1;

-- name: CurrentRunApprovalRequest :one
-- Shared, so that an operation that parks to wait on the request commits before a decision
-- locks it (and is sent on by it), or reads the decision once it is made.
SELECT * FROM approval_requests WHERE run_id = $1 AND status <> 'void' FOR SHARE;

-- name: RunApprovalPolicies :many
-- The policies that bind any step of a stack run: each step's operation kind (a rollback's
-- update may move its slot back a version, an upgrade), its slot's component (in the version
-- the run goes to, and the one its deployment has now), the instance's environment and that
-- environment's landing zone.
WITH steps AS (
    SELECT st.slot, st.action, r.kind AS run_kind, i.id AS instance_id, i.stack_id,
        coalesce(r.to_version, i.version) AS version, i.environment_id
    FROM stack_run_steps st
    JOIN stack_runs r ON r.id = st.run_id
    JOIN stack_instances i ON i.id = r.instance_id
    WHERE st.run_id = $1
), kinds AS (
    SELECT st.slot, st.environment_id, unnest(CASE
        WHEN st.action = 'redeploy' THEN ARRAY['update']
        WHEN st.action = 'update' AND st.run_kind = 'rollback' THEN ARRAY['update', 'upgrade']
        ELSE ARRAY[st.action] END)::text AS kind
    FROM steps st
), components AS (
    SELECT st.slot, (sl.value->>'component_id')::uuid AS component_id FROM steps st
    JOIN stack_versions sv ON sv.stack_id = st.stack_id AND sv.version = st.version
    CROSS JOIN LATERAL jsonb_array_elements(sv.definition->'slots') AS sl
    WHERE sl.value->>'name' = st.slot
    UNION
    SELECT st.slot, d.component_id FROM steps st
    JOIN deployed_components d ON d.stack_instance_id = st.instance_id AND d.slot = st.slot AND d.status <> 'destroyed'
)
SELECT p.approvals_required, p.approver_role, p.requester_may_approve FROM approval_policies p
WHERE EXISTS (SELECT 1 FROM kinds k WHERE k.kind = ANY(p.operations)
  AND ((p.scope = 'component' AND EXISTS (SELECT 1 FROM components c WHERE c.slot = k.slot AND c.component_id = p.scope_id))
    OR (p.scope = 'environment' AND p.scope_id = k.environment_id)
    OR (p.scope = 'landing_zone' AND p.scope_id = (SELECT e.landing_zone_id FROM environments e
        JOIN landing_zones z ON z.id = e.landing_zone_id
        WHERE e.id = k.environment_id AND z.system_environment_id IS DISTINCT FROM e.id))));

-- name: ApprovalPoliciesForAny :many
-- The policies that bind an operation of the kind on a deployment of any of the components in
-- the environment, as ApprovalPoliciesFor: what a stack's plan says deploying it waits for.
SELECT p.approvals_required, p.approver_role, p.requester_may_approve FROM approval_policies p
WHERE sqlc.arg(kind)::text = ANY(p.operations)
  AND ((p.scope = 'component' AND p.scope_id = ANY(sqlc.arg(component_ids)::uuid[]))
    OR (p.scope = 'environment' AND p.scope_id = sqlc.arg(environment_id)::uuid)
    OR (p.scope = 'landing_zone' AND p.scope_id = (SELECT e.landing_zone_id FROM environments e
        JOIN landing_zones z ON z.id = e.landing_zone_id
        WHERE e.id = sqlc.arg(environment_id)::uuid AND z.system_environment_id IS DISTINCT FROM e.id)));

-- name: WaitingOnApprovalRequest :many
-- The operations a request holds back now: its own operation, and for a run's request every
-- operation of the run awaiting approval that has no pending request of its own.
SELECT o.id FROM approval_requests r
JOIN operations o ON o.id = r.operation_id
    OR o.id IN (SELECT st.operation_id FROM stack_run_steps st WHERE st.run_id = r.run_id)
WHERE r.id = $1 AND o.status = 'awaiting_approval'
  AND (o.id = r.operation_id OR NOT EXISTS (SELECT 1 FROM approval_requests x
      WHERE x.operation_id = o.id AND x.id <> r.id AND x.status = 'pending'))
ORDER BY o.created_at, o.id;

-- name: ChangedSincePreviews :one
-- Whether the deployment of any of the operations changed after that operation's preview.
SELECT EXISTS (SELECT 1 FROM operations o
    JOIN operation_steps s ON s.operation_id = o.id AND s.name = 'preview'
    WHERE o.id = ANY(sqlc.arg(operations)::uuid[]) AND EXISTS (SELECT 1 FROM operations c
        WHERE c.deployment_id = o.deployment_id AND c.status = 'succeeded'
          AND c.kind IN ('deploy', 'update', 'upgrade', 'destroy', 'restore') AND c.finished_at > coalesce(s.finished_at, now())))::boolean;

-- name: ApprovalRunOperations :many
-- Every operation a run's steps have started so far, in the run's order, with what its
-- approvers judge of it: its slot, kind, version and the parameters it applies.
SELECT st.slot, o.id, o.kind, o.status, o.deployment_id, d.name AS deployment_name, v.version, v.input_schema,
    (CASE WHEN o.kind = 'destroy' THEN d.parameters ELSE o.parameters END)::jsonb AS parameters
FROM stack_run_steps st
JOIN operations o ON o.id = st.operation_id
JOIN deployed_components d ON d.id = o.deployment_id
JOIN component_versions v ON v.component_id = d.component_id AND v.version = coalesce(o.target_version, d.version)
WHERE st.run_id = $1
ORDER BY st.position;

-- name: ListApprovalRequests :many
-- Requests of the given tenants (all with all_tenants), newest first; one when id is given; with
-- decided, only those no longer pending. A pending request past its time reads as expired before the sweep gets to it. A deleted tenant's
-- requests are not listed: what was decided there stays in the audit log.
SELECT r.id, r.operation_id, r.tenant_id, r.requested_by, r.approvals_required, r.approver_role, r.requester_may_approve,
    r.run_id, r.previewed_at, r.expires_at, r.decided_at, r.created_at,
    (CASE WHEN r.status = 'pending' AND r.expires_at <= now() THEN 'expired' ELSE r.status END)::text AS status,
    o.kind, o.deployment_id, d.name AS deployment_name, d.environment_id, e.name AS environment_name, t.name AS tenant_name,
    coalesce(u.email, '')::text AS requested_by_email,
    d.stack_instance_id, coalesce(si.name, '')::text AS stack_instance_name, coalesce(d.slot, '')::text AS slot,
    (SELECT count(*) FROM approval_decisions a WHERE a.request_id = r.id AND a.decision = 'approve') AS approvals,
    EXISTS (SELECT 1 FROM approval_decisions a WHERE a.request_id = r.id AND a.user_id = sqlc.arg(viewer)::uuid) AS viewer_decided
-- The page of requests first, from the index in their order; then what each one shows.
FROM (SELECT * FROM approval_requests r
    WHERE (sqlc.arg(all_tenants)::boolean OR r.tenant_id = ANY(sqlc.arg(tenant_ids)::uuid[]))
      AND NOT EXISTS (SELECT 1 FROM tenants gone WHERE gone.id = r.tenant_id AND gone.deleted_at IS NOT NULL)
      AND (sqlc.narg(id)::uuid IS NULL OR r.id = sqlc.narg(id))
      AND (sqlc.narg(status)::text IS NULL
        OR (CASE WHEN r.status = 'pending' AND r.expires_at <= now() THEN 'expired' ELSE r.status END) = sqlc.narg(status))
      AND (NOT sqlc.arg(decided)::boolean OR r.status <> 'pending' OR r.expires_at <= now())
      AND (sqlc.narg(before)::timestamptz IS NULL OR (r.created_at, r.id) < (sqlc.narg(before), sqlc.narg(before_id)::uuid))
    ORDER BY r.created_at DESC, r.id DESC
    LIMIT sqlc.arg(max_rows)) r
JOIN operations o ON o.id = r.operation_id
JOIN deployed_components d ON d.id = o.deployment_id
JOIN environments e ON e.id = d.environment_id
JOIN tenants t ON t.id = r.tenant_id
LEFT JOIN users u ON u.id = r.requested_by
LEFT JOIN stack_instances si ON si.id = d.stack_instance_id
ORDER BY r.created_at DESC, r.id DESC;

-- name: ApprovalRequestInputs :one
-- What a request's operation applies, which its approvers judge: the version and its input
-- schema, and the parameters; a destroy brings none and removes what the deployment has. Read
-- for one request the viewer was shown by ListApprovalRequests.
SELECT v.version, v.input_schema,
    (CASE WHEN o.kind = 'destroy' THEN d.parameters ELSE o.parameters END)::jsonb AS parameters
FROM approval_requests r
JOIN operations o ON o.id = r.operation_id
JOIN deployed_components d ON d.id = o.deployment_id
JOIN component_versions v ON v.component_id = d.component_id AND v.version = coalesce(o.target_version, d.version)
WHERE r.id = $1;

-- name: ApprovalDecisions :many
SELECT a.decision, a.comment, a.created_at, u.email
FROM approval_decisions a JOIN users u ON u.id = a.user_id
WHERE a.request_id = $1
ORDER BY a.created_at, a.id;

-- name: CountApprovalsWaiting :one
-- How many pending requests the viewer may decide and has not: approver_role 'user' asks for
-- a user or more in the tenant (user_tenants), 'tenant_admin' a tenant admin (admin_tenants),
-- 'provider_admin' a provider admin (all_tenants, who may decide any).
SELECT count(*) FROM approval_requests r
WHERE r.status = 'pending' AND r.expires_at > now()
  AND r.requested_by IS DISTINCT FROM sqlc.arg(viewer)::uuid
  -- plan: kept (the tenants' switch picks no index: pending requests are few)
  AND (sqlc.arg(all_tenants)::boolean
    OR (r.approver_role = 'user' AND r.tenant_id = ANY(sqlc.arg(user_tenants)::uuid[]))
    OR (r.approver_role = 'tenant_admin' AND r.tenant_id = ANY(sqlc.arg(admin_tenants)::uuid[])))
  AND NOT EXISTS (SELECT 1 FROM approval_decisions a WHERE a.request_id = r.id AND a.user_id = sqlc.arg(viewer)::uuid);

-- name: LockApprovalRequest :one
-- Decisions on one request take turns.
SELECT r.*, o.kind, o.status AS operation_status, o.deployment_id, d.name AS deployment_name, d.environment_id, d.stack_instance_id, (r.expires_at <= now())::boolean AS lapsed
FROM approval_requests r
JOIN operations o ON o.id = r.operation_id
JOIN deployed_components d ON d.id = o.deployment_id
WHERE r.id = $1
FOR UPDATE OF r;

-- name: DecisionOf :one
SELECT decision FROM approval_decisions WHERE request_id = $1 AND user_id = $2;

-- name: RecordApprovalDecision :exec
INSERT INTO approval_decisions (request_id, user_id, decision, comment) VALUES ($1, $2, $3, $4);

-- name: CountApprovalsGiven :one
SELECT count(*) FROM approval_decisions WHERE request_id = $1 AND decision = 'approve';

-- name: CloseApprovalRequest :execrows
UPDATE approval_requests SET status = $2, decided_at = now() WHERE id = $1 AND status = 'pending';

-- name: CancelApprovalRequestOf :exec
-- A run's request stays while another operation of the run waits on it: approving or
-- rejecting it decides for those.
UPDATE approval_requests r SET status = 'cancelled', decided_at = now()
WHERE r.operation_id = $1 AND r.status = 'pending'
  AND NOT EXISTS (SELECT 1 FROM stack_run_steps st JOIN operations o ON o.id = st.operation_id
      WHERE r.run_id IS NOT NULL AND st.run_id = r.run_id AND o.id <> r.operation_id AND o.status = 'awaiting_approval');

-- name: DueApprovalRequests :many
SELECT id FROM approval_requests WHERE status = 'pending' AND expires_at <= now() ORDER BY expires_at LIMIT 100;

-- name: ApprovalOfOperation :one
-- The operation's latest request, for its page; for an operation of a stack run that waits on
-- the run's request, that one.
SELECT r.id, r.status, r.approvals_required,
    (SELECT count(*) FROM approval_decisions a WHERE a.request_id = r.id AND a.decision = 'approve') AS approvals
FROM approval_requests r
WHERE r.operation_id = sqlc.arg(operation_id)::uuid
   OR (r.run_id = (SELECT st.run_id FROM stack_run_steps st WHERE st.operation_id = sqlc.arg(operation_id)::uuid LIMIT 1)
       AND EXISTS (SELECT 1 FROM operations o WHERE o.id = sqlc.arg(operation_id)::uuid AND o.status = 'awaiting_approval'))
ORDER BY (r.operation_id = sqlc.arg(operation_id)::uuid) DESC, r.created_at DESC LIMIT 1;
