-- An operation that carries out a succeeded preview names it: the engine's plan, saved with the
-- preview's step, is what the operation applies, so the engine refuses anything the preview
-- did not show.
ALTER TABLE operations ADD COLUMN applies uuid REFERENCES operations (id) ON DELETE SET NULL;
