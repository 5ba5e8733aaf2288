-- name: GetStackRun :one
SELECT r.*, u.email AS requested_by_email
FROM stack_runs r LEFT JOIN users u ON u.id = r.requested_by
WHERE r.id = $1;

-- name: StackStateEntered :one
-- When an instance entered its current state, to tell a timeout of that stay from a later one.
SELECT current_state, state_entered_at FROM stack_instances WHERE id = $1;

