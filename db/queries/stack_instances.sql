-- name: CreateStackInstance :one
-- An instance is recorded pending: its deploy run, when it starts, moves it on.
INSERT INTO stack_instances (id, tenant_id, environment_id, stack_id, version, name, parameters, secret_parameters, secret_key_id, status, created_by)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'pending', $10)
RETURNING *;

-- name: LockStackInstance :one
SELECT * FROM stack_instances WHERE id = $1 FOR UPDATE;

-- name: GetStackInstance :one
SELECT i.*, s.name AS stack_name, s.display_name AS stack_display_name, e.name AS environment_name, t.name AS tenant_name
FROM stack_instances i
JOIN stacks s ON s.id = i.stack_id
JOIN environments e ON e.id = i.environment_id
JOIN tenants t ON t.id = i.tenant_id
WHERE i.id = $1;

-- name: ListStackInstances :many
-- Newest first, of the given tenants (all when all_tenants), optionally of one environment,
-- stack or status.
SELECT i.*, s.name AS stack_name, s.display_name AS stack_display_name, e.name AS environment_name, t.name AS tenant_name
FROM stack_instances i
JOIN stacks s ON s.id = i.stack_id
JOIN environments e ON e.id = i.environment_id
JOIN tenants t ON t.id = i.tenant_id
WHERE (@all_tenants::boolean OR i.tenant_id = ANY(@tenant_ids::uuid[]))
  AND t.deleted_at IS NULL
  AND (sqlc.narg(environment_id)::uuid IS NULL OR i.environment_id = sqlc.narg(environment_id))
  AND (sqlc.narg(stack_id)::uuid IS NULL OR i.stack_id = sqlc.narg(stack_id))
  AND (sqlc.narg(status)::text IS NULL OR i.status = sqlc.narg(status))
ORDER BY i.created_at DESC, i.id DESC
LIMIT $1;

-- name: SetStackInstanceStatus :exec
UPDATE stack_instances SET status = $2, error = $3, updated_at = now() WHERE id = $1;

-- name: SetStackInstanceVersion :exec
UPDATE stack_instances SET version = $2, updated_at = now() WHERE id = $1;

-- name: MarkStackInstanceDeployed :exec
UPDATE stack_instances SET status = 'active', error = '', deployed_at = coalesce(deployed_at, now()), updated_at = now()
WHERE id = $1;

-- name: EnterStackState :one
UPDATE stack_instances SET current_state = $2, state_entered_at = now(), updated_at = now()
WHERE id = $1
RETURNING state_entered_at;

-- name: InstanceDeployments :many
-- The deployment of each slot of an instance, the newest per slot first.
SELECT d.id, d.slot, d.name, d.status, d.outputs, d.component_id, d.version, d.parameters
FROM deployed_components d
WHERE d.stack_instance_id = $1
ORDER BY d.slot, d.created_at DESC;

-- name: SlotPreviews :many
-- The newest preview of each slot's deployment not destroyed, of an instance.
SELECT DISTINCT ON (d.slot) d.slot::text AS slot, d.id AS deployment_id, o.id, o.status
FROM deployed_components d
JOIN operations o ON o.deployment_id = d.id AND o.kind = 'preview'
WHERE d.stack_instance_id = $1 AND d.status <> 'destroyed'
ORDER BY d.slot, o.created_at DESC, o.id DESC;

-- name: CreateStackRun :one
-- id may be given, for secret inputs sealed with it bound in; else one is made.
INSERT INTO stack_runs (id, instance_id, kind, trigger, operation, inputs, from_version, to_version, source, requested_by, keep_on_failure,
    secret_inputs, secret_key_id)
VALUES (coalesce(sqlc.narg(id)::uuid, gen_random_uuid()), @instance_id, @kind, @trigger, @operation, @inputs, @from_version, @to_version,
    @source, @requested_by, @keep_on_failure, @secret_inputs, @secret_key_id)
RETURNING *;

