-- name: CreateDeployment :one
INSERT INTO deployed_components (id, tenant_id, environment_id, component_id, version, name, parameters,
    secret_parameters, secret_key_id, project, stack, state_location, created_by, template_component_id,
    stack_instance_id, slot)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
RETURNING *;

-- name: GetDeployment :one
SELECT d.*, c.name AS component_name, e.name AS environment_name, t.name AS tenant_name
FROM deployed_components d
JOIN components c ON c.id = d.component_id
JOIN environments e ON e.id = d.environment_id
JOIN tenants t ON t.id = d.tenant_id
WHERE d.id = $1;

-- name: LockedDeployment :one
-- GetDeployment's row, locked as LockDeployment locks it.
SELECT d.*, c.name AS component_name, e.name AS environment_name, t.name AS tenant_name
FROM deployed_components d
JOIN components c ON c.id = d.component_id
JOIN environments e ON e.id = d.environment_id
JOIN tenants t ON t.id = d.tenant_id
WHERE d.id = $1
FOR UPDATE OF d;

-- name: ListDeployments :many
SELECT d.*, c.name AS component_name, e.name AS environment_name, t.name AS tenant_name
FROM deployed_components d
JOIN components c ON c.id = d.component_id
JOIN environments e ON e.id = d.environment_id
JOIN tenants t ON t.id = d.tenant_id AND t.deleted_at IS NULL
WHERE (sqlc.arg(all_tenants)::boolean OR d.tenant_id = ANY(sqlc.arg(tenant_ids)::uuid[]))
  AND (sqlc.narg(environment_id)::uuid IS NULL OR d.environment_id = sqlc.narg(environment_id))
  AND (sqlc.narg(component_id)::uuid IS NULL OR d.component_id = sqlc.narg(component_id))
  AND (sqlc.narg(status)::text IS NULL OR d.status = sqlc.narg(status))
  AND (sqlc.narg(search)::text IS NULL OR strpos(lower(d.name), lower(sqlc.narg(search))) > 0)
  -- A preview discarded before anything was deployed is no deployment to list. Asked of each
  -- destroyed row through the operations' index (LIMIT keeps the planner from hashing them all).
  AND (d.status <> 'destroyed' OR coalesce((SELECT true FROM operations o
      WHERE o.deployment_id = d.id AND o.kind <> 'preview' LIMIT 1), false))
  AND (sqlc.narg(before)::timestamptz IS NULL OR (d.created_at, d.id) < (sqlc.narg(before), sqlc.narg(before_id)::uuid))
ORDER BY d.created_at DESC, d.id DESC
LIMIT sqlc.arg(max_rows);

-- name: ListDeploymentsBy :many
-- The deployments in the order of a column (sort_by: name, environment, component, status,
-- tenant, created), ties newest first. A page continues after the row before_id names, whose
-- value in the column the page showed is after_key (its time of creation: before): keyset paging
-- on (key, created_at, id), as the newest-first list pages. The key is the row's as the cursor
-- carries it, not as it is now: a status moves on, a tenant is renamed, between two pages.
SELECT d.*, c.name AS component_name, e.name AS environment_name, t.name AS tenant_name
FROM deployed_components d
JOIN components c ON c.id = d.component_id
JOIN environments e ON e.id = d.environment_id
JOIN tenants t ON t.id = d.tenant_id AND t.deleted_at IS NULL
CROSS JOIN LATERAL (SELECT CASE sqlc.arg(sort_by)::text
    WHEN 'name' THEN lower(d.name) WHEN 'environment' THEN lower(e.name) WHEN 'component' THEN lower(c.name)
    WHEN 'status' THEN lower(d.status) WHEN 'tenant' THEN lower(t.name)
    WHEN 'created' THEN to_char(d.created_at AT TIME ZONE 'UTC', 'YYYYMMDDHH24MISSUS') ELSE '' END AS value,
  CASE sqlc.arg(sort_by)::text
    WHEN 'created' THEN to_char(sqlc.narg(before)::timestamptz AT TIME ZONE 'UTC', 'YYYYMMDDHH24MISSUS')
    ELSE lower(sqlc.narg(after_key)::text) END AS after) k
