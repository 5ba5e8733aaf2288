-- One request for a whole stack run: the first of its operations that policies hold back opens
-- it, for what every step of the run needs, and the run's other operations wait on it too. A
-- run has one request at a time, as an operation has: a void one is followed by a new one.
ALTER TABLE approval_requests ADD COLUMN run_id uuid REFERENCES stack_runs (id) ON DELETE CASCADE;
CREATE UNIQUE INDEX approval_requests_run_key ON approval_requests (run_id) WHERE run_id IS NOT NULL AND status <> 'void';
