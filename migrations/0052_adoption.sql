-- The unmanaged item a deployment's first operation adopts: the engine imports the resource the
-- item stands for into the stack before its up, which then manages it as one it made.
ALTER TABLE operations ADD COLUMN adopts uuid REFERENCES inventory_items (id) ON DELETE SET NULL;
