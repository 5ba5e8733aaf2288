-- name: SetZoneProxmoxAccess :one
INSERT INTO zone_proxmox_access (landing_zone_id, endpoint, token_id, token_secret, secret_key_id, ca_cert, server_version, checked_at, set_by)
VALUES ($1, $2, $3, $4, $5, $6, $7, now(), $8)
ON CONFLICT (landing_zone_id) DO UPDATE SET
    endpoint = excluded.endpoint, token_id = excluded.token_id, token_secret = excluded.token_secret,
    secret_key_id = excluded.secret_key_id, ca_cert = excluded.ca_cert, server_version = excluded.server_version,
    checked_at = excluded.checked_at, set_by = excluded.set_by, updated_at = now()
RETURNING *;

-- name: GetZoneProxmoxAccess :one
SELECT * FROM zone_proxmox_access WHERE landing_zone_id = $1;

-- name: RemoveZoneProxmoxAccess :execrows
DELETE FROM zone_proxmox_access WHERE landing_zone_id = $1;

-- name: CheckedZoneProxmoxAccess :one
UPDATE zone_proxmox_access SET server_version = $2, checked_at = now()
WHERE landing_zone_id = $1 AND updated_at = $3
RETURNING *;

-- name: ZoneHasProxmoxAccess :one
SELECT EXISTS (SELECT 1 FROM zone_proxmox_access WHERE landing_zone_id = $1);

-- name: ProxmoxZonesWithAccess :many
-- The Proxmox landing zones that have their API access, by name: those a check may use.
SELECT z.id, z.name FROM landing_zones z JOIN zone_proxmox_access a ON a.landing_zone_id = z.id
WHERE z.provider = 'proxmox'
ORDER BY lower(z.name);
