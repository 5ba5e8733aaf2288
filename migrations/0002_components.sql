-- The semantic layer and components: what kinds of things exist, on which providers, and the
-- versioned Pulumi programs that create them.

CREATE TABLE semantic_providers (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name         text NOT NULL UNIQUE,
    display_name text NOT NULL,
    description  text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE semantic_resource_types (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name         text NOT NULL UNIQUE,
    display_name text NOT NULL,
    description  text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);

-- How a provider realises a semantic type: the Pulumi resource type behind it.
CREATE TABLE provider_resource_types (
    id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    provider_id      uuid NOT NULL REFERENCES semantic_providers (id) ON DELETE CASCADE,
    semantic_type_id uuid NOT NULL REFERENCES semantic_resource_types (id) ON DELETE CASCADE,
    pulumi_type      text NOT NULL,
    description      text NOT NULL DEFAULT '',
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    UNIQUE (provider_id, pulumi_type)
);

INSERT INTO semantic_providers (name, display_name, description) VALUES
    ('proxmox', 'Proxmox VE', 'Proxmox Virtual Environment clusters'),
    ('kubernetes', 'Kubernetes', 'Kubernetes clusters'),
    ('aws', 'Amazon Web Services', 'AWS accounts and regions'),
    ('oci', 'Oracle Cloud Infrastructure', 'OCI tenancies and compartments'),
    ('simcloud', 'Simulated cloud', 'A cloud simulated on the Nimbus host, for tests and demos');

INSERT INTO semantic_resource_types (name, display_name, description) VALUES
    ('VirtualMachine', 'Virtual machine', 'A machine with CPU, memory, disk and network'),
    ('Container', 'Container', 'An OS container or container workload'),
    ('BlockStorage', 'Block storage', 'A volume attached to a machine'),
    ('VirtualNetwork', 'Virtual network', 'A network or subnet machines attach to'),
    ('FirewallRule', 'Firewall rule', 'A rule allowing or denying traffic'),
    ('KubernetesNamespace', 'Kubernetes namespace', 'A namespace with its quota and policies'),
    ('Database', 'Database', 'A managed database instance'),
    ('ObjectBucket', 'Object bucket', 'An object storage bucket');

INSERT INTO provider_resource_types (provider_id, semantic_type_id, pulumi_type)
SELECT p.id, t.id, m.pulumi_type
FROM (VALUES
    ('proxmox', 'VirtualMachine', 'proxmoxve:VM/virtualMachine:VirtualMachine'),
    ('proxmox', 'Container', 'proxmoxve:CT/container:Container'),
    ('proxmox', 'BlockStorage', 'proxmoxve:Storage/file:File'),
    ('proxmox', 'VirtualNetwork', 'proxmoxve:Network/networkBridge:NetworkBridge'),
    ('proxmox', 'FirewallRule', 'proxmoxve:Network/firewallRules:FirewallRules'),
    ('kubernetes', 'KubernetesNamespace', 'kubernetes:core/v1:Namespace'),
    ('kubernetes', 'Container', 'kubernetes:apps/v1:Deployment'),
    ('aws', 'VirtualMachine', 'aws:ec2/instance:Instance'),
    ('aws', 'BlockStorage', 'aws:ebs/volume:Volume'),
    ('aws', 'VirtualNetwork', 'aws:ec2/vpc:Vpc'),
    ('aws', 'FirewallRule', 'aws:ec2/securityGroupRule:SecurityGroupRule'),
    ('aws', 'Database', 'aws:rds/instance:Instance'),
    ('aws', 'ObjectBucket', 'aws:s3/bucketV2:BucketV2'),
    ('oci', 'VirtualMachine', 'oci:Core/instance:Instance'),
    ('oci', 'BlockStorage', 'oci:Core/volume:Volume'),
    ('oci', 'VirtualNetwork', 'oci:Core/vcn:Vcn'),
    ('oci', 'ObjectBucket', 'oci:ObjectStorage/bucket:Bucket'),
    ('simcloud', 'VirtualMachine', 'simcloud:index:Machine'),
    ('simcloud', 'BlockStorage', 'simcloud:index:Disk'),
    ('simcloud', 'VirtualNetwork', 'simcloud:index:Network')
) AS m (provider, semantic_type, pulumi_type)
JOIN semantic_providers p ON p.name = m.provider
JOIN semantic_resource_types t ON t.name = m.semantic_type;

CREATE TABLE components (
    id                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    -- NULL: provider-level, visible to every tenant.
    tenant_id         uuid REFERENCES tenants (id) ON DELETE CASCADE,
    provider_id       uuid NOT NULL REFERENCES semantic_providers (id),
    semantic_type_id  uuid NOT NULL REFERENCES semantic_resource_types (id),
    name              text NOT NULL,
    display_name      text NOT NULL,
    description       text NOT NULL DEFAULT '',
    language          text NOT NULL CHECK (language IN ('yaml', 'typescript', 'python')),
    code              text NOT NULL,
    input_schema      jsonb NOT NULL,
    output_schema     jsonb NOT NULL,
    resolver_bindings jsonb NOT NULL DEFAULT '{}',
    is_system         boolean NOT NULL DEFAULT false,
    latest_version    integer NOT NULL DEFAULT 0,
    created_by        uuid REFERENCES users (id) ON DELETE SET NULL,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    deleted_at        timestamptz
);
CREATE UNIQUE INDEX components_name_key ON components
    (provider_id, coalesce(tenant_id, '00000000-0000-0000-0000-000000000000'), lower(name))
    WHERE deleted_at IS NULL;
CREATE INDEX components_tenant_idx ON components (tenant_id) WHERE deleted_at IS NULL;

CREATE TABLE component_versions (
    id                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    component_id      uuid NOT NULL REFERENCES components (id) ON DELETE CASCADE,
    version           integer NOT NULL,
    language          text NOT NULL,
    code              text NOT NULL,
    input_schema      jsonb NOT NULL,
    output_schema     jsonb NOT NULL,
    resolver_bindings jsonb NOT NULL,
    changelog         text NOT NULL CHECK (changelog <> ''),
    published_by      uuid REFERENCES users (id) ON DELETE SET NULL,
    published_at      timestamptz NOT NULL DEFAULT now(),
    archived_at       timestamptz,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    UNIQUE (component_id, version)
);
