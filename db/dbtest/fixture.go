package dbtest

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Deployment is what a test of deploy-time code needs to hang its rows from.
type Deployment struct {
	TenantID, EnvironmentID, ComponentID, DeploymentID, OperationID uuid.UUID
}

// NewDeployment makes a tenant, an environment, a published simcloud component, a deployment of
// it and a deploy operation, with as little as their tables require.
func NewDeployment(tb testing.TB, pool *pgxpool.Pool) Deployment {
	tb.Helper()
	var d Deployment
	err := pool.QueryRow(context.Background(), `
		WITH t AS (INSERT INTO tenants (name) VALUES ('t') RETURNING id),
		e AS (INSERT INTO environments (tenant_id, name) SELECT id, 'dev' FROM t RETURNING id, tenant_id),
		c AS (INSERT INTO components (provider_id, semantic_type_id, name, display_name, language, code, input_schema, output_schema, latest_version)
			SELECT p.id, s.id, 'c-' || gen_random_uuid(), 'c', 'yaml', 'name: c', '{}', '{}', 1
			FROM semantic_providers p, semantic_resource_types s WHERE p.name = 'simcloud' AND s.name = 'VirtualMachine' RETURNING id),
		v AS (INSERT INTO component_versions (component_id, version, language, code, input_schema, output_schema, resolver_bindings, changelog)
			SELECT id, 1, 'yaml', 'name: c', '{}', '{}', '{}', 'first' FROM c RETURNING component_id),
		d AS (INSERT INTO deployed_components (tenant_id, environment_id, component_id, version, name, project, stack)
			SELECT e.tenant_id, e.id, v.component_id, 1, 'web', 'c', 'd-1' FROM e, v RETURNING id, tenant_id, environment_id, component_id),
		o AS (INSERT INTO operations (deployment_id, kind) SELECT id, 'deploy' FROM d RETURNING id)
		SELECT d.tenant_id, d.environment_id, d.component_id, d.id, o.id FROM d, o`).
		Scan(&d.TenantID, &d.EnvironmentID, &d.ComponentID, &d.DeploymentID, &d.OperationID)
	if err != nil {
		tb.Fatalf("deployment fixture: %v", err)
	}
	return d
}
