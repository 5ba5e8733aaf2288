-- A deployment's opt-ins to its component's repository: preview_from_git previews there each
-- branch pushed (a pull request's), upgrade_on_publish upgrades it to each version a tag
-- publishes, through its approvals and plan policies.
ALTER TABLE deployed_components
    ADD COLUMN preview_from_git boolean NOT NULL DEFAULT false,
    ADD COLUMN upgrade_on_publish boolean NOT NULL DEFAULT false;

-- Where a link reports its previews' results: the forge's kind (empty: told by the URL's host)
-- and its API's root (empty: derived from the URL).
ALTER TABLE repository_links
    ADD COLUMN forge text NOT NULL DEFAULT '' CHECK (forge IN ('', 'github', 'gitlab', 'gitea')),
    ADD COLUMN status_api text NOT NULL DEFAULT '';

-- The program a pushed branch's commit holds, kept on its sync for the previews it asks for.
ALTER TABLE repository_syncs ADD COLUMN code text;

-- A preview of a branch's program rather than a version's: the link, branch and commit it
-- came from and the program itself, kept on the operation so that it says so after the link
-- is gone.
ALTER TABLE operations
    ADD COLUMN source_link uuid REFERENCES repository_links (id) ON DELETE SET NULL,
    ADD COLUMN source_ref text NOT NULL DEFAULT '',
    ADD COLUMN source_commit text NOT NULL DEFAULT '',
    ADD COLUMN source_code text;
CREATE INDEX operations_source_idx ON operations (deployment_id, source_commit) WHERE source_commit <> '';