WHERE (sqlc.arg(all_tenants)::boolean OR d.tenant_id = ANY(sqlc.arg(tenant_ids)::uuid[]))
  AND (sqlc.narg(environment_id)::uuid IS NULL OR d.environment_id = sqlc.narg(environment_id))
  AND (sqlc.narg(component_id)::uuid IS NULL OR d.component_id = sqlc.narg(component_id))
  AND (sqlc.narg(status)::text IS NULL OR d.status = sqlc.narg(status))
  AND (sqlc.narg(search)::text IS NULL OR strpos(lower(d.name), lower(sqlc.narg(search))) > 0)
  -- A preview discarded before anything was deployed is no deployment to list. Asked of each
  -- destroyed row through the operations' index (LIMIT keeps the planner from hashing them all).
  AND (d.status <> 'destroyed' OR coalesce((SELECT true FROM operations o
      WHERE o.deployment_id = d.id AND o.kind <> 'preview' LIMIT 1), false))
  AND (sqlc.narg(before)::timestamptz IS NULL
    OR k.value = k.after AND (d.created_at, d.id) < (sqlc.narg(before), sqlc.narg(before_id)::uuid)
    OR sqlc.arg(descending)::boolean AND k.value < k.after
    OR NOT sqlc.arg(descending)::boolean AND k.value > k.after)
ORDER BY CASE WHEN sqlc.arg(descending)::boolean THEN k.value END DESC,
    CASE WHEN NOT sqlc.arg(descending)::boolean THEN k.value END ASC,
    d.created_at DESC, d.id DESC
LIMIT sqlc.arg(max_rows);

-- name: SetDeploymentStatus :execrows
UPDATE deployed_components SET status = sqlc.arg(status), updated_at = now()
WHERE id = sqlc.arg(id) AND status = ANY(sqlc.arg(sources)::text[]);

-- name: RecordDeploymentOutputs :execrows
UPDATE deployed_components SET status = sqlc.arg(status), outputs = sqlc.arg(outputs), updated_at = now()
WHERE id = sqlc.arg(id) AND status = ANY(sqlc.arg(sources)::text[]);

-- name: UpdateDeploymentInputs :exec
-- What an update or upgrade leaves behind once it succeeded.
UPDATE deployed_components SET version = $2, parameters = $3, secret_parameters = $4, secret_key_id = $5, updated_at = now()
WHERE id = $1;

-- name: GetOperation :one
SELECT * FROM operations WHERE id = $1;

-- name: ListOperations :many
SELECT o.*, d.name AS deployment_name, d.tenant_id, coalesce(u.email, '') AS requested_by_email
FROM operations o
JOIN deployed_components d ON d.id = o.deployment_id
LEFT JOIN users u ON u.id = o.requested_by
WHERE (sqlc.arg(all_tenants)::boolean OR d.tenant_id = ANY(sqlc.arg(tenant_ids)::uuid[]))
  -- The tenants' deployments first, so their operations are read by deployment, not by scanning all.
  AND (sqlc.arg(all_tenants)::boolean OR o.deployment_id = ANY(ARRAY(
      SELECT id FROM deployed_components WHERE tenant_id = ANY(sqlc.arg(tenant_ids)::uuid[]))))
  AND (sqlc.narg(deployment_id)::uuid IS NULL OR o.deployment_id = sqlc.narg(deployment_id))
  AND (sqlc.narg(status)::text IS NULL OR o.status = sqlc.narg(status))
  AND (sqlc.narg(kind)::text IS NULL OR o.kind = sqlc.narg(kind))
  AND (sqlc.narg(before)::timestamptz IS NULL OR (o.created_at, o.id) < (sqlc.narg(before), sqlc.narg(before_id)::uuid))
ORDER BY o.created_at DESC, o.id DESC
LIMIT sqlc.arg(max_rows);

