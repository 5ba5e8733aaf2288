-- name: StackInstanceInRun :one
-- The deployment's stack instance, when a run of it is under way. The share lock waits for a
-- run's start or end under way, so an operation ending now never misses one.
SELECT i.id FROM stack_instances i JOIN deployed_components d ON d.stack_instance_id = i.id
WHERE d.id = $1 AND EXISTS (SELECT 1 FROM stack_runs r WHERE r.instance_id = i.id AND r.status = 'running')
FOR SHARE OF i;
