-- Resolvers turn a deployment's abstract inputs into concrete values when it is deployed: an
-- address from an IPAM pool, a name from a pattern. Their configuration is per environment
-- until landing zones arrive; what they hand out is recorded against the deployment and the
-- operation that asked, so a failure or a destroy gives back exactly that.

-- Lets one exclusion constraint compare a uuid for equality and an address range for overlap.
CREATE EXTENSION IF NOT EXISTS btree_gist;

CREATE TABLE resolver_configurations (
    id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    environment_id uuid NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    type           text NOT NULL CHECK (type IN ('ipam', 'naming', 'image_catalog', 'secret_provisioner')),
    config         jsonb NOT NULL,
    updated_by     uuid REFERENCES users (id) ON DELETE SET NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    UNIQUE (environment_id, type)
);

CREATE TABLE ipam_pools (
    id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id      uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    environment_id uuid NOT NULL,
    name           text NOT NULL,
    prefix         cidr NOT NULL,
    -- Ranges never handed out (a gateway, addresses managed by hand), inside the prefix.
    reserved       cidr[] NOT NULL DEFAULT '{}',
    created_by     uuid REFERENCES users (id) ON DELETE SET NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (environment_id, tenant_id) REFERENCES environments (id, tenant_id) ON DELETE CASCADE,
    UNIQUE (environment_id, name),
    -- Two pools of one environment never share an address.
    EXCLUDE USING gist (environment_id WITH =, prefix inet_ops WITH &&)
);

CREATE TABLE ipam_allocations (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    pool_id       uuid NOT NULL REFERENCES ipam_pools (id) ON DELETE RESTRICT,
    -- An address is a /32 (or /128); a subnet its own prefix.
    prefix        cidr NOT NULL,
    kind          text NOT NULL CHECK (kind IN ('address', 'subnet')),
    deployment_id uuid REFERENCES deployed_components (id) ON DELETE CASCADE,
    operation_id  uuid REFERENCES operations (id) ON DELETE SET NULL,
    -- The input the allocation was made for, so a deployment asks once per input.
    input         text NOT NULL DEFAULT '',
    created_at    timestamptz NOT NULL DEFAULT now(),
    -- No address is ever handed out twice, whatever the code above does.
    EXCLUDE USING gist (pool_id WITH =, prefix inet_ops WITH &&)
);
CREATE UNIQUE INDEX ipam_allocations_input_key ON ipam_allocations (deployment_id, input) WHERE deployment_id IS NOT NULL;

-- The last number a naming pattern issued, per pattern as rendered without its number.
CREATE TABLE naming_sequences (
    scope      text PRIMARY KEY,
    last       bigint NOT NULL DEFAULT 0,
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE issued_names (
    id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    environment_id uuid NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    name           text NOT NULL,
    fqdn           text NOT NULL,
    deployment_id  uuid REFERENCES deployed_components (id) ON DELETE CASCADE,
    operation_id   uuid REFERENCES operations (id) ON DELETE SET NULL,
    input          text NOT NULL DEFAULT '',
    created_at     timestamptz NOT NULL DEFAULT now()
);
-- A name is never handed out twice in an environment.
CREATE UNIQUE INDEX issued_names_name_key ON issued_names (environment_id, lower(name));
CREATE UNIQUE INDEX issued_names_input_key ON issued_names (deployment_id, input) WHERE deployment_id IS NOT NULL;

-- Images by what a person asks for: the operating system, its version, the architecture.
CREATE TABLE image_catalog (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    provider     text NOT NULL REFERENCES semantic_providers (name) ON UPDATE CASCADE,
    os_family    text NOT NULL,
    os_version   text NOT NULL,
    architecture text NOT NULL DEFAULT 'amd64',
    image_id     text NOT NULL,
    image_name   text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX image_catalog_key ON image_catalog (provider, lower(os_family), lower(os_version), lower(architecture));

INSERT INTO image_catalog (provider, os_family, os_version, architecture, image_id, image_name) VALUES
    ('simcloud', 'debian', '12', 'amd64', 'debian-12', 'Debian 12 (bookworm)'),
    ('simcloud', 'debian', '13', 'amd64', 'debian-13', 'Debian 13 (trixie)'),
    ('simcloud', 'ubuntu', '24.04', 'amd64', 'ubuntu-24.04', 'Ubuntu 24.04 LTS'),
    ('proxmox', 'debian', '12', 'amd64', 'local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst', 'Debian 12 standard (container template)'),
    ('proxmox', 'ubuntu', '24.04', 'amd64', 'local:vztmpl/ubuntu-24.04-standard_24.04-2_amd64.tar.zst', 'Ubuntu 24.04 standard (container template)'),
    ('proxmox', 'rocky', '9', 'amd64', 'local:vztmpl/rockylinux-9-default_20240912_amd64.tar.xz', 'Rocky Linux 9 (container template)');