-- name: LastEndedStackRunKind :one
-- The kind of the newest run of an instance that ran, succeeded or failed (not refused).
SELECT kind FROM stack_runs WHERE instance_id = $1 AND status IN ('succeeded', 'failed')
ORDER BY finished_at DESC, id DESC LIMIT 1;

-- name: RunningStackRun :one
SELECT * FROM stack_runs WHERE instance_id = $1 AND status = 'running';

-- name: NextQueuedStackRun :one
-- What Nimbus queued for itself (taking down a failed first deploy, rolling back a failed
-- upgrade) goes before what people asked for meanwhile, then the rest in the order asked.
SELECT * FROM stack_runs WHERE instance_id = $1 AND status = 'queued'
ORDER BY (source = 'system') DESC, created_at, id LIMIT 1;

-- name: StartStackRun :execrows
UPDATE stack_runs SET status = 'running', started_at = now() WHERE id = $1 AND status = 'queued';

-- name: EndStackRun :execrows
UPDATE stack_runs SET status = $2, error = $3, finished_at = now() WHERE id = $1 AND status IN ('queued', 'running');

-- name: InsertStackRunStep :exec
INSERT INTO stack_run_steps (run_id, name, slot, action, after, position, detail)
VALUES ($1, $2, $3, $4, $5, $6, $7);

-- name: StackRunSteps :many
SELECT s.*, o.status AS operation_status, o.error AS operation_error, o.deployment_id
FROM stack_run_steps s
LEFT JOIN operations o ON o.id = s.operation_id
WHERE s.run_id = $1
ORDER BY s.position;

-- name: SetStackRunStep :exec
UPDATE stack_run_steps SET operation_id = $3, detail = $4 WHERE run_id = $1 AND name = $2;

-- name: StackRuns :many
SELECT r.*, u.email AS requested_by_email
FROM stack_runs r LEFT JOIN users u ON u.id = r.requested_by
WHERE r.instance_id = $1
ORDER BY r.created_at DESC, r.id DESC
LIMIT $2;

-- name: InsertStackStateHistory :exec
INSERT INTO stack_state_history (instance_id, from_state, to_state, trigger, source, actor, run_id, operations)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8);

-- name: StackStateHistory :many
SELECT h.*, u.email AS actor_email
FROM stack_state_history h LEFT JOIN users u ON u.id = h.actor
WHERE h.instance_id = $1
ORDER BY h.created_at DESC, h.id DESC;

-- name: StackToDeploy :one
-- A stack, with its latest published version not archived (0 when none).
SELECT s.id, s.tenant_id, s.name, s.display_name,
    coalesce((SELECT max(v.version) FROM stack_versions v WHERE v.stack_id = s.id AND v.archived_at IS NULL), 0)::int AS latest
FROM stacks s
WHERE s.id = $1 AND s.deleted_at IS NULL;

-- name: StackVersionArchived :one
SELECT archived_at IS NOT NULL AS archived FROM stack_versions WHERE stack_id = $1 AND version = $2;

-- name: LiveStackInstancesIn :many
-- The names of an environment's stack instances not destroyed.
SELECT name FROM stack_instances WHERE environment_id = $1 AND status <> 'destroyed' ORDER BY name;

-- name: DeploymentNamesTaken :many
-- Which of the names the environment's deployments not destroyed already hold.
SELECT name FROM deployed_components
WHERE environment_id = $1 AND status <> 'destroyed' AND lower(name) = ANY(@names::text[])
ORDER BY name;

-- name: MergeStackInstanceParameters :exec
-- Plain parameters a day-2 operation changed, over the others.
UPDATE stack_instances SET parameters = parameters || sqlc.arg(parameters)::jsonb, updated_at = now() WHERE id = sqlc.arg(id);

-- name: RecordInstanceWiring :exec
-- What a pending instance's wiring gave, by slot and input, when its plan was recorded.
INSERT INTO stack_instance_wiring (instance_id, inputs) VALUES ($1, $2)
ON CONFLICT (instance_id) DO UPDATE SET inputs = EXCLUDED.inputs, updated_at = now();

-- name: InstanceWiring :one
SELECT inputs FROM stack_instance_wiring WHERE instance_id = $1;
