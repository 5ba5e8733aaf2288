-- A day-2 operation's secret inputs: sealed with the master key named by secret_key_id (the
-- run's ID bound in), apart from the plain ones in inputs, and opened only to work out the
-- slots' new inputs.
ALTER TABLE stack_runs
    ADD COLUMN secret_inputs bytea,
    ADD COLUMN secret_key_id text;
