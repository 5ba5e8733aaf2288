-- Drift: what a deployment's resources look like in the cloud compared with what its stack
-- recorded, found by drift checks (an operation kind of its own, which changes nothing), on
-- demand or on a schedule set per landing zone and overridden per environment.

ALTER TABLE operations DROP CONSTRAINT operations_kind_check;
ALTER TABLE operations ADD CONSTRAINT operations_kind_check
    CHECK (kind IN ('preview', 'deploy', 'update', 'upgrade', 'refresh', 'destroy', 'restore', 'drift_check'));

-- An update that reads the resources back before it changes them, so that it puts back what
-- changed behind Nimbus's back: the reconcile of a drift.
ALTER TABLE operations ADD COLUMN refresh boolean NOT NULL DEFAULT false;

ALTER TABLE deployed_components
    ADD COLUMN drift_status text NOT NULL DEFAULT 'unknown' CHECK (drift_status IN ('in_sync', 'drifted', 'unknown')),
    ADD COLUMN drift_checked_at timestamptz,
    -- What the last check found: [{urn, type, name, op, changes: [{path, kind, old, new}]}],
    -- secret values masked; empty when in sync.
    ADD COLUMN drift jsonb NOT NULL DEFAULT '[]';

-- How often the deployments of a zone's environments are checked; NULL is never. An
-- environment's own setting overrides its zone's; zero there turns the zone's off for it.
ALTER TABLE landing_zones ADD COLUMN drift_interval interval;
ALTER TABLE landing_zones ADD CONSTRAINT landing_zones_drift_interval_check CHECK (drift_interval > interval '0');
ALTER TABLE environments ADD COLUMN drift_interval interval;
ALTER TABLE environments ADD CONSTRAINT environments_drift_interval_check CHECK (drift_interval >= interval '0');

CREATE INDEX deployed_components_drifted_idx ON deployed_components (tenant_id) WHERE drift_status = 'drifted';
