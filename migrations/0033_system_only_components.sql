-- Some built-in components are parts Nimbus deploys itself, the tenant factory's: tenants are
-- neither offered them nor may deploy them.
ALTER TABLE components ADD COLUMN system_only boolean NOT NULL DEFAULT false;
UPDATE components SET system_only = true
WHERE is_system AND tenant_id IS NULL
  AND name IN ('k8s-namespace', 'k8s-quota', 'k8s-network-policy', 'k8s-secret', 'k8s-ingress', 'k8s-tenant-access');
