package governance_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"nimbus/app/domain/governance"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/objstore/s3test"
	"nimbus/app/kernel/problem"
	"nimbus/db"
	"nimbus/db/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(s3test.Around(m)) }

const machineInputs = `{"type": "object", "required": ["name"], "properties": {
	"name":  {"type": "string", "pattern": "^[a-z][a-z0-9-]*$"},
	"cores": {"type": "integer", "minimum": 1, "maximum": 64, "default": 2},
	"image": {"type": "string", "default": "debian-12"}}}`

// fixture is two tenants, an environment in the first, and a published provider-level
// component; the principals act in the first tenant unless named otherwise.
type fixture struct {
	pool                     *pgxpool.Pool
	svc                      *governance.Service
	tenant, other, env, comp uuid.UUID
	admin, tenantAdmin, user access.Principal
	otherAdmin               access.Principal
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	fx := &fixture{pool: dbtest.Pool(t)}
	fx.svc = governance.NewService(fx.pool)
	err := fx.pool.QueryRow(context.Background(), `
		WITH t AS (INSERT INTO tenants (name) VALUES ('acme') RETURNING id),
		o AS (INSERT INTO tenants (name) VALUES ('other') RETURNING id),
		e AS (INSERT INTO environments (tenant_id, name) SELECT id, 'dev' FROM t RETURNING id),
		c AS (INSERT INTO components (provider_id, semantic_type_id, name, display_name, language, code, input_schema, output_schema, latest_version)
			SELECT p.id, s.id, 'machine', 'Machine', 'yaml', 'name: c', $1, '{}', 1
			FROM semantic_providers p, semantic_resource_types s WHERE p.name = 'simcloud' AND s.name = 'VirtualMachine' RETURNING id),
		v AS (INSERT INTO component_versions (component_id, version, language, code, input_schema, output_schema, resolver_bindings, changelog)
			SELECT id, 1, 'yaml', 'name: c', $1, '{}', '{}', 'first' FROM c RETURNING component_id)
		SELECT t.id, o.id, e.id, v.component_id FROM t, o, e, v`, machineInputs).Scan(&fx.tenant, &fx.other, &fx.env, &fx.comp)
	if err != nil {
		t.Fatal(err)
	}
	fx.admin = access.Principal{Email: "root@example.com", ProviderAdmin: true}
	fx.tenantAdmin = access.Principal{Email: "admin@acme.example", Roles: map[uuid.UUID]access.Role{fx.tenant: access.TenantAdmin}}
	fx.user = access.Principal{Email: "user@acme.example", Roles: map[uuid.UUID]access.Role{fx.tenant: access.User}}
	fx.otherAdmin = access.Principal{Email: "admin@other.example", Roles: map[uuid.UUID]access.Role{fx.other: access.TenantAdmin}}
	return fx
}

func yes() *bool           { b := true; return &b }
func no() *bool            { b := false; return &b }
func f(v float64) *float64 { return &v }
func n(v int) *int         { return &v }

// ceiling is the provider's rule the tests start from: cores at most 4, two images, two instances.
func (fx *fixture) ceiling(t *testing.T) {
	t.Helper()
	_, err := fx.svc.Set(context.Background(), fx.admin, fx.tenant, fx.comp, governance.Change{IsAllowed: yes(), MaxInstances: n(2),
		ParameterConstraints: map[string]governance.Constraint{
			"cores": {Maximum: f(4)},
			"image": {Allowed: []any{"debian-12", "ubuntu-24.04"}},
		}})
	if err != nil {
		t.Fatal(err)
	}
}

