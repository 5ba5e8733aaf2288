package seed_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/db/dbtest"
	"nimbus/db/seed"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// largeRows is how many rows make a table large: a plan must reach a large table's rows through
// an index. Tables the size of a few pages of a list may be read whole where that is cheaper.
const largeRows = 1500

// sortLimit is the most rows a plan may sort: a tenant's share of the seeded history, far less
// than a table.
const sortLimit = 1000

// choices is how many environments or components a filter of the deployments list offers at once.
const choices = 25

// planSize is big enough that the planner's choices are those of a large installation: the
// operations outnumber a page of anything that joins them many times over.
var planSize = seed.Size{Tenants: 40, Components: 8_000, Deployments: 4_000, Operations: 40_000, AuditEvents: 20_000, Items: 40_000}

// TestHotQueries_ReadLargeTablesThroughIndexes seeds a large installation's history and checks
// the plans of the queries behind the busiest pages, for a provider admin (every tenant) and a
// tenant admin (one), on their first page and a later one: none scans a large table whole or
// sorts more than a tenant's share of it.
func TestHotQueries_ReadLargeTablesThroughIndexes(t *testing.T) {
	pool := dbtest.Pool(t)
	ctx := context.Background()
	if err := seed.Run(ctx, pool, planSize, "no password"); err != nil {
		t.Fatal(err)
	}
	// An installation's tables are vacuumed as they fill, so the planner knows which pages hold
	// only rows every transaction sees: an index then answers a count alone.
	if _, err := pool.Exec(ctx, "VACUUM"); err != nil {
		t.Fatal(err)
	}
	for table, want := range map[string]int{"tenants": planSize.Tenants + 1, "components": planSize.Components,
		"deployed_components": planSize.Deployments, "operations": planSize.Operations, "audit_events": planSize.AuditEvents,
		"inventory_items": planSize.Items} {
		var n int
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != want {
			t.Errorf("%s: %d rows, want %d", table, n, want)
		}
	}
	large := map[string]bool{}
	rows, err := pool.Query(ctx, "SELECT relname FROM pg_class WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace AND reltuples > $1", largeRows)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		large[n] = true
	}
	var tenant, user uuid.UUID
	if err := pool.QueryRow(ctx, `SELECT t.id, u.id FROM tenants t, users u WHERE t.name = 'Tenant 001' AND u.email = $1`,
		seed.AdminEmail(1)).Scan(&tenant, &user); err != nil {
		t.Fatal(err)
	}
	// A cursor some way into the history.
	later := time.Now().Add(-24 * time.Hour)
	laterID := uuid.NullUUID{UUID: uuid.Max, Valid: true}
	one := []uuid.UUID{tenant}
	// The statuses the service leaves out of a listing by default.
	hidden := []string{"ignored"}
	// The ids of a page a search found: a page's worth of items.
	found := make([]uuid.UUID, 51)
	for i := range found {
		found[i] = uuid.New()
	}
	ex := &explainer{pool: pool}
	q := db.Queries(ex)
	for _, c := range []struct {
		name string
		run  func()
	}{
		{"operations, all tenants", func() {
			q.ListOperations(ctx, dbgen.ListOperationsParams{AllTenants: true, TenantIds: []uuid.UUID{}, MaxRows: 200})
		}},
		{"operations, all tenants, later page", func() {
			q.ListOperations(ctx, dbgen.ListOperationsParams{AllTenants: true, TenantIds: []uuid.UUID{}, Before: &later, BeforeID: laterID, MaxRows: 200})
		}},
		{"operations, one tenant", func() { q.ListOperations(ctx, dbgen.ListOperationsParams{TenantIds: one, MaxRows: 200}) }},
		{"operations, one tenant, later page", func() {
			q.ListOperations(ctx, dbgen.ListOperationsParams{TenantIds: one, Before: &later, BeforeID: laterID, MaxRows: 200})
		}},
		{"deployments, all tenants", func() {
			q.ListDeployments(ctx, dbgen.ListDeploymentsParams{AllTenants: true, TenantIds: []uuid.UUID{}, MaxRows: 200})
		}},
		{"deployments, all tenants, later page", func() {
			q.ListDeployments(ctx, dbgen.ListDeploymentsParams{AllTenants: true, TenantIds: []uuid.UUID{}, Before: &later, BeforeID: laterID, MaxRows: 200})
		}},
		{"deployments, one tenant", func() { q.ListDeployments(ctx, dbgen.ListDeploymentsParams{TenantIds: one, MaxRows: 200}) }},
		{"environments to filter by, all tenants", func() {
			q.DeploymentEnvironmentChoices(ctx, dbgen.DeploymentEnvironmentChoicesParams{AllTenants: true, TenantIds: []uuid.UUID{}, MaxRows: choices})
		}},
		{"environments to filter by, one tenant", func() {
			q.DeploymentEnvironmentChoices(ctx, dbgen.DeploymentEnvironmentChoicesParams{TenantIds: one, MaxRows: choices})
		}},
		{"components to filter by, all tenants", func() {
			q.DeploymentComponentChoices(ctx, dbgen.DeploymentComponentChoicesParams{AllTenants: true, TenantIds: []uuid.UUID{}, MaxRows: choices})
		}},
		{"components to filter by, all tenants, one chosen", func() {
			q.DeploymentComponentChoices(ctx, dbgen.DeploymentComponentChoicesParams{AllTenants: true, TenantIds: []uuid.UUID{},
				Chosen: uuid.NullUUID{UUID: uuid.Max, Valid: true}, MaxRows: choices})
		}},
		{"components to filter by, one tenant", func() {
			q.DeploymentComponentChoices(ctx, dbgen.DeploymentComponentChoicesParams{TenantIds: one, MaxRows: choices})
		}},
		{"catalog, all tenants", func() {
			q.ListComponents(ctx, dbgen.ListComponentsParams{AllTenants: true, TenantIds: []uuid.UUID{}, EditableTenantIds: []uuid.UUID{},
				HiddenIds: []uuid.UUID{}, AllProviders: true, Providers: []string{}, DeploymentTenantIds: []uuid.UUID{}, MaxRows: 24})
		}},
		{"catalog, one tenant, a later page", func() {
			q.ListComponents(ctx, dbgen.ListComponentsParams{TenantIds: one, EditableTenantIds: one, HiddenIds: []uuid.UUID{},
				AllProviders: true, Providers: []string{}, DeploymentTenantIds: one, MaxRows: 24, Skip: 240})
		}},
		{"catalog count, all tenants", func() {
			q.CountComponents(ctx, dbgen.CountComponentsParams{AllTenants: true, TenantIds: []uuid.UUID{}, EditableTenantIds: []uuid.UUID{},
				HiddenIds: []uuid.UUID{}, AllProviders: true, Providers: []string{}})
		}},
		{"catalog count, one tenant", func() {
			q.CountComponents(ctx, dbgen.CountComponentsParams{TenantIds: one, EditableTenantIds: one, HiddenIds: []uuid.UUID{},
				AllProviders: true, Providers: []string{}})
		}},
		{"approvals, all tenants", func() {
			q.ListApprovalRequests(ctx, dbgen.ListApprovalRequestsParams{Viewer: user, AllTenants: true, TenantIds: []uuid.UUID{}, MaxRows: 200})
		}},
		{"approvals, one tenant", func() {
			q.ListApprovalRequests(ctx, dbgen.ListApprovalRequestsParams{Viewer: user, TenantIds: one, MaxRows: 200})
		}},
		{"what an approval request applies", func() { q.ApprovalRequestInputs(ctx, uuid.Max) }},
		{"approvals waiting", func() {
			q.CountApprovalsWaiting(ctx, dbgen.CountApprovalsWaitingParams{Viewer: user, UserTenants: one, AdminTenants: one})
		}},
		{"audit, all tenants", func() {
			q.ListAuditEvents(ctx, dbgen.ListAuditEventsParams{AllTenants: true, TenantIds: []uuid.UUID{}, MaxRows: 51})
		}},
		{"audit, one tenant", func() { q.ListAuditEvents(ctx, dbgen.ListAuditEventsParams{TenantIds: one, MaxRows: 51}) }},
		{"operations under way and waiting, all tenants", func() {
			q.ActiveOperations(ctx, dbgen.ActiveOperationsParams{AllTenants: true, TenantIds: []uuid.UUID{}})
		}},
		{"operations under way and waiting, one tenant", func() {
			q.ActiveOperations(ctx, dbgen.ActiveOperationsParams{TenantIds: one})
		}},
		{"recent failures, one tenant", func() {
			q.RecentFailures(ctx, dbgen.RecentFailuresParams{TenantIds: one, Since: time.Now().Add(-7 * 24 * time.Hour)})
		}},
		{"inventory, all tenants", func() {
			q.ListInventoryItems(ctx, dbgen.ListInventoryItemsParams{Hidden: hidden, AllTenants: true, TenantIds: []uuid.UUID{}, MaxRows: 51})
		}},
		{"inventory, one tenant, later page", func() {
			q.ListInventoryItems(ctx, dbgen.ListInventoryItemsParams{Hidden: hidden, TenantIds: one, Before: &later, BeforeID: laterID, MaxRows: 51})
		}},
		{"inventory by address, all tenants", func() {
			q.ListInventoryItems(ctx, dbgen.ListInventoryItemsParams{Hidden: hidden, AllTenants: true, TenantIds: []uuid.UUID{}, Search: new("10.0.31.7"), MaxRows: 51})
		}},
		{"inventory by name, one tenant", func() {
			q.ListInventoryItems(ctx, dbgen.ListInventoryItemsParams{Hidden: hidden, TenantIds: one, Search: new("srv-3177"), MaxRows: 51})
		}},
		// A search's matches are collected through the trigram index whatever their number and
		// age; walking newest first, filtering for the term, reads every newer item before them.
		{"inventory search by address, all tenants", func() {
			q.InventorySearchHits(ctx, searchHits(true, nil, "10.0.31.7"))
		}},
		{"inventory search by address, one tenant", func() {
			q.InventorySearchHits(ctx, searchHits(false, one, "10.0.31.7"))
		}},
		{"inventory search by name, all tenants", func() {
			q.InventorySearchHits(ctx, searchHits(true, nil, "srv-3177"))
		}},
		{"inventory search by name, one tenant", func() {
			q.InventorySearchHits(ctx, searchHits(false, one, "srv-3177"))
		}},
		{"inventory search by an old name's prefix, all tenants", func() {
			q.InventorySearchHits(ctx, searchHits(true, nil, "m-77"))
		}},
		{"a page of the items a search found", func() {
			q.ListInventoryItems(ctx, dbgen.ListInventoryItemsParams{Hidden: hidden, AllTenants: true, TenantIds: []uuid.UUID{}, Ids: found, MaxRows: 51})
		}},
		{"recent checks, one tenant", func() {
			q.RecentChecks(ctx, dbgen.RecentChecksParams{WindowSecs: 3600, TenantID: uuid.NullUUID{UUID: tenant, Valid: true}})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ex.plan = nil
			c.run()
			if ex.err != nil {
				t.Fatal(ex.err)
			}
			if ex.plan == nil {
				t.Fatal("no query was explained")
			}
			for _, problem := range problems(ex.plan, large) {
				t.Error(problem)
			}
			if strings.HasPrefix(c.name, "inventory search") && !uses(ex.plan, "inventory_items_words_idx") {
				t.Error("does not find the matches through the trigram index")
			}
			if t.Failed() {
				t.Logf("plan: %s", ex.raw)
			}
		})
	}
}

