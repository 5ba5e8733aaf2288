// Package seed fills an empty Nimbus database with a large, plausible history: tenants with
// their users and environments, components with versions, deployments with operations (steps,
// resources, log lines, some waiting for approval) and audit events. The benchmarks and the
// query plan tests read it, and so can a person trying Nimbus at scale.
//
// Rows are made by the database itself (INSERT ... SELECT over generate_series) with keys
// derived from their ordinal, so every table refers to the others by formula and a hundred
// thousand rows take a second, not a minute.
package seed

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Size is how much to make. Components are a tenth provider-level, the rest spread over the
// tenants; deployments spread over the tenants, each with Operations/Deployments operations.
type Size struct {
	Tenants     int
	Components  int
	Deployments int
	Operations  int
	AuditEvents int
	// Items are configuration items of the deployments' resources, spread over them in turn.
	Items int
}

// Full is the size of a large installation.
var Full = Size{Tenants: 100, Components: 10_000, Deployments: 10_000, Operations: 50_000, AuditEvents: 100_000, Items: 1_000_000}

// Small is a tenth of Full: large enough that the planner prefers an index where one serves.
var Small = Size{Tenants: 20, Components: 1_000, Deployments: 2_000, Operations: 10_000, AuditEvents: 10_000}

func (s Size) check() error {
	switch {
	case s.Tenants < 1:
		return errors.New("seed: at least one tenant")
	case s.Components < 10 || s.Components%10 != 0 || (s.Components-s.Components/10) < s.Tenants:
		return errors.New("seed: components must be a multiple of 10, nine tenths of them at least one per tenant")
	case s.Deployments < s.Tenants || s.Operations < s.Deployments:
		return errors.New("seed: at least one deployment per tenant and one operation per deployment")
	}
	return nil
}

// Provider is the email of the seeded provider admin. Each tenant n (from 1) has a tenant
// admin AdminEmail(n) and a user UserEmail(n); all share the password hash given to Run.
const Provider = "provider@seed.example"

// AdminEmail is the email of tenant n's seeded tenant admin.
func AdminEmail(n int) string { return fmt.Sprintf("admin-%d@seed.example", n) }

// UserEmail is the email of tenant n's seeded user.
func UserEmail(n int) string { return fmt.Sprintf("user-%d@seed.example", n) }

