-- Indexes for the lists that grow without bound, read newest first a page at a time: each
-- serves its list's order (and the cursor that continues it) for all tenants and for one, so a
-- page reads its rows from the index instead of sorting the table. And the counts the catalog
-- and the check limits make per component and per time.

CREATE INDEX deployed_components_created_idx ON deployed_components (created_at DESC, id DESC);
DROP INDEX deployed_components_tenant_idx;
CREATE INDEX deployed_components_tenant_idx ON deployed_components (tenant_id, created_at DESC, id DESC);
-- The catalog counts each component's live deployments.
CREATE INDEX deployed_components_component_idx ON deployed_components (component_id) WHERE status <> 'destroyed';

CREATE INDEX approval_requests_created_idx ON approval_requests (created_at DESC, id DESC);
CREATE INDEX approval_requests_tenant_idx ON approval_requests (tenant_id, created_at DESC, id DESC);

-- The catalog's order.
CREATE INDEX components_name_idx ON components (lower(name), id) WHERE deleted_at IS NULL;

-- The check limits count a tenant's recent checks.
CREATE INDEX component_checks_created_idx ON component_checks (created_at);
