-- Each scheduled backup, recorded as it ends: the system page and /metrics show the last
-- success and its size, and a failure keeps its error. An ending is data: succeeded, and what
-- went wrong when it did not.
CREATE TABLE backups (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    started_at timestamptz NOT NULL,
    succeeded  boolean NOT NULL,
    -- Where the archive went: a key of the object store, or a file of the backup directory.
    location   text NOT NULL DEFAULT '',
    size       bigint NOT NULL DEFAULT 0 CHECK (size >= 0),
    error      text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CHECK (succeeded = (error = ''))
);
CREATE INDEX backups_newest ON backups (created_at DESC);
CREATE INDEX backups_newest_success ON backups (created_at DESC) WHERE succeeded;
