-- A deployment whose operation was cancelled part way says so instead of "failed": a first
-- deploy cancelled (what it made removed again), or a destroy stopped before it ended.
ALTER TABLE deployed_components DROP CONSTRAINT deployed_components_status_check,
    ADD CONSTRAINT deployed_components_status_check
        CHECK (status IN ('pending', 'deploying', 'deployed', 'failed', 'cancelled', 'destroying', 'destroyed', 'upgrading'));

-- What the undo of a failed or cancelled operation did to each resource, kept beside what the
-- operation itself did, so its page can say what finished, what failed and what was undone.
ALTER TABLE operation_resources
    ADD COLUMN undo_op     text NOT NULL DEFAULT '',
    ADD COLUMN undo_status text NOT NULL DEFAULT '' CHECK (undo_status IN ('', 'running', 'done', 'failed'));
