-- name: StackInstanceInRun :one
-- The deployment's stack instance, when a run of it is under way. The share lock waits for a
-- run's start or end under way, so an operation ending now never misses one.
SELECT i.id FROM stack_instances i JOIN deployed_components d ON d.stack_instance_id = i.id
WHERE d.id = $1 AND EXISTS (SELECT 1 FROM stack_runs r WHERE r.instance_id = i.id AND r.status = 'running')
FOR SHARE OF i;

-- name: SlotSchemas :many
-- The inputs, outputs and resolver bindings of the component versions a stack's slots pin,
-- with the semantic type of each component (what an input naming another slot asks for).
SELECT v.component_id, v.version, v.input_schema, v.output_schema, v.resolver_bindings, t.name AS semantic_type
FROM component_versions v
JOIN components c ON c.id = v.component_id
JOIN semantic_resource_types t ON t.id = c.semantic_type_id
WHERE (v.component_id, v.version) IN (SELECT unnest(@component_ids::uuid[]), unnest(@versions::int[]));

-- name: StackVersionDefinition :one
SELECT definition FROM stack_versions WHERE stack_id = $1 AND version = $2;

-- name: StackVersionOperations :many
SELECT * FROM stack_day2_operations WHERE stack_id = $1 AND version = $2 ORDER BY position, name;
