-- Which change of status a failed environment failed in, provisioning or decommissioning, so
-- that a retry takes up that one. Only a failed environment has one.
ALTER TABLE environments ADD COLUMN failed_transition text CHECK (failed_transition IN ('provision', 'decommission'));

-- Until now a failed decommissioning was told by the start of its reason.
UPDATE environments SET failed_transition = CASE WHEN status_reason LIKE 'Decommissioning stopped: %' THEN 'decommission' ELSE 'provision' END
WHERE status = 'failed';

ALTER TABLE environments ADD CONSTRAINT environments_failed_transition_when_failed CHECK (failed_transition IS NULL OR status = 'failed');
