-- The deployments list's filters offer the environments and components deployments use: asked
-- of each environment or component in turn, whatever the deployment's status (the index on
-- component_id leaves out destroyed ones), through an index that answers it alone.
CREATE INDEX deployed_components_environment_idx ON deployed_components (environment_id);
CREATE INDEX deployed_components_component_tenant_idx ON deployed_components (component_id, tenant_id);
