-- A Proxmox landing zone's API access: the endpoint and API token a provider admin gave, the
-- token's secret sealed with the master key (bound to the zone), an optional certificate
-- authority, and what the API said when it was last asked. The endpoint and token ID are kept
-- in the clear, to show which API and which token it is.
CREATE TABLE zone_proxmox_access (
    landing_zone_id uuid PRIMARY KEY REFERENCES landing_zones (id) ON DELETE CASCADE,
    endpoint        text NOT NULL,
    token_id        text NOT NULL,
    token_secret    bytea NOT NULL,
    secret_key_id   text NOT NULL,
    ca_cert         text NOT NULL DEFAULT '',
    server_version  text NOT NULL,
    checked_at      timestamptz NOT NULL,
    set_by          uuid REFERENCES users (id) ON DELETE SET NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);

-- The catalog's Proxmox entries were container templates (vztmpl), which no Proxmox component
-- takes from the catalog: proxmox-vm, the one that binds its image to it, boots a cloud image
-- of import content, and its input refuses anything else. The seeded entries become the cloud
-- images of the same systems; entries a provider admin added are left as they are.
UPDATE image_catalog SET image_id = 'local:import/debian-12-genericcloud-amd64.qcow2', image_name = 'Debian 12 (bookworm) cloud image', updated_at = now()
WHERE provider = 'proxmox' AND image_id = 'local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst';
UPDATE image_catalog SET image_id = 'local:import/noble-server-cloudimg-amd64.qcow2', image_name = 'Ubuntu 24.04 LTS cloud image', updated_at = now()
WHERE provider = 'proxmox' AND image_id = 'local:vztmpl/ubuntu-24.04-standard_24.04-2_amd64.tar.zst';
UPDATE image_catalog SET image_id = 'local:import/Rocky-9-GenericCloud-Base.latest.x86_64.qcow2', image_name = 'Rocky Linux 9 cloud image', updated_at = now()
WHERE provider = 'proxmox' AND image_id = 'local:vztmpl/rockylinux-9-default_20240912_amd64.tar.xz';
