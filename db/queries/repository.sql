-- name: CreateRepositoryLink :one
INSERT INTO repository_links (id, component_id, url, path, branch, tag_pattern, username, token, token_key_id,
    webhook_secret, webhook_key_id, linked_by, forge, status_api)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
RETURNING *;

-- name: GetRepositoryLink :one
SELECT * FROM repository_links WHERE id = $1;

-- name: RepositoryLinkOf :one
SELECT * FROM repository_links WHERE component_id = $1;

-- name: DeleteRepositoryLink :execrows
DELETE FROM repository_links WHERE component_id = $1;

-- name: ComponentLinked :one
-- Whether the component's draft comes from git, and from where.
SELECT url, path, branch FROM repository_links WHERE component_id = $1;

-- name: ListRepositoryLinkIDs :many
-- Every link, for the poll; the components of deleted ones are left alone.
SELECT l.id FROM repository_links l JOIN components c ON c.id = l.component_id WHERE c.deleted_at IS NULL;

-- name: LockRepositoryLink :one
-- One sync of a link at a time, on every node.
SELECT l.* FROM repository_links l JOIN components c ON c.id = l.component_id
WHERE l.id = $1 AND c.deleted_at IS NULL FOR UPDATE OF l;

-- name: SetRepositoryPolled :exec
UPDATE repository_links SET polled_at = now(), last_error = $2, updated_at = now() WHERE id = $1;

-- name: SetRepositoryDraft :exec
UPDATE repository_links SET draft_commit = $2, draft_author = $3, draft_message = $4, updated_at = now() WHERE id = $1;

-- name: GetRepositorySync :one
SELECT * FROM repository_syncs WHERE link_id = $1 AND ref = $2 AND commit_sha = $3;

-- name: StartRepositorySync :one
INSERT INTO repository_syncs (link_id, ref, is_tag, commit_sha, author, message)
VALUES ($1, $2, $3, $4, $5, $6)
RETURNING *;

-- name: MoveRepositorySync :exec
UPDATE repository_syncs SET status = sqlc.arg(status), reason = sqlc.arg(reason), problems = sqlc.arg(problems),
    version = sqlc.narg(version), check_id = sqlc.narg(check_id),
    finished_at = CASE WHEN sqlc.arg(status)::text IN ('synced', 'refused', 'failed') THEN now() END
WHERE id = sqlc.arg(id) AND status = ANY (sqlc.arg(sources)::text[]);

-- name: PublishedTag :one
-- The commit a tag of the link was published from, if it was.
SELECT commit_sha, version FROM repository_syncs
WHERE link_id = $1 AND ref = $2 AND is_tag AND status = 'synced' ORDER BY created_at LIMIT 1;

-- name: ListRepositorySyncs :many
SELECT * FROM repository_syncs WHERE link_id = $1 ORDER BY created_at DESC LIMIT $2;

-- name: CheckOfCode :one
-- The newest check of exactly this program and input schema.
SELECT * FROM component_checks WHERE component_id = $1 AND code = $2 AND input_schema = $3
ORDER BY created_at DESC LIMIT 1;

-- name: StartBranchSync :one
-- A pushed branch's commit, with the program it holds for the previews it asks for.
INSERT INTO repository_syncs (link_id, ref, is_tag, commit_sha, author, message, code)
VALUES ($1, $2, false, $3, $4, $5, $6)
RETURNING *;

-- name: GetRepositorySyncByID :one
SELECT * FROM repository_syncs WHERE id = $1;

-- name: SetRepositoryError :exec
-- Why something Nimbus asked of the link's forge failed, without counting as a poll.
UPDATE repository_links SET last_error = $2, updated_at = now() WHERE id = $1;
