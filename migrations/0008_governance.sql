-- Governance: which components a tenant may deploy and with which values. Each (component,
-- tenant) has at most two rules: the provider's ceiling and the tenant's own, which may only
-- narrow it. The rule that binds a deployment is their intersection, computed in Go.

CREATE TABLE component_governance (
    id                    uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    component_id          uuid NOT NULL REFERENCES components (id) ON DELETE CASCADE,
    tenant_id             uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    set_by                text NOT NULL CHECK (set_by IN ('provider', 'tenant')),
    is_allowed            boolean NOT NULL DEFAULT true,
    -- {"cores": {"minimum": 1, "maximum": 4}, "image": {"allowed": ["debian-12"]}, "name": {"pattern": "^web-"}}
    parameter_constraints jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(parameter_constraints) = 'object'),
    -- NULL: no limit.
    max_instances         integer CHECK (max_instances >= 0),
    updated_by            uuid REFERENCES users (id) ON DELETE SET NULL,
    created_at            timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, component_id, set_by)
);
CREATE INDEX component_governance_component_idx ON component_governance (component_id);