-- name: ListDeploymentOperationsBy :many
-- A deployment's operations in the order of a column (sort_by: kind, status, by, created),
-- ties newest first, paged by keyset on (key, created_at, id) from the cursor's key as
-- ListDeploymentsBy is.
SELECT o.*, d.name AS deployment_name, d.tenant_id, coalesce(u.email, '') AS requested_by_email
FROM operations o
JOIN deployed_components d ON d.id = o.deployment_id
LEFT JOIN users u ON u.id = o.requested_by
CROSS JOIN LATERAL (SELECT CASE sqlc.arg(sort_by)::text
    WHEN 'kind' THEN lower(o.kind) WHEN 'status' THEN lower(o.status) WHEN 'by' THEN coalesce(lower(u.email), '')
    WHEN 'created' THEN to_char(o.created_at AT TIME ZONE 'UTC', 'YYYYMMDDHH24MISSUS') ELSE '' END AS value,
  CASE sqlc.arg(sort_by)::text
    WHEN 'created' THEN to_char(sqlc.narg(before)::timestamptz AT TIME ZONE 'UTC', 'YYYYMMDDHH24MISSUS')
    ELSE lower(sqlc.narg(after_key)::text) END AS after) k
WHERE o.deployment_id = sqlc.arg(deployment_id)
  AND (sqlc.narg(before)::timestamptz IS NULL
    OR k.value = k.after AND (o.created_at, o.id) < (sqlc.narg(before), sqlc.narg(before_id)::uuid)
    OR sqlc.arg(descending)::boolean AND k.value < k.after
    OR NOT sqlc.arg(descending)::boolean AND k.value > k.after)
ORDER BY CASE WHEN sqlc.arg(descending)::boolean THEN k.value END DESC,
    CASE WHEN NOT sqlc.arg(descending)::boolean THEN k.value END ASC,
    o.created_at DESC, o.id DESC
LIMIT sqlc.arg(max_rows);

-- name: QueuePosition :one
-- How many operations on the same deployment come before this one.
SELECT count(*) FROM operations o
WHERE o.deployment_id = sqlc.arg(deployment_id) AND o.status IN ('queued', 'running', 'awaiting_approval')
  AND (o.created_at, o.id) < (sqlc.arg(created_at)::timestamptz, sqlc.arg(id)::uuid);

-- name: OperationToRun :one
-- An operation as a worker finds it, with what its claim and its engine's start need: how many
-- operations on the same deployment come before it (as QueuePosition counts them), its
-- deployment's tenant, and what decides its engine's cluster credentials (as
-- DeploymentCluster reads them).
SELECT sqlc.embed(o),
    (SELECT count(*) FROM operations b
     WHERE b.deployment_id = o.deployment_id AND b.status IN ('queued', 'running', 'awaiting_approval')
       AND (b.created_at, b.id) < (o.created_at, o.id))::bigint AS ahead,
    p.name AS provider, e.landing_zone_id, t.system, d.tenant_id, d.stack
FROM operations o
JOIN deployed_components d ON d.id = o.deployment_id
JOIN components c ON c.id = d.component_id
JOIN semantic_providers p ON p.id = c.provider_id
JOIN environments e ON e.id = d.environment_id
JOIN tenants t ON t.id = d.tenant_id
WHERE o.id = $1;

-- name: CountRunningOperations :one
-- The tenant's operations running now, on every node, leaving out one (the caller's own, when it
-- takes over an operation whose worker died) and those whose worker stopped beating: they were
-- lost with their node, and wait for a place again like any other.
SELECT count(*) FROM operations o JOIN deployed_components d ON d.id = o.deployment_id
WHERE d.tenant_id = sqlc.arg(tenant_id) AND o.status = 'running'
  AND o.heartbeat_at >= now() - interval '1 minute' AND o.id <> sqlc.arg(id);

-- name: PendingOperation :one
-- Whether an operation of the kind is already waiting or running on the deployment.
SELECT EXISTS (SELECT 1 FROM operations WHERE deployment_id = $1 AND kind = $2 AND status IN ('queued', 'running', 'awaiting_approval'));

