package deploy

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"nimbus/app/objstore"
	"nimbus/app/pulumix"
	"nimbus/db/dbgen"
	"nimbus/db/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// operation makes the rows an operation hangs from and returns the operation's id.
func operation(t *testing.T, pool *pgxpool.Pool) uuid.UUID {
	t.Helper()
	var id uuid.UUID
	err := pool.QueryRow(context.Background(), `
		WITH t AS (INSERT INTO tenants (name) VALUES ('t') RETURNING id),
		e AS (INSERT INTO environments (tenant_id, name) SELECT id, 'dev' FROM t RETURNING id, tenant_id),
		c AS (INSERT INTO components (provider_id, semantic_type_id, name, display_name, language, code, input_schema, output_schema, latest_version)
			SELECT p.id, s.id, 'c', 'c', 'yaml', 'name: c', '{}', '{}', 1
			FROM semantic_providers p, semantic_resource_types s WHERE p.name = 'simcloud' AND s.name = 'VirtualMachine' RETURNING id),
		v AS (INSERT INTO component_versions (component_id, version, language, code, input_schema, output_schema, resolver_bindings, changelog)
			SELECT id, 1, 'yaml', 'name: c', '{}', '{}', '{}', 'first' FROM c RETURNING component_id),
		d AS (INSERT INTO deployed_components (tenant_id, environment_id, component_id, version, name, project, stack)
			SELECT e.tenant_id, e.id, v.component_id, 1, 'web', 'c', 'd-1' FROM e, v RETURNING id)
		INSERT INTO operations (deployment_id, kind) SELECT id, 'deploy' FROM d RETURNING id`).Scan(&id)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestProgress_LogCappedInTheDatabaseWholeInTheStore(t *testing.T) {
	pool := dbtest.Pool(t)
	ctx := context.Background()
	op := operation(t, pool)
	store, err := objstore.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := newProgress(ctx, pool, store, op, slog.New(slog.DiscardHandler))
	p.max = 5
	var want strings.Builder
	for i := range 12 {
		line := fmt.Sprintf("line %d", i)
		fmt.Fprintf(p, "%s\n", line)
		want.WriteString(line + "\n")
		if i == 3 {
			fmt.Fprintln(p, "warning: using pulumi-resource-simcloud from $PATH at /somewhere") // noise, dropped
		}
	}
	fmt.Fprint(p, "line 12 without its newline")
	want.WriteString("line 12 without its newline\n")
	p.Event(pulumix.Event{URN: "urn:pulumi:s::p::simcloud:index:Machine::web", Type: "simcloud:index:Machine", Name: "web", Op: "create", Status: "running"})
	p.Event(pulumix.Event{URN: "urn:pulumi:s::p::simcloud:index:Machine::web", Name: "web", Message: "slow", Severity: "warning"})
	p.Event(pulumix.Event{URN: "urn:pulumi:s::p::simcloud:index:Machine::web", Type: "simcloud:index:Machine", Name: "web", Op: "create", Status: "done"})
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}

	q := dbgen.New(pool)
	rows, err := q.OperationLogs(ctx, dbgen.OperationLogsParams{OperationID: op})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 5 || rows[0].Line != "line 0" || rows[4].Line != "line 4" {
		t.Fatalf("the database keeps %d lines %v, want lines 0 to 4", len(rows), rows)
	}
	got, err := q.GetOperation(ctx, op)
	if err != nil || !got.LogTruncated {
		t.Fatalf("the operation is not marked truncated (%v)", err)
	}
	r, err := store.Get(ctx, logKey(op))
	if err != nil {
		t.Fatal(err)
	}
	whole, _ := io.ReadAll(r)
	r.Close()
	if string(whole) != want.String() {
		t.Fatalf("the whole log is\n%s\nwant\n%s", whole, want.String())
	}

	res, err := q.OperationResources(ctx, op)
	if err != nil || len(res) != 1 {
		t.Fatalf("resources %v (%v)", res, err)
	}
	if r := res[0]; r.Status != "done" || r.Op != "create" || r.StartedAt == nil || r.FinishedAt == nil || r.Diagnostics != "warning: slow\n" {
		t.Fatalf("the machine's row: %+v", r)
	}
}
