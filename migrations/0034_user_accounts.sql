-- A provider admin may disable an account for a while: it cannot sign in, and its sessions and
-- API tokens stop working until it is enabled again.
ALTER TABLE users ADD COLUMN disabled_at timestamptz;