-- name: RecordResourceStep :exec
INSERT INTO operation_resources (operation_id, urn, type, name, op, status, changes, provider_id, outputs, started_at, finished_at)
VALUES (sqlc.arg(operation_id), sqlc.arg(urn), sqlc.arg(type), sqlc.arg(name), sqlc.arg(op), sqlc.arg(status), sqlc.arg(changes),
    sqlc.arg(provider_id), sqlc.arg(outputs),
    CASE WHEN sqlc.arg(status)::text = 'running' THEN now() END,
    CASE WHEN sqlc.arg(status)::text IN ('done', 'failed') THEN now() END)
ON CONFLICT (operation_id, urn) DO UPDATE SET
    type = EXCLUDED.type, op = EXCLUDED.op, status = EXCLUDED.status,
    -- The end of a step repeats nothing of what it changes: keep what its start said.
    changes = CASE WHEN EXCLUDED.changes = '[]'::jsonb THEN operation_resources.changes ELSE EXCLUDED.changes END,
    -- The delete that ends a replacement leaves nothing: the resource is what replaced it.
    provider_id = CASE WHEN EXCLUDED.provider_id = '' THEN operation_resources.provider_id ELSE EXCLUDED.provider_id END,
    outputs = CASE WHEN EXCLUDED.provider_id = '' THEN operation_resources.outputs ELSE EXCLUDED.outputs END,
    started_at = CASE EXCLUDED.status WHEN 'running' THEN now() WHEN 'planned' THEN NULL ELSE operation_resources.started_at END,
    finished_at = CASE WHEN EXCLUDED.status IN ('done', 'failed') THEN now() END,
    updated_at = now();

-- name: CopyPlannedResources :exec
-- What an applied preview planned, shown by the operation that carries it out.
INSERT INTO operation_resources (operation_id, urn, type, name, op, status, changes)
SELECT sqlc.arg(operation_id), p.urn, p.type, p.name, p.op, 'planned', p.changes
FROM operation_resources p WHERE p.operation_id = sqlc.arg(preview_id) AND p.status = 'planned' ORDER BY p.seq
ON CONFLICT (operation_id, urn) DO NOTHING;

-- name: RecordResourceDiagnostic :exec
INSERT INTO operation_resources (operation_id, urn, name, status, diagnostics)
VALUES (sqlc.arg(operation_id), sqlc.arg(urn), sqlc.arg(name), 'running', sqlc.arg(line))
ON CONFLICT (operation_id, urn) DO UPDATE SET
    diagnostics = left(operation_resources.diagnostics || EXCLUDED.diagnostics, 16384), updated_at = now();

-- name: RecordResourceUndo :exec
-- What the undo of a failed or cancelled operation does to a resource, beside what the
-- operation did to it.
INSERT INTO operation_resources (operation_id, urn, type, name, status, undo_op, undo_status)
VALUES (sqlc.arg(operation_id), sqlc.arg(urn), sqlc.arg(type), sqlc.arg(name), 'planned', sqlc.arg(op), sqlc.arg(status))
ON CONFLICT (operation_id, urn) DO UPDATE SET
    undo_op = EXCLUDED.undo_op, undo_status = EXCLUDED.undo_status, updated_at = now();

-- name: OperationResources :many
SELECT * FROM operation_resources WHERE operation_id = $1 ORDER BY seq;

-- name: StaleOperations :many
SELECT id FROM operations WHERE status = 'running' AND heartbeat_at < now() - interval '1 minute';

-- name: AppendOperationLogs :exec
INSERT INTO operation_logs (operation_id, line)
SELECT sqlc.arg(operation_id), l.line FROM unnest(sqlc.arg(lines)::text[]) WITH ORDINALITY AS l(line, n) ORDER BY l.n;

-- name: OperationLogs :many
SELECT id, created_at, line FROM operation_logs WHERE operation_id = $1 AND id > $2 ORDER BY id LIMIT 1000;

-- name: CountOperationLogs :one
SELECT count(*) FROM operation_logs WHERE operation_id = $1;

-- name: OperationView :one
SELECT o.*, d.name AS deployment_name, d.tenant_id, coalesce(u.email, '') AS requested_by_email
FROM operations o
JOIN deployed_components d ON d.id = o.deployment_id
LEFT JOIN users u ON u.id = o.requested_by
WHERE o.id = $1;

