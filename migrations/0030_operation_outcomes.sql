-- How an operation came out, as fields beside the message it keeps: what the pages and the API
-- say about an ending is read from these, never from the message's words.
--   outcome          why it ended as it did ('' while it has not ended)
--   failed_step      the step that failed, or that a cancel or the time limit stopped
--   undone           a deploy's undo removed everything it had created
--   rolled_back      an update's or an upgrade's undo put back the previous version and parameters
--   timed_out_after  the time it may run, which ran out
--   refusals         for a refusal, each field it named and the rule that field broke
ALTER TABLE operations
    ADD COLUMN outcome         text NOT NULL DEFAULT ''
        CHECK (outcome IN ('', 'succeeded', 'failed', 'timed_out', 'cancelled', 'gave_up', 'refused', 'rejected')),
    ADD COLUMN failed_step     text NOT NULL DEFAULT '',
    ADD COLUMN undone          boolean NOT NULL DEFAULT false,
    ADD COLUMN rolled_back     boolean NOT NULL DEFAULT false,
    ADD COLUMN timed_out_after interval,
    ADD COLUMN refusals        jsonb NOT NULL DEFAULT '[]',
    ADD CONSTRAINT operations_timed_out_after CHECK ((outcome = 'timed_out') = (timed_out_after IS NOT NULL));

-- Operations that ended before the fields existed said all of it in their message, in the words
-- the worker wrote then: read once here, so that no code has to parse them again.
--   ran out of its <limit>: <rest>
--   step <name>: <cause>
--   gave up after its last attempt: <cause>
--   … (everything it created was removed) | … (rolled back to the previous version and parameters)
-- A failed message that names no step was a refusal (or a restore that failed), said in words
-- of its own.
WITH old AS (
    SELECT id, status, kind, error,
        -- A limit Go wrote and Postgres reads (hours, minutes, seconds, milliseconds).
        substring(error FROM '^ran out of its (([0-9]+(\.[0-9]+)?(h|m|s|ms))+):') AS time_limit,
        substring(regexp_replace(error, '^ran out of its [^:]+: ', '') FROM '^step ([a-z_]+):') AS step
    FROM operations
    WHERE outcome = '' AND status IN ('succeeded', 'failed', 'cancelled', 'rejected')
)
UPDATE operations o SET
    outcome = CASE
        WHEN old.status <> 'failed' THEN old.status
        WHEN old.time_limit IS NOT NULL THEN 'timed_out'
        WHEN old.error LIKE 'gave up after its last attempt: %' THEN 'gave_up'
        WHEN old.step = 'govern' AND (old.error LIKE 'step govern: invalid input: %'
            OR old.error LIKE 'step govern: this component is not allowed for this tenant%') THEN 'refused'
        WHEN old.step IS NOT NULL THEN 'failed'
        WHEN old.kind = 'restore' THEN 'failed'
        ELSE 'refused' END,
    failed_step = coalesce(old.step, ''),
    undone = old.error LIKE '%(everything it created was removed)',
    rolled_back = old.error LIKE '%(rolled back to the previous version and parameters)',
    timed_out_after = CASE WHEN old.status = 'failed' THEN old.time_limit::interval END
FROM old
WHERE o.id = old.id;
