-- A subscription's life is a status, moved by its machine (event.SubscriptionMachine) like every
-- other lifecycle's: active; paused by a person; disabled once its deliveries kept failing.
ALTER TABLE event_subscriptions ADD COLUMN status text NOT NULL DEFAULT 'active'
    CHECK (status IN ('active', 'paused', 'disabled'));
UPDATE event_subscriptions
SET status = CASE WHEN active THEN 'active' WHEN disabled_reason <> '' THEN 'disabled' ELSE 'paused' END;
ALTER TABLE event_subscriptions DROP COLUMN active;