-- name: LockDeployment :exec
-- Serialises the requests on one deployment, so each sees the ones before it.
SELECT id FROM deployed_components WHERE id = $1 FOR UPDATE;

-- name: HasBeenDeployed :one
-- Whether the deployment's resources were ever made: then a failure left something behind, and
-- what it needs is an update, never a fresh deploy whose undo would destroy them.
SELECT EXISTS (SELECT 1 FROM operations WHERE deployment_id = $1 AND status = 'succeeded' AND kind IN ('deploy', 'update', 'upgrade'));

-- name: ChangedSince :one
-- Whether an operation that changes a deployment's inputs or state ended after the given time.
SELECT EXISTS (SELECT 1 FROM operations WHERE deployment_id = $1 AND status = 'succeeded'
    AND kind IN ('deploy', 'update', 'upgrade', 'destroy', 'restore') AND finished_at > sqlc.arg(since)::timestamptz);

-- name: Running :one
SELECT EXISTS (SELECT 1 FROM operations WHERE deployment_id = $1 AND status = 'running');

-- name: EngineEverRan :one
-- Whether any operation on the deployment other than a preview ever started: then its stack
-- exists, and may hold something.
SELECT EXISTS (SELECT 1 FROM operations WHERE deployment_id = $1 AND kind <> 'preview' AND started_at IS NOT NULL);

-- name: AnyOperationPending :one
SELECT EXISTS (SELECT 1 FROM operations WHERE deployment_id = $1 AND status IN ('queued', 'running', 'awaiting_approval'));

-- name: DeploymentEnvironmentChoices :many
-- What the deployments list's environment filter offers: environments holding deployments the
-- viewer may see (a deployment's tenant is its environment's, their key says so) whose name or
-- tenant's name holds search, the first max_rows by name; and the one chosen, when the viewer
-- may see it, whatever it is called.
SELECT x.id, x.name, x.tenant_name FROM (
    SELECT e.id, e.name, t.name AS tenant_name
    FROM environments e
    JOIN tenants t ON t.id = e.tenant_id AND t.deleted_at IS NULL
    WHERE (sqlc.arg(all_tenants)::boolean OR e.tenant_id = ANY(sqlc.arg(tenant_ids)::uuid[]))
      AND EXISTS (SELECT 1 FROM deployed_components d WHERE d.environment_id = e.id)
      AND (sqlc.narg(search)::text IS NULL OR strpos(lower(e.name || ' ' || t.name), lower(sqlc.narg(search))) > 0
        OR e.id = sqlc.narg(chosen))
    ORDER BY e.id = sqlc.narg(chosen) IS TRUE DESC, lower(e.name), lower(t.name), e.id
    LIMIT sqlc.arg(max_rows)) x
ORDER BY lower(x.name), lower(x.tenant_name), x.id;

-- name: DeploymentComponentChoices :many
-- What the deployments list's component filter offers: components of deployments the viewer
-- may see whose name holds search, the first max_rows by name; and the one chosen, when the
-- viewer may see it, whatever it is called. A provider admin's are found walking the
-- components by name, asking of each whether anything deploys it, until there are enough;
-- anyone else's from their tenants' deployments, few. A deleted component is offered only
-- when chosen.
SELECT c.id, c.name, lower(c.name) AS sort_name FROM components c
WHERE c.id = sqlc.narg(chosen) AND EXISTS (SELECT 1 FROM deployed_components d WHERE d.component_id = c.id
    AND (sqlc.arg(all_tenants)::boolean OR d.tenant_id = ANY(sqlc.arg(tenant_ids)::uuid[])))