// Run seeds pool in one transaction; passwordHash is what every seeded user signs in with. The
// seeded names and emails are its own (Tenant 001, @seed.example): the database may hold
// others, but not an earlier seed.
func Run(ctx context.Context, pool *pgxpool.Pool, size Size, passwordHash string) error {
	if err := size.check(); err != nil {
		return err
	}
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		args := pgx.NamedArgs{
			"tenants": size.Tenants, "components": size.Components, "provider_components": size.Components / 10,
			"deployments": size.Deployments, "operations": size.Operations, "audit_events": size.AuditEvents, "items": size.Items,
			"password_hash": passwordHash, "provider_email": Provider,
		}
		for _, s := range statements {
			var restore []string
			if table, ok := bulk[s.what]; ok {
				var err error
				if restore, err = setAside(ctx, tx, table); err != nil {
					return fmt.Errorf("%s: %w", s.what, err)
				}
			}
			if _, err := tx.Exec(ctx, s.sql, args); err != nil {
				return fmt.Errorf("%s: %w", s.what, err)
			}
			for _, r := range restore {
				if _, err := tx.Exec(ctx, r); err != nil {
					return fmt.Errorf("%s: %w", s.what, err)
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	// Fresh statistics, so the first queries are planned for the tables as they now are; and
	// the tables vacuumed, as a running installation's are, so that what is measured next does
	// not run beside autovacuum's first pass over a few hundred thousand new rows.
	if _, err := pool.Exec(ctx, "VACUUM (ANALYZE)"); err != nil {
		return fmt.Errorf("seed: vacuum: %w", err)
	}
	return nil
}

// bulk names the tables statements fill with many rows, by the statement: their indexes and
// foreign keys are set aside until the rows are in.
var bulk = map[string]string{"inventory items": "inventory_items"}

// setAside drops table's foreign keys and its indexes, but those a constraint holds (its
// primary key, which other tables' keys refer to), and returns the statements that make them
// again. A million rows are written several times faster without them (a row's keys are
// checked one by one, an index grows row by row, a trigram index most slowly), and each index
// is built in one pass after.
func setAside(ctx context.Context, tx pgx.Tx, table string) ([]string, error) {
	// Index builds sort in memory, in this transaction alone.
	if _, err := tx.Exec(ctx, "SET LOCAL maintenance_work_mem = '256MB'"); err != nil {
		return nil, err
	}
	rows, err := tx.Query(ctx, `
SELECT format('ALTER TABLE %s DROP CONSTRAINT %I', conrelid::regclass, conname),
    format('ALTER TABLE %s ADD CONSTRAINT %I %s', conrelid::regclass, conname, pg_get_constraintdef(oid))
FROM pg_constraint WHERE conrelid = $1::regclass AND contype = 'f'
UNION ALL
SELECT format('DROP INDEX %s', indexrelid::regclass), pg_get_indexdef(indexrelid)
FROM pg_index WHERE indrelid = $1::regclass AND NOT EXISTS (SELECT FROM pg_constraint WHERE conindid = indexrelid)`, table)
	if err != nil {
		return nil, err
	}
	type change struct{ Drop, Restore string }
	changes, err := pgx.CollectRows(rows, pgx.RowToStructByPos[change])
	if err != nil {
		return nil, err
	}
	var restore []string
	for _, c := range changes {
		if _, err := tx.Exec(ctx, c.Drop); err != nil {
			return nil, err
		}
		restore = append(restore, c.Restore)
	}
	return restore, nil
}

// The keys: tenant n is id('t', n), its environments id('e', n*10+k), component j id('c', j),
// deployment d id('d', d), operation o id('o', o), users id('ua'|'uu', n) and id('up', 0).
// Operation o belongs to deployment (o-1) % deployments + 1 and is its round (o-1) / deployments;
// operations are a minute apart, the newest a minute ago.
var statements = []struct{ what, sql string }{
	{"key function", `
CREATE FUNCTION pg_temp.id(kind text, n bigint) RETURNS uuid IMMUTABLE LANGUAGE sql AS
$$ SELECT md5('nimbus-seed-' || kind || '-' || n)::uuid $$`},
	{"time function", `
CREATE FUNCTION pg_temp.op_at(o bigint, total bigint) RETURNS timestamptz STABLE LANGUAGE sql AS
$$ SELECT now() - make_interval(mins => (total - o + 1)::int) $$`},

	{"tenants", `
INSERT INTO tenants (id, name, created_at, updated_at)
SELECT pg_temp.id('t', n), format('Tenant %s', lpad(n::text, 3, '0')), now() - interval '400 days', now() - interval '400 days'
FROM generate_series(1, @tenants::int) n`},

	{"users", `
INSERT INTO users (id, email, password_hash, is_provider_admin)
SELECT pg_temp.id('up', 0), @provider_email::text, @password_hash::text, true
UNION ALL
SELECT pg_temp.id('ua', n), format('admin-%s@seed.example', n), @password_hash::text, false FROM generate_series(1, @tenants::int) n
UNION ALL
SELECT pg_temp.id('uu', n), format('user-%s@seed.example', n), @password_hash::text, false FROM generate_series(1, @tenants::int) n`},

	{"memberships", `
INSERT INTO memberships (tenant_id, user_id, role)
SELECT pg_temp.id('t', n), pg_temp.id('ua', n), 'tenant_admin' FROM generate_series(1, @tenants::int) n
UNION ALL
SELECT pg_temp.id('t', n), pg_temp.id('uu', n), 'user' FROM generate_series(1, @tenants::int) n`},

	{"environments", `
INSERT INTO environments (id, tenant_id, name, created_by, created_at)
SELECT pg_temp.id('e', n * 10 + k), pg_temp.id('t', n), (ARRAY['dev', 'test', 'prod'])[k + 1], pg_temp.id('ua', n),
    now() - interval '365 days'
FROM generate_series(1, @tenants::int) n, generate_series(0, 2) k`},

	// Components 1..provider_components are provider-level; component j after them belongs to
	// tenant (j - 1) % tenants + 1.
	{"components", `
INSERT INTO components (id, tenant_id, provider_id, semantic_type_id, name, display_name, description, language, code,
    input_schema, output_schema, latest_version, created_by, created_at, updated_at)
SELECT pg_temp.id('c', j),
    CASE WHEN j > @provider_components::int THEN pg_temp.id('t', (j - 1) % @tenants::int + 1) END,
    p.id, t.id, format('machine-%s', lpad(j::text, 5, '0')), format('Machine %s', j),
    'A virtual machine with a disk and an address', 'yaml',
    E'resources:\n  machine:\n    type: simcloud:index:Machine\n    properties:\n      cores: ${cores}\n',
    '{"type": "object", "properties": {"cores": {"type": "integer", "minimum": 1, "default": 1}}}',
    '{"type": "object", "properties": {"address": {"type": "string"}}}',
    2, CASE WHEN j > @provider_components::int THEN pg_temp.id('ua', (j - 1) % @tenants::int + 1) ELSE pg_temp.id('up', 0) END,
    now() - interval '380 days' + make_interval(secs => j), now() - interval '370 days'
FROM generate_series(1, @components::int) j
JOIN semantic_providers p ON p.name = 'simcloud'
JOIN semantic_resource_types t ON t.name = 'VirtualMachine'`},

	{"component versions", `
INSERT INTO component_versions (component_id, version, language, code, input_schema, output_schema, resolver_bindings,
    changelog, published_by, published_at, created_at)
SELECT c.id, v, c.language, c.code, c.input_schema, c.output_schema, c.resolver_bindings,
    CASE v WHEN 1 THEN 'First version' ELSE 'More cores allowed' END, c.created_by,
    c.created_at + make_interval(days => v), c.created_at + make_interval(days => v)
FROM components c, generate_series(1, 2) v
WHERE c.id IN (SELECT pg_temp.id('c', j) FROM generate_series(1, @components::int) j)`},

	{"component checks", `
INSERT INTO component_checks (component_id, status, code, input_schema, output, requested_by, created_at, started_at, finished_at)
SELECT c.id, 'succeeded', c.code, c.input_schema, 'Previewing update', c.created_by, c.updated_at, c.updated_at, c.updated_at + interval '9 seconds'
FROM components c
WHERE c.id IN (SELECT pg_temp.id('c', j) FROM generate_series(1, @components::int) j)`},

	// Deployment d belongs to tenant (d - 1) % tenants + 1; odd ones deploy one of the tenant's
	// own components, even ones a provider-level one. Its first operation is operation d.
	{"deployments", `
WITH d AS (
    SELECT d, (d - 1) % @tenants::int + 1 AS tenant, ((d - 1) / @tenants::int) AS round FROM generate_series(1, @deployments::int) d
)
INSERT INTO deployed_components (id, tenant_id, environment_id, component_id, version, name, parameters, outputs, status,
    project, stack, state_location, created_by, created_at, updated_at)
SELECT pg_temp.id('d', d.d), pg_temp.id('t', d.tenant), pg_temp.id('e', d.tenant * 10 + d.round % 3),
    CASE WHEN d.d % 2 = 0 THEN pg_temp.id('c', d.round % @provider_components::int + 1)
        ELSE pg_temp.id('c', @provider_components::int + d.tenant
            + @tenants::int * (d.round % ((@components::int - @provider_components::int) / @tenants::int))) END,
    1 + d.d % 2, format('vm-%s', lpad(d.d::text, 5, '0')), '{"cores": 2}',
    CASE WHEN d.d % 10 = 3 THEN '{}' ELSE jsonb_build_object('address', format('10.%s.%s.%s', d.tenant, d.d / 250 % 250, d.d % 250)) END,
    CASE WHEN d.d % 10 = 3 THEN 'failed' WHEN d.d % 20 = 7 THEN 'destroyed' ELSE 'deployed' END,
    'nimbus-' || d.tenant, format('vm-%s', d.d), 'file://state', pg_temp.id('uu', d.tenant),
    pg_temp.op_at(d.d, @operations::int) - interval '30 seconds', pg_temp.op_at(d.d, @operations::int)
FROM d`},

	// The newest round leaves some operations unfinished: at most one running or waiting for
	// approval per deployment, as the schema insists.
	{"operations", `
WITH o AS (
    SELECT o, (o - 1) % @deployments::int + 1 AS d, (o - 1) / @deployments::int AS round,
        o > @operations::int - @deployments::int AS newest, pg_temp.op_at(o, @operations::int) AS at
    FROM generate_series(1, @operations::int) o
), s AS (
    SELECT o.*, CASE
        WHEN newest AND d % 100 = 0 THEN 'running'
        WHEN newest AND d % 100 = 50 THEN 'awaiting_approval'
        WHEN newest AND d % 100 = 25 THEN 'queued'
        WHEN o % 97 = 0 THEN 'failed'
        ELSE 'succeeded' END AS status
    FROM o
)
INSERT INTO operations (id, deployment_id, kind, status, requested_by, parameters, error, outcome, failed_step, exit_code, changes,
    heartbeat_at, started_at, finished_at, created_at, updated_at)
SELECT pg_temp.id('o', s.o), pg_temp.id('d', s.d),
    CASE WHEN s.round = 0 THEN 'deploy' ELSE (ARRAY['update', 'refresh', 'upgrade', 'update'])[s.round % 4 + 1] END,
    s.status, pg_temp.id('uu', (s.d - 1) % @tenants::int + 1), '{"cores": 2}',
    CASE s.status WHEN 'failed' THEN 'simcloud: the machine did not start in time' ELSE '' END,
    CASE WHEN s.status IN ('succeeded', 'failed') THEN s.status ELSE '' END,
    CASE s.status WHEN 'failed' THEN 'up' ELSE '' END,
    CASE s.status WHEN 'failed' THEN 255 WHEN 'succeeded' THEN 0 END,
    '{"create": 1}', CASE WHEN s.status = 'running' THEN now() END,
    CASE WHEN s.status <> 'queued' THEN s.at + interval '1 second' END,
    CASE WHEN s.status IN ('succeeded', 'failed') THEN s.at + interval '20 seconds' END,
    s.at, s.at
FROM s`},

	{"operation steps", `
INSERT INTO operation_steps (operation_id, position, name, status, result, error, attempts, started_at, finished_at, created_at, updated_at)
SELECT o.id, st.position, st.name,
    CASE WHEN o.status = 'failed' AND st.name = 'up' THEN 'failed'
        WHEN o.status IN ('succeeded', 'failed') THEN 'done'
        WHEN o.status IN ('running', 'awaiting_approval') AND st.name = 'resolve' THEN 'done'
        ELSE 'pending' END,
    '{}', CASE WHEN o.status = 'failed' AND st.name = 'up' THEN o.error ELSE '' END, 1,
    o.started_at, o.finished_at, o.created_at, o.created_at
FROM operations o, (VALUES (0, 'resolve'), (1, 'preview'), (2, 'up')) st (position, name)
WHERE o.id IN (SELECT pg_temp.id('o', n) FROM generate_series(1, @operations::int) n)`},

	{"operation resources", `
INSERT INTO operation_resources (operation_id, urn, type, name, op, status, changes, started_at, finished_at, updated_at)
SELECT o.id, format('urn:pulumi:%s::%s::simcloud:index:Machine::machine', d.stack, d.project), 'simcloud:index:Machine',
    'machine', CASE o.kind WHEN 'deploy' THEN 'create' WHEN 'refresh' THEN 'refresh' ELSE 'update' END,
    CASE o.status WHEN 'succeeded' THEN 'done' WHEN 'failed' THEN 'failed' ELSE 'planned' END,
    '[{"path": "cores", "kind": "update", "old": 1, "new": 2}]', o.started_at, o.finished_at, o.created_at
FROM operations o JOIN deployed_components d ON d.id = o.deployment_id
WHERE o.id IN (SELECT pg_temp.id('o', n) FROM generate_series(1, @operations::int) n)`},

	{"operation logs", `
INSERT INTO operation_logs (operation_id, created_at, line)
SELECT o.id, o.created_at + make_interval(secs => l), l.line
FROM operations o, (VALUES (1, 'Updating (nimbus):'), (2, ' +  simcloud:index:Machine machine creating'),
    (3, ' +  simcloud:index:Machine machine created'), (4, 'Resources: 1 created')) l (l, line)
WHERE o.id IN (SELECT pg_temp.id('o', n) FROM generate_series(1, @operations::int) n)
ORDER BY o.created_at, l.l`},

	// Every fiftieth operation of the older rounds was approved; those waiting now wait for it.
	{"approval requests", `
INSERT INTO approval_requests (operation_id, tenant_id, requested_by, approvals_required, approver_role, status,
    previewed_at, expires_at, decided_at, created_at)
SELECT o.id, d.tenant_id, o.requested_by, 1, 'tenant_admin',
    CASE WHEN o.status = 'awaiting_approval' THEN 'pending' ELSE 'approved' END,
    o.created_at, CASE WHEN o.status = 'awaiting_approval' THEN now() + interval '1 day' ELSE o.created_at + interval '1 day' END,
    CASE WHEN o.status <> 'awaiting_approval' THEN o.created_at + interval '5 minutes' END, o.created_at
FROM generate_series(1, @operations::int) n
JOIN operations o ON o.id = pg_temp.id('o', n)
JOIN deployed_components d ON d.id = o.deployment_id
WHERE o.status = 'awaiting_approval' OR (n % 50 = 0 AND o.status = 'succeeded')`},

	{"approval decisions", `
INSERT INTO approval_decisions (request_id, user_id, decision, comment, created_at)
SELECT r.id, pg_temp.id('up', 0), 'approve', 'Looks right', r.decided_at
FROM approval_requests r WHERE r.status = 'approved'`},

	// Audit events are twenty seconds apart, the newest twenty seconds ago, over the tenants in turn.
	{"audit events", `
INSERT INTO audit_events (created_at, actor_id, actor_email, tenant_id, action, target_type, target_id, diff)
SELECT now() - make_interval(secs => (@audit_events::int - a + 1) * 20), pg_temp.id('ua', t), format('admin-%s@seed.example', t),
    pg_temp.id('t', t), (ARRAY['deployment.create', 'deployment.update', 'component.publish', 'governance.set', 'environment.create'])[a % 5 + 1],
    'deployment', pg_temp.id('d', (a - 1) % @deployments::int + 1)::text, '{"cores": {"old": 1, "new": 2}}'
FROM generate_series(1, @audit_events::int) a, LATERAL (SELECT (a - 1) % @tenants::int + 1 AS t) x`},

	// Item i is a machine of deployment (i - 1) % deployments + 1, at address 10.x.y.z spelt from
	// i (each its own), named srv-i, made a second apart, the newest a second ago; a tenth of
	// them decommissioned. The deployments are found once each by their ordinal and joined to
	// the items by it (a key made per item cost more than writing the item); the items are
	// written in the order they were made, as an installation's are, for the plans to meet
	// them where they would.
	{"inventory items", `
INSERT INTO inventory_items (urn, type, provider_id, name, addresses, outputs, refs, search, tenant_id, environment_id,
    component_id, component_version, deployment_id, status, status_at, created_at, updated_at)
SELECT format('urn:pulumi:%s::nimbus::simcloud:index:Machine::m%s', d.stack, i), 'simcloud:index:Machine', format('m-%s', i),
    format('srv-%s', i), ARRAY[x.address], jsonb_build_object('ip', x.address, 'networkId', d.network),
    jsonb_build_object('networkId', d.network), format('srv-%s m-%s %s', i, i, x.address),
    d.tenant_id, d.environment_id, d.component_id, d.version, d.id,
    CASE WHEN i % 10 = 0 THEN 'decommissioned' ELSE 'active' END, x.at, x.at, x.at
FROM (SELECT n, d.*, format('n-%s', d.tenant_id) AS network
    FROM generate_series(1, @deployments::int) n JOIN deployed_components d ON d.id = pg_temp.id('d', n)) d
JOIN generate_series(1, @items::int) i ON d.n = (i - 1) % @deployments::int + 1
CROSS JOIN LATERAL (SELECT format('10.%s.%s.%s', i / 65536 % 256, i / 256 % 256, i % 256) AS address,
    now() - make_interval(secs => @items::int - i + 1) AS at) x
ORDER BY i`},
}
