-- Where an operation's time went, for its page and API: the queue and each step's run were
-- recorded already; these add the wait for approval (from the operation's parking to its
-- approval, rejection or cancel), each step's engine processes (the first's start to the last's
-- exit) and each step's undo. A step's finished_at now keeps when its do ended, its undo
-- beside it, so that the steps' times never overlap.
ALTER TABLE operations
    ADD COLUMN approval_asked_at timestamptz,
    ADD COLUMN approval_ended_at timestamptz;
ALTER TABLE operation_steps
    ADD COLUMN engine_started_at  timestamptz,
    ADD COLUMN engine_finished_at timestamptz,
    ADD COLUMN undo_started_at    timestamptz,
    ADD COLUMN undo_finished_at   timestamptz;
