-- name: LockPolicyZone :one
-- Taken before a change of the zone's policies, so that versions follow one another.
SELECT * FROM landing_zones WHERE id = $1 FOR UPDATE;

-- name: ListPlanPolicies :many
SELECT * FROM plan_policies WHERE landing_zone_id = $1 ORDER BY name;

-- name: GetPlanPolicy :one
SELECT * FROM plan_policies WHERE id = $1 AND landing_zone_id = $2;

-- name: CreatePlanPolicy :one
INSERT INTO plan_policies (landing_zone_id, name, message, expression, level, enabled)
VALUES ($1, $2, $3, $4, $5, $6)
RETURNING *;

-- name: UpdatePlanPolicy :one
UPDATE plan_policies SET name = $3, message = $4, expression = $5, level = $6, enabled = $7, updated_at = now()
WHERE id = $1 AND landing_zone_id = $2
RETURNING *;

-- name: DeletePlanPolicy :one
DELETE FROM plan_policies WHERE id = $1 AND landing_zone_id = $2
RETURNING *;

-- name: AddPlanPolicyVersion :one
-- The zone's set as it is now becomes its next version.
INSERT INTO plan_policy_versions (landing_zone_id, version, change, policy_name, policies, changed_by)
SELECT sqlc.arg(landing_zone_id),
       coalesce((SELECT max(v.version) FROM plan_policy_versions v WHERE v.landing_zone_id = sqlc.arg(landing_zone_id)), 0) + 1,
       sqlc.arg(change), sqlc.arg(policy_name),
       coalesce((SELECT jsonb_agg(jsonb_build_object('id', p.id, 'name', p.name, 'message', p.message,
                    'expression', p.expression, 'level', p.level, 'enabled', p.enabled) ORDER BY p.name)
                 FROM plan_policies p WHERE p.landing_zone_id = sqlc.arg(landing_zone_id)), '[]'::jsonb),
       sqlc.narg(changed_by)
RETURNING *;

-- name: ListPlanPolicyVersions :many
SELECT v.*, coalesce(u.email, '')::text AS changed_by_email
FROM plan_policy_versions v LEFT JOIN users u ON u.id = v.changed_by
WHERE v.landing_zone_id = $1 ORDER BY v.version DESC;

-- name: LatestPlanPolicyVersion :one
SELECT * FROM plan_policy_versions WHERE landing_zone_id = $1 ORDER BY version DESC LIMIT 1;

-- name: OperationPolicyZone :one
-- The landing zone whose policies an operation's plan answers to: its environment's.
SELECT e.landing_zone_id FROM operations o
JOIN deployed_components d ON d.id = o.deployment_id
JOIN environments e ON e.id = d.environment_id
WHERE o.id = $1;

-- name: RecordPolicyCheck :exec
INSERT INTO operation_policy_checks (operation_id, landing_zone_id, version, policies, resources, violations)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (operation_id) DO UPDATE SET
    landing_zone_id = excluded.landing_zone_id, version = excluded.version, policies = excluded.policies,
    resources = excluded.resources, violations = excluded.violations, created_at = now();

-- name: GetPolicyCheck :one
SELECT * FROM operation_policy_checks WHERE operation_id = $1;

-- name: CopyPolicyCheck :exec
-- An operation that carries out a preview shows the check of that preview's plan.
INSERT INTO operation_policy_checks (operation_id, landing_zone_id, version, policies, resources, violations)
SELECT sqlc.arg(operation_id), c.landing_zone_id, c.version, c.policies, c.resources, c.violations
FROM operation_policy_checks c WHERE c.operation_id = sqlc.arg(preview_id)
ON CONFLICT (operation_id) DO NOTHING;

-- name: OperationPolicySubject :one
-- The deployment an operation's plan is for, as policies read it: its names, the namespace
-- its tenant has on the zone's cluster ('' when none) and the stack instance slot it holds
-- ('' when none).
SELECT d.name, c.name AS component, t.name AS tenant, t.system, e.name AS environment,
       coalesce((SELECT n.namespace FROM tenant_namespaces n
                 WHERE n.tenant_id = d.tenant_id AND n.landing_zone_id = e.landing_zone_id), '')::text AS namespace,
       coalesce(d.slot, '')::text AS slot
FROM operations o
JOIN deployed_components d ON d.id = o.deployment_id
JOIN components c ON c.id = d.component_id
JOIN tenants t ON t.id = d.tenant_id
JOIN environments e ON e.id = d.environment_id
WHERE o.id = $1;

-- name: OperationStackPrograms :many
-- The programs of the other slots of the stack instance whose slot an operation's deployment
-- holds, in the stack version the operation's run brings the instance to (an upgrade's or a
-- rollback's) or else the one it is at; none for a deployment of no stack instance. Slots
-- whose component is not written in YAML are left out.
SELECT s.name::text AS slot, v.code
FROM operations o
JOIN deployed_components d ON d.id = o.deployment_id
JOIN stack_instances i ON i.id = d.stack_instance_id
LEFT JOIN stack_run_steps st ON st.operation_id = o.id
LEFT JOIN stack_runs r ON r.id = st.run_id
JOIN stack_versions sv ON sv.stack_id = i.stack_id AND sv.version = coalesce(r.to_version, i.version)
CROSS JOIN LATERAL jsonb_to_recordset(sv.definition->'slots') AS s(name text, component_id uuid, version integer)
JOIN component_versions v ON v.component_id = s.component_id AND v.version = s.version
WHERE o.id = $1 AND s.name <> d.slot AND v.language = 'yaml'
ORDER BY 1;

-- name: EnvironmentPolicies :many
-- The enabled policies of an environment's landing zone: what every deploy into it answers to.
SELECT p.name, p.level, p.message, p.expression
FROM plan_policies p
JOIN environments e ON e.landing_zone_id = p.landing_zone_id
WHERE e.id = $1 AND p.enabled
ORDER BY p.name;
