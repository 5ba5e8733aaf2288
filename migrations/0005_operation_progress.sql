-- What an operation does to each resource, as the engine reports it, so a page can show a plan
-- and its progress; the new inputs an update or upgrade brings, kept on the operation until it
-- succeeds; and a notification whenever an operation changes, so readers need not poll.

ALTER TABLE operations
    -- Secret inputs of an update, sealed like the deployment's; plain ones are in parameters.
    ADD COLUMN secret_parameters bytea,
    ADD COLUMN secret_key_id     text;

CREATE TABLE operation_resources (
    operation_id uuid NOT NULL REFERENCES operations (id) ON DELETE CASCADE,
    urn          text NOT NULL,
    type         text NOT NULL DEFAULT '',
    name         text NOT NULL,
    op           text NOT NULL DEFAULT '',
    status       text NOT NULL CHECK (status IN ('planned', 'running', 'done', 'failed')),
    -- The properties the step changes: [{path, kind, old, new}], secret values masked.
    changes      jsonb NOT NULL DEFAULT '[]',
    diagnostics  text NOT NULL DEFAULT '',
    -- Orders the rows as the engine first reported them.
    seq          bigserial,
    started_at   timestamptz,
    finished_at  timestamptz,
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (operation_id, urn)
);

CREATE FUNCTION notify_operation() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- One channel for all operations: listeners pick theirs by the payload. Postgres folds
    -- identical notifications of one transaction into one.
    IF TG_TABLE_NAME = 'operations' THEN
        PERFORM pg_notify('nimbus_operation', NEW.id::text);
    ELSE
        PERFORM pg_notify('nimbus_operation', NEW.operation_id::text);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER operations_notify_insert AFTER INSERT ON operations
    FOR EACH ROW EXECUTE FUNCTION notify_operation();
-- Not on every heartbeat: only what a reader shows.
CREATE TRIGGER operations_notify_update AFTER UPDATE ON operations
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status
        OR OLD.cancel_requested_at IS DISTINCT FROM NEW.cancel_requested_at
        OR OLD.changes IS DISTINCT FROM NEW.changes)
    EXECUTE FUNCTION notify_operation();
CREATE TRIGGER operation_resources_notify AFTER INSERT OR UPDATE ON operation_resources
    FOR EACH ROW EXECUTE FUNCTION notify_operation();
CREATE TRIGGER operation_logs_notify AFTER INSERT ON operation_logs
    FOR EACH ROW EXECUTE FUNCTION notify_operation();
CREATE TRIGGER operation_steps_notify AFTER INSERT OR UPDATE ON operation_steps
    FOR EACH ROW EXECUTE FUNCTION notify_operation();
