-- Deleting an event deletes its deliveries (ON DELETE CASCADE): without an index on event_id,
-- each event the retention deletes would scan every delivery.
CREATE INDEX event_deliveries_event_idx ON event_deliveries (event_id);
