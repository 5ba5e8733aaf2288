-- name: RecordBackup :exec
INSERT INTO backups (started_at, succeeded, location, size, error) VALUES ($1, $2, $3, $4, $5);

-- name: LastBackup :one
-- The newest backup, whatever its ending.
SELECT * FROM backups ORDER BY created_at DESC LIMIT 1;

-- name: LastSuccessfulBackup :one
SELECT * FROM backups WHERE succeeded ORDER BY created_at DESC LIMIT 1;
