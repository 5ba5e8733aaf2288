-- A deployment that moves to another subnet (a machine joining another network) or back to its
-- pool holds, while the operation that moves it runs, both the allocation it leaves and the one
-- it goes to: the new one names the one it replaces. The operation's success gives the old one
-- back, which clears the new one's replaces (the deployment holds it alone); its undo gives the
-- new one back, like anything else it was handed. So per input a deployment holds one
-- allocation in use and at most one it moves to.
ALTER TABLE ipam_allocations ADD COLUMN replaces uuid REFERENCES ipam_allocations (id) ON DELETE SET NULL;
DROP INDEX ipam_allocations_input_key;
CREATE UNIQUE INDEX ipam_allocations_input_key ON ipam_allocations (deployment_id, input)
    WHERE deployment_id IS NOT NULL AND replaces IS NULL;
CREATE UNIQUE INDEX ipam_allocations_move_key ON ipam_allocations (deployment_id, input)
    WHERE deployment_id IS NOT NULL AND replaces IS NOT NULL;
CREATE INDEX ipam_allocations_replaces ON ipam_allocations (replaces) WHERE replaces IS NOT NULL;
