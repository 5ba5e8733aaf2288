-- A tenant asked to be removed while it still had namespaces on clusters: they are decommissioned
-- first, and the tenant is removed when the last is gone.
ALTER TABLE tenants ADD COLUMN removal_requested_at timestamptz;
