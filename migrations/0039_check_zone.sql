-- The landing zone whose Proxmox API access a check of a Proxmox component's draft previews
-- with, as the provider admin chose it. Only the choice is kept: the worker opens the zone's
-- credentials when the check runs. A zone removed meanwhile leaves the check without access,
-- which it then says.
ALTER TABLE component_checks ADD COLUMN landing_zone_id uuid REFERENCES landing_zones (id) ON DELETE SET NULL;
