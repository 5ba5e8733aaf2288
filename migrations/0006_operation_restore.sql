-- A restore of a deployment's state holds the deployment's one active slot like any operation,
-- so nothing runs on the stack while its state is replaced, and it shows in the history. And
-- indexes for the lists that span deployments: the newest operations and deployments first.

ALTER TABLE operations DROP CONSTRAINT operations_kind_check;
ALTER TABLE operations ADD CONSTRAINT operations_kind_check
    CHECK (kind IN ('preview', 'deploy', 'update', 'upgrade', 'refresh', 'destroy', 'restore'));

CREATE INDEX operations_created_idx ON operations (created_at DESC, id DESC);
CREATE INDEX deployed_components_tenant_idx ON deployed_components (tenant_id, created_at DESC);
