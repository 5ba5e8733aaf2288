package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"nimbus/db/dbtest"
	"nimbus/jobs/saga"
)

// anOperation inserts the rows an operation hangs from and returns its id.
func anOperation(t *testing.T, pool *pgxpool.Pool) uuid.UUID {
	t.Helper()
	var id uuid.UUID
	err := pool.QueryRow(context.Background(), `
		WITH t AS (INSERT INTO tenants (name) VALUES ('t') RETURNING id),
		     c AS (INSERT INTO components (provider_id, semantic_type_id, name, display_name, language, code, input_schema, output_schema)
		           SELECT p.id, s.id, 'c', 'c', 'yaml', 'x', '{}', '{}' FROM semantic_providers p, semantic_resource_types s
		           WHERE p.name = 'simcloud' AND s.name = 'VirtualMachine' RETURNING id),
		     v AS (INSERT INTO component_versions (component_id, version, language, code, input_schema, output_schema, resolver_bindings, changelog)
		           SELECT id, 1, 'yaml', 'x', '{}', '{}', '{}', 'first' FROM c RETURNING component_id),
		     e AS (INSERT INTO environments (tenant_id, name) SELECT id, 'dev' FROM t RETURNING id, tenant_id),
		     d AS (INSERT INTO deployed_components (tenant_id, environment_id, component_id, version, name, project, stack)
		           SELECT e.tenant_id, e.id, v.component_id, 1, 'vm', 'p', 's' FROM e, v RETURNING id)
		INSERT INTO operations (deployment_id, kind) SELECT id, 'deploy' FROM d RETURNING id`).Scan(&id)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestCheckpoints_CheckpointsSurviveARestart(t *testing.T) {
	ctx := context.Background()
	pool := dbtest.Pool(t)
	op := anOperation(t, pool)
	var ran []string
	step := func(name string, fail bool) saga.Step {
		return saga.Step{Name: name,
			Do: func(context.Context, *saga.Run) (json.RawMessage, error) {
				ran = append(ran, name)
				if fail {
					return nil, saga.Transient(errors.New("lost the backend"))
				}
				return json.RawMessage(`{"step":"` + name + `"}`), nil
			},
			Undo: func(context.Context, *saga.Run) error { ran = append(ran, "undo "+name); return nil },
		}
	}
	// The first run stops at b with a passing error, as a crash would leave it.
	err := saga.Execute(ctx, checkpoints{pool, op}, []saga.Step{step("a", false), step("b", true), step("c", false)}, false)
	if !saga.IsTransient(err) {
		t.Fatalf("got %v", err)
	}
	// A new store on the same operation, as a new worker would make, resumes at b.
	err = saga.Execute(ctx, checkpoints{pool, op}, []saga.Step{step("a", false), step("b", false), step("c", false)}, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := "a,b,b,c"; strings.Join(ran, ",") != want {
		t.Fatalf("ran %s, want %s", strings.Join(ran, ","), want)
	}
	var attempts int
	var result string
	if err := pool.QueryRow(ctx, `SELECT attempts, result::text FROM operation_steps WHERE operation_id = $1 AND name = 'b'`, op).Scan(&attempts, &result); err != nil {
		t.Fatal(err)
	}
	if attempts != 2 || result != `{"step": "b"}` {
		t.Fatalf("b: %d attempts, result %s", attempts, result)
	}
}

func TestCheckpoints_FailureUndoesAndKeepsTheCause(t *testing.T) {
	ctx := context.Background()
	pool := dbtest.Pool(t)
	op := anOperation(t, pool)
	undone := map[string]bool{}
	mk := func(name string, err error) saga.Step {
		return saga.Step{Name: name,
			Do:   func(context.Context, *saga.Run) (json.RawMessage, error) { return nil, err },
			Undo: func(context.Context, *saga.Run) error { undone[name] = true; return nil }}
	}
	err := saga.Execute(ctx, checkpoints{pool, op}, []saga.Step{mk("a", nil), mk("b", errors.New("provider refused"))}, false)
	var f *saga.Failure
	if !errors.As(err, &f) || !f.Compensated || !undone["a"] || !undone["b"] {
		t.Fatalf("got %v, undone %v", err, undone)
	}
	rows, err := pool.Query(ctx, `SELECT name, status, error FROM operation_steps WHERE operation_id = $1 ORDER BY position`, op)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var name, status, msg string
		if err := rows.Scan(&name, &status, &msg); err != nil {
			t.Fatal(err)
		}
		got = append(got, name+"="+status+"("+msg+")")
	}
	if want := "a=undone(),b=undone(provider refused)"; strings.Join(got, ",") != want {
		t.Fatalf("steps %s, want %s", strings.Join(got, ","), want)
	}
}