UNION
(SELECT c.id, c.name, lower(c.name) FROM components c
WHERE sqlc.arg(all_tenants)::boolean AND c.deleted_at IS NULL
  AND (sqlc.narg(search)::text IS NULL OR strpos(lower(c.name), lower(sqlc.narg(search))) > 0)
  -- LIMIT keeps the planner from hashing every deployment to answer the first few.
  AND coalesce((SELECT true FROM deployed_components d WHERE d.component_id = c.id LIMIT 1), false)
ORDER BY lower(c.name), c.id
LIMIT sqlc.arg(max_rows))
UNION
(SELECT c.id, c.name, lower(c.name) FROM components c
WHERE NOT sqlc.arg(all_tenants)::boolean AND c.deleted_at IS NULL
  AND c.id IN (SELECT d.component_id FROM deployed_components d WHERE d.tenant_id = ANY(sqlc.arg(tenant_ids)::uuid[]))
  AND (sqlc.narg(search)::text IS NULL OR strpos(lower(c.name), lower(sqlc.narg(search))) > 0)
ORDER BY lower(c.name), c.id
LIMIT sqlc.arg(max_rows))
ORDER BY sort_name, id;

-- name: ReferableDeployments :many
-- The live deployments of the environments that an input referring to the semantic type by
-- an output may name, with that output's value: the networks a machine may join.
SELECT d.name, e.id AS environment_id, e.name AS environment_name, (d.outputs ->> sqlc.arg(output)::text)::text AS value
FROM deployed_components d
JOIN environments e ON e.id = d.environment_id
JOIN components c ON c.id = d.component_id
JOIN semantic_resource_types t ON t.id = c.semantic_type_id
WHERE d.environment_id = ANY(sqlc.arg(environment_ids)::uuid[]) AND t.name = sqlc.arg(semantic_type)::text
  AND d.status <> 'destroyed' AND coalesce(d.outputs ->> sqlc.arg(output)::text, '') <> ''
ORDER BY lower(e.name), lower(d.name)
LIMIT 200;

-- name: LiveDeploymentNamed :one
-- The deployment that holds a name in an environment, for a new one of that name to take over
-- when it is only an idle preview.
SELECT id, status, created_by, stack_instance_id, template_component_id
FROM deployed_components
WHERE environment_id = $1 AND lower(name) = lower(sqlc.arg(name)::text) AND status <> 'destroyed';

-- name: AbandonedPreviews :many
-- Deployments recorded to be previewed, on their own (not a template's nor a stack's), that
-- were never deployed and whose last preview ended more than idle_seconds ago with nothing
-- further asked of them.
SELECT d.id FROM deployed_components d
WHERE d.status = 'pending' AND d.stack_instance_id IS NULL AND d.template_component_id IS NULL
  AND d.created_at < now() - make_interval(secs => sqlc.arg(idle_seconds)::float8)
  AND NOT EXISTS (SELECT 1 FROM operations o WHERE o.deployment_id = d.id
      AND (o.status IN ('queued', 'running', 'awaiting_approval')
        OR o.finished_at > now() - make_interval(secs => sqlc.arg(idle_seconds)::float8)))
ORDER BY d.created_at
LIMIT 100;

-- name: SetDeploymentGitOptIns :exec
-- Whether the deployment previews its component's pushed branches, and upgrades to each
-- version a tag publishes.
UPDATE deployed_components SET preview_from_git = $2, upgrade_on_publish = $3, updated_at = now() WHERE id = $1;

-- name: DeploymentsPreviewingGit :many
-- The deployments of a component that preview its pushed branches, and have been deployed
-- (a preview of a pending one would be a first deploy's).
SELECT id FROM deployed_components
WHERE component_id = $1 AND preview_from_git AND status NOT IN ('pending', 'destroyed') ORDER BY created_at;

-- name: DeploymentsUpgradingOnPublish :many
-- The deployments of a component that upgrade to each published version, below version.
SELECT id FROM deployed_components
WHERE component_id = $1 AND upgrade_on_publish AND version < $2 AND stack_instance_id IS NULL
  AND status NOT IN ('pending', 'destroyed') ORDER BY created_at;

-- name: CommitPreviewed :one
-- Whether a branch's commit was previewed on the deployment already.
SELECT EXISTS (SELECT 1 FROM operations WHERE deployment_id = $1 AND source_commit = $2 AND source_ref = $3);

-- name: UpgradeAsked :one
-- Whether an upgrade of the deployment to version was asked for already.
SELECT EXISTS (SELECT 1 FROM operations WHERE deployment_id = $1 AND kind = 'upgrade' AND target_version = $2);