func (fx *fixture) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var c int
	if err := fx.pool.QueryRow(context.Background(), query, args...).Scan(&c); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestGovernanceSet_TenantAdminNarrowsButCannotWiden(t *testing.T) {
	fx := newFixture(t)
	ctx := context.Background()
	fx.ceiling(t)
	audits := fx.count(t, "SELECT count(*) FROM audit_events WHERE action = 'governance.set'")
	if audits != 1 {
		t.Fatalf("%d audit events for the provider's rule, want 1", audits)
	}

	wider := []governance.Change{
		{IsAllowed: yes(), ParameterConstraints: map[string]governance.Constraint{"cores": {Maximum: f(8)}}},
		{IsAllowed: yes(), ParameterConstraints: map[string]governance.Constraint{"image": {Allowed: []any{"centos-7"}}}},
		{IsAllowed: yes(), MaxInstances: n(3)},
		{IsAllowed: yes(), ParameterConstraints: map[string]governance.Constraint{"gpus": {Maximum: f(1)}}},
		{IsAllowed: yes(), ParameterConstraints: map[string]governance.Constraint{"cores": {Minimum: f(3), Maximum: f(2)}}},
	}
	for _, ch := range wider {
		_, err := fx.svc.Set(ctx, fx.tenantAdmin, fx.tenant, fx.comp, ch)
		var v *problem.ValidationError
		if !errors.As(err, &v) {
			t.Fatalf("%+v: got %v, want a refusal", ch, err)
		}
	}
	_, err := fx.svc.Set(ctx, fx.tenantAdmin, fx.tenant, fx.comp, governance.Change{IsAllowed: yes(),
		ParameterConstraints: map[string]governance.Constraint{"cores": {Maximum: f(8)}}})
	if msg := err.Error(); !strings.Contains(msg, "parameter_constraints.cores.maximum") || !strings.Contains(msg, "provider's maximum of 4") {
		t.Fatalf("the refusal does not name the parameter, the rule and the provider's value: %s", msg)
	}
	if got := fx.count(t, "SELECT count(*) FROM component_governance WHERE set_by = 'tenant'"); got != 0 {
		t.Fatalf("refused rules saved %d tenant rows", got)
	}
	if got := fx.count(t, "SELECT count(*) FROM audit_events WHERE action = 'governance.set'"); got != audits {
		t.Fatalf("refused rules were audited: %d events", got)
	}

	v, err := fx.svc.Set(ctx, fx.tenantAdmin, fx.tenant, fx.comp, governance.Change{IsAllowed: yes(), MaxInstances: n(1),
		ParameterConstraints: map[string]governance.Constraint{"cores": {Maximum: f(2)}, "image": {Allowed: []any{"debian-12"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if v.Tenant == nil || v.Provider == nil {
		t.Fatalf("after both saved: provider %v, tenant %v", v.Provider, v.Tenant)
	}
	e := v.Effective
	if m := e.Parameters["cores"].Maximum; m == nil || m.Value != 2 || m.SetBy != governance.Tenant {
		t.Fatalf("effective cores maximum %+v, want 2 set by the tenant", m)
	}
	if e.MaxInstances == nil || e.MaxInstances.Value != 1 || e.MaxInstances.SetBy != governance.Tenant {
		t.Fatalf("effective max instances %+v", e.MaxInstances)
	}
	var diff string
	if err := fx.pool.QueryRow(ctx, `SELECT diff::text FROM audit_events WHERE action = 'governance.set' AND tenant_id = $1
		ORDER BY id DESC LIMIT 1`, fx.tenant).Scan(&diff); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(diff, `"scope": "tenant"`) || !strings.Contains(diff, `"after"`) {
		t.Fatalf("the audit diff does not say what changed: %s", diff)
	}

	// The provider lowering its ceiling below the tenant's rule is its right; the tighter wins.
	_, err = fx.svc.Set(ctx, fx.admin, fx.tenant, fx.comp, governance.Change{IsAllowed: yes(),
		ParameterConstraints: map[string]governance.Constraint{"cores": {Maximum: f(1)}}})
	if err != nil {
		t.Fatal(err)
	}
	e, err = governance.Effective(ctx, db.Queries(fx.pool), fx.tenant, fx.comp)
	if err != nil {
		t.Fatal(err)
	}
	if m := e.Parameters["cores"].Maximum; m.Value != 1 || m.SetBy != governance.Provider {
		t.Fatalf("effective cores maximum %+v, want 1 set by the provider", m)
	}
}

func TestGovernanceSet_WhoMaySetWhich(t *testing.T) {
	fx := newFixture(t)
	ctx := context.Background()
	rule := governance.Change{IsAllowed: yes()}

	_, err := fx.svc.Set(ctx, fx.otherAdmin, fx.tenant, fx.comp, rule)
	if !errors.Is(err, problem.ErrNotFound) {
		t.Fatalf("another tenant's admin: %v, want not found", err)
	}
	_, err = fx.svc.Set(ctx, fx.user, fx.tenant, fx.comp, rule)
	if !errors.Is(err, problem.ErrForbidden) {
		t.Fatalf("a tenant user: %v, want forbidden", err)
	}
	_, err = fx.svc.Set(ctx, fx.tenantAdmin, fx.tenant, fx.comp, governance.Change{Scope: governance.Provider, IsAllowed: yes()})
	if !errors.Is(err, problem.ErrForbidden) {
		t.Fatalf("a tenant admin writing the provider's ceiling: %v, want forbidden", err)
	}
	_, err = fx.svc.Set(ctx, fx.tenantAdmin, fx.tenant, fx.comp, governance.Change{})
	if problem.FieldOf(err) != "is_allowed" {
		t.Fatalf("without is_allowed: %v", err)
	}
	_, err = fx.svc.Set(ctx, fx.admin, uuid.New(), fx.comp, rule)
	if !errors.Is(err, problem.ErrNotFound) {
		t.Fatalf("a tenant that does not exist: %v, want not found", err)
	}
	_, err = fx.svc.Set(ctx, fx.admin, fx.tenant, uuid.New(), rule)
	if !errors.Is(err, problem.ErrNotFound) {
		t.Fatalf("a component that does not exist: %v, want not found", err)
	}

	v, err := fx.svc.Set(ctx, fx.admin, fx.tenant, fx.comp, governance.Change{Scope: governance.Tenant, IsAllowed: no()})
	if err != nil {
		t.Fatal(err)
	}
	if v.Provider != nil || v.Tenant == nil || v.Effective.DeniedBy != governance.Tenant {
		t.Fatalf("a provider admin writing the tenant's rule by name: %+v", v)
	}
}

func TestGovernanceCheck_ReadsTheStoredRules(t *testing.T) {
	fx := newFixture(t)
	ctx := context.Background()
	fx.ceiling(t)
	q := db.Queries(fx.pool)

	err := governance.Check(ctx, q, fx.tenant, fx.comp, map[string]any{"name": "web", "cores": float64(8), "image": "debian-12"})
	var v *problem.ValidationError
	if !errors.As(err, &v) || len(v.Fields) != 1 {
		t.Fatalf("got %v, want one refusal", err)
	}
	if got := v.Fields[0]; got.Field != "parameters.cores" || got.Rule != "maximum" ||
		got.Message != "8 is above the maximum of 4 set by the provider for this tenant" {
		t.Fatalf("refusal %+v", got)
	}
	if err := governance.Check(ctx, q, fx.tenant, fx.comp, map[string]any{"name": "web", "cores": float64(4)}); err != nil {
		t.Fatalf("allowed parameters refused: %v", err)
	}
	if err := governance.Check(ctx, q, fx.other, fx.comp, map[string]any{"cores": float64(64)}); err != nil {
		t.Fatalf("another tenant, without rules, refused: %v", err)
	}

	_, err = fx.svc.Set(ctx, fx.admin, fx.tenant, fx.comp, governance.Change{IsAllowed: no()})
	if err != nil {
		t.Fatal(err)
	}
	err = governance.Check(ctx, q, fx.tenant, fx.comp, map[string]any{"cores": float64(1)})
	var d *problem.Denied
	if !errors.As(err, &d) || !strings.Contains(d.Message, "provider") {
		t.Fatalf("a denied component: %v", err)
	}
}

// TestCheckInstances_ConcurrentDeploysNeverExceedTheLimit races twenty deploys, each checking
// and inserting in its own transaction, against a limit of two.
func TestGovernanceCheckInstances_ConcurrentDeploysNeverExceedTheLimit(t *testing.T) {
	fx := newFixture(t)
	ctx := context.Background()
	fx.ceiling(t) // max_instances 2

	const racers = 20
	var (
		wg              sync.WaitGroup
		mu              sync.Mutex
		refused, failed []error
	)
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := pgx.BeginFunc(ctx, fx.pool, func(tx pgx.Tx) error {
				q := db.Queries(tx)
				if err := governance.CheckInstances(ctx, q, fx.tenant, fx.comp); err != nil {
					return err
				}
				_, err := tx.Exec(ctx, `INSERT INTO deployed_components (tenant_id, environment_id, component_id, version, name, project, stack, status)
					VALUES ($1, $2, $3, 1, $4, 'machine', $4, 'deployed')`, fx.tenant, fx.env, fx.comp, fmt.Sprintf("web-%d", i))
				return err
			})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case problem.FieldOf(err) == "max_instances":
				refused = append(refused, err)
			case err != nil:
				failed = append(failed, err)
			}
		}()
	}
	wg.Wait()
	if len(failed) > 0 {
		t.Fatalf("deploys failed other than by the limit: %v", failed)
	}
	if got := fx.count(t, "SELECT count(*) FROM deployed_components WHERE tenant_id = $1 AND component_id = $2", fx.tenant, fx.comp); got != 2 {
		t.Fatalf("%d deployments after the race, want exactly 2", got)
	}
	if len(refused) != racers-2 {
		t.Fatalf("%d refused, want %d", len(refused), racers-2)
	}
	if msg := refused[0].Error(); !strings.Contains(msg, "at most 2") || !strings.Contains(msg, "set by the provider") {
		t.Fatalf("the refusal does not name the limit and who set it: %s", msg)
	}

	// A destroyed deployment frees its place.
	if _, err := fx.pool.Exec(ctx, "UPDATE deployed_components SET status = 'destroyed' WHERE name = (SELECT min(name) FROM deployed_components)"); err != nil {
		t.Fatal(err)
	}
	left, limited, err := governance.Remaining(ctx, db.Queries(fx.pool), fx.tenant, fx.comp)
	if err != nil || !limited || left != 1 {
		t.Fatalf("remaining %d (limited %v, %v), want 1", left, limited, err)
	}
	err = pgx.BeginFunc(ctx, fx.pool, func(tx pgx.Tx) error {
		return governance.CheckInstances(ctx, db.Queries(tx), fx.tenant, fx.comp)
	})
	if err != nil {
		t.Fatalf("after a destroy: %v", err)
	}
}

func TestGovernanceDenied_OnlyWhereEveryTenantDenies(t *testing.T) {
	fx := newFixture(t)
	ctx := context.Background()
	q := db.Queries(fx.pool)
	denied := func(tenants ...uuid.UUID) bool {
		t.Helper()
		m, err := governance.Denied(ctx, q, tenants)
		if err != nil {
			t.Fatal(err)
		}
		return m[fx.comp]
	}
	if denied(fx.tenant) || denied() {
		t.Fatal("denied before any rule")
	}
	// The tenant's own denial hides it as well as the provider's.
	if _, err := fx.svc.Set(ctx, fx.tenantAdmin, fx.tenant, fx.comp, governance.Change{IsAllowed: no()}); err != nil {
		t.Fatal(err)
	}
	if !denied(fx.tenant) || !denied(fx.tenant, fx.tenant) {
		t.Fatal("not denied in the tenant that denies it")
	}
	if denied(fx.tenant, fx.other) {
		t.Fatal("denied although the other tenant allows it")
	}
	if _, err := fx.svc.Set(ctx, fx.admin, fx.other, fx.comp, governance.Change{IsAllowed: no()}); err != nil {
		t.Fatal(err)
	}
	if !denied(fx.tenant, fx.other) {
		t.Fatal("not denied although both tenants deny it")
	}
}

func TestGovernanceList_EveryPublishedComponentWithItsEffectiveRule(t *testing.T) {
	fx := newFixture(t)
	ctx := context.Background()
	fx.ceiling(t)
	o, err := fx.svc.List(ctx, fx.user, fx.tenant)
	if err != nil {
		t.Fatal(err)
	}
	if o.TenantName != "acme" || len(o.Components) != 1 {
		t.Fatalf("overview %+v", o)
	}
	s := o.Components[0]
	if !s.Provider || s.Tenant || s.Effective.MaxInstances == nil || s.Effective.MaxInstances.Value != 2 {
		t.Fatalf("summary %+v", s)
	}
	if _, err := fx.svc.List(ctx, fx.otherAdmin, fx.tenant); !errors.Is(err, problem.ErrNotFound) {
		t.Fatalf("another tenant's admin: %v", err)
	}
}

func TestGovernanceClear_RemovesOneScopeAndAuditsIt(t *testing.T) {
	fx := newFixture(t)
	ctx := context.Background()
	four := 4.0
	if _, err := fx.svc.Set(ctx, fx.admin, fx.tenant, fx.comp, governance.Change{Scope: governance.Provider, IsAllowed: yes(),
		ParameterConstraints: map[string]governance.Constraint{"cores": {Maximum: &four}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := fx.svc.Set(ctx, fx.tenantAdmin, fx.tenant, fx.comp, governance.Change{IsAllowed: no()}); err != nil {
		t.Fatal(err)
	}
	if _, err := fx.svc.Clear(ctx, fx.tenantAdmin, fx.tenant, fx.comp, "everyone"); problem.FieldOf(err) != "scope" {
		t.Fatalf("an unknown scope: %v", err)
	}
	v, err := fx.svc.Clear(ctx, fx.tenantAdmin, fx.tenant, fx.comp, governance.Tenant)
	if err != nil {
		t.Fatal(err)
	}
	if v.Tenant != nil || v.Provider == nil || !v.Effective.IsAllowed || v.Effective.Parameters["cores"].Maximum == nil {
		t.Fatalf("after clearing the tenant's rule: %+v", v)
	}
	// Clearing again is no change, and no second audit event.
	if _, err := fx.svc.Clear(ctx, fx.tenantAdmin, fx.tenant, fx.comp, governance.Tenant); err != nil {
		t.Fatal(err)
	}
	var events int
	if err := fx.pool.QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE action = 'governance.clear' AND diff->>'scope' = 'tenant'`).Scan(&events); err != nil {
		t.Fatal(err)
	}
	if events != 1 {
		t.Fatalf("%d audit events for one removal", events)
	}
}