// searchHits are the parameters of a search of the inventory, as the service asks it.
func searchHits(all bool, tenants []uuid.UUID, term string) dbgen.InventorySearchHitsParams {
	if tenants == nil {
		tenants = []uuid.UUID{}
	}
	return dbgen.InventorySearchHitsParams{AllTenants: all, TenantIds: tenants, Search: term, Hidden: []string{"ignored"},
		HitCap: 20_000, MaxRows: 51}
}

// uses reports whether the plan under n reads the index.
func uses(n *node, index string) bool {
	if n.Index == index {
		return true
	}
	for _, child := range n.Plans {
		if uses(child, index) {
			return true
		}
	}
	return false
}

// node is a node of a plan as EXPLAIN (FORMAT JSON) gives it.
type node struct {
	Type     string  `json:"Node Type"`
	Relation string  `json:"Relation Name"`
	Index    string  `json:"Index Name"`
	Rows     float64 `json:"Plan Rows"`
	Plans    []*node `json:"Plans"`
}

// problems lists what reads a large table whole in the plan under n.
func problems(n *node, large map[string]bool) []string {
	var out []string
	switch {
	case n.Type == "Seq Scan" && large[n.Relation]:
		out = append(out, fmt.Sprintf("scans all of %s", n.Relation))
	case n.Type == "Sort" && n.Rows > sortLimit:
		out = append(out, fmt.Sprintf("sorts %.0f rows", n.Rows))
	}
	for _, child := range n.Plans {
		out = append(out, problems(child, large)...)
	}
	return out
}

// explainer stands in for the database under the generated queries: it explains each query
// with the arguments it was given and answers with no rows.
type explainer struct {
	pool *pgxpool.Pool
	plan *node
	raw  string
	err  error
}

func (e *explainer) explain(ctx context.Context, sql string, args ...any) {
	var raw []byte
	if err := e.pool.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+sql, args...).Scan(&raw); err != nil {
		e.err = fmt.Errorf("explain %s: %w", strings.SplitN(sql, "\n", 2)[0], err)
		return
	}
	var plans []struct{ Plan *node }
	if err := json.Unmarshal(raw, &plans); err != nil || len(plans) != 1 {
		e.err = fmt.Errorf("read plan %s: %v", raw, err)
		return
	}
	e.plan, e.raw = plans[0].Plan, string(raw)
}

func (e *explainer) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	e.explain(ctx, sql, args...)
	return e.pool.Query(ctx, "SELECT WHERE false")
}

func (e *explainer) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	e.explain(ctx, sql, args...)
	return e.pool.QueryRow(ctx, "SELECT WHERE false")
}

func (e *explainer) Exec(context.Context, string, ...any) (pgconn.CommandTag, error) {
	return pgconn.CommandTag{}, fmt.Errorf("the plan test runs no writes")
}
