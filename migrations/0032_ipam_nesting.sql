-- An address may be handed out inside a subnet handed out before: a machine's address comes from
-- the subnet of the network it joins. No two allocations with the same parent (or none) overlap;
-- an address inside a subnet overlaps that subnet by design. A subnet given back leaves its
-- addresses in the pool, as allocations of their own, until their machines give them back.
ALTER TABLE ipam_allocations ADD COLUMN parent_id uuid REFERENCES ipam_allocations (id) ON DELETE SET NULL;
ALTER TABLE ipam_allocations DROP CONSTRAINT ipam_allocations_pool_id_prefix_excl;
ALTER TABLE ipam_allocations ADD CONSTRAINT ipam_allocations_no_overlap
    EXCLUDE USING gist (pool_id WITH =, (coalesce(parent_id, '00000000-0000-0000-0000-000000000000')) WITH =, prefix inet_ops WITH &&);
CREATE INDEX ipam_allocations_parent ON ipam_allocations (parent_id) WHERE parent_id IS NOT NULL;
