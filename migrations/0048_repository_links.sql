-- A component whose program lives in git: the repository (an https URL), the folder that holds
-- the program, the branch whose commits become the draft, the tags that publish (a glob), and
-- the token that reads it, sealed with the master key and bound to the link. The webhook's
-- secret is made by Nimbus and sealed the same way. draft_* say which commit the draft was taken
-- from; last_error why the repository could not be read when it was last asked.
CREATE TABLE repository_links (
    id             uuid PRIMARY KEY,
    component_id   uuid NOT NULL UNIQUE REFERENCES components (id) ON DELETE CASCADE,
    url            text NOT NULL,
    path           text NOT NULL DEFAULT '',
    branch         text NOT NULL,
    tag_pattern    text NOT NULL DEFAULT 'v*',
    username       text NOT NULL DEFAULT '',
    token          bytea,
    token_key_id   text,
    webhook_secret bytea NOT NULL,
    webhook_key_id text NOT NULL,
    draft_commit   text NOT NULL DEFAULT '',
    draft_author   text NOT NULL DEFAULT '',
    draft_message  text NOT NULL DEFAULT '',
    last_error     text NOT NULL DEFAULT '',
    polled_at      timestamptz,
    linked_by      uuid REFERENCES users (id) ON DELETE SET NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now()
);

-- What became of one commit of a link's branch, or one tag: taken as the draft or published
-- (synced), refused with the reason and the program's problems as the editor words them, or
-- waiting for the engine's check of a tag's program (component.SyncMachine). A commit or tag is
-- looked at once; a tag moved to another commit is a new row.
CREATE TABLE repository_syncs (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    link_id     uuid NOT NULL REFERENCES repository_links (id) ON DELETE CASCADE,
    ref         text NOT NULL,
    is_tag      boolean NOT NULL,
    commit_sha  text NOT NULL,
    author      text NOT NULL DEFAULT '',
    message     text NOT NULL DEFAULT '',
    status      text NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'checking', 'synced', 'refused', 'failed')),
    version     integer,
    check_id    uuid REFERENCES component_checks (id) ON DELETE SET NULL,
    reason      text NOT NULL DEFAULT '',
    problems    jsonb NOT NULL DEFAULT '[]',
    created_at  timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz,
    UNIQUE (link_id, ref, commit_sha)
);
CREATE INDEX repository_syncs_link_idx ON repository_syncs (link_id, created_at DESC);

-- The name a tag gave a version (tag v1.2.0 publishes version 1.2.0); empty for versions
-- published in Nimbus, which go by their number alone.
ALTER TABLE component_versions ADD COLUMN release text NOT NULL DEFAULT '';
