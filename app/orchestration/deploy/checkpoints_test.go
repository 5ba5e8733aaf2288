package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
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
	err := saga.Execute(ctx, &checkpoints{pool: pool, operation: op}, []saga.Step{step("a", false), step("b", true), step("c", false)}, false)
	if !saga.IsTransient(err) {
		t.Fatalf("got %v", err)
	}
	// A new store on the same operation, as a new worker would make, resumes at b.
	err = saga.Execute(ctx, &checkpoints{pool: pool, operation: op}, []saga.Step{step("a", false), step("b", false), step("c", false)}, false)
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
	err := saga.Execute(ctx, &checkpoints{pool: pool, operation: op}, []saga.Step{mk("a", nil), mk("b", errors.New("provider refused"))}, false)
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

// noteStepWrites records, for every write of a step's checkpoint, the transaction that made it
// and whether that transaction's commit waits for the disk.
func noteStepWrites(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	_, err := pool.Exec(context.Background(), `
		CREATE TABLE step_writes (n serial, name text, status text, tx bigint, sync text);
		CREATE FUNCTION note_step_write() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO step_writes (name, status, tx, sync)
			VALUES (NEW.name, NEW.status, txid_current(), current_setting('synchronous_commit'));
			RETURN NEW;
		END $$;
		CREATE TRIGGER note_step_write AFTER UPDATE ON operation_steps FOR EACH ROW EXECUTE FUNCTION note_step_write();`)
	if err != nil {
		t.Fatal(err)
	}
}

// stepCommits lists the transactions that wrote checkpoints, in order: the moves each made, and
// "lazy" when it did not wait for the disk.
func stepCommits(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `
		SELECT string_agg(name || ':' || status, '+' ORDER BY n) || CASE WHEN bool_and(sync = 'off') THEN ' lazy' ELSE '' END
		FROM step_writes GROUP BY tx ORDER BY min(n)`)
	if err != nil {
		t.Fatal(err)
	}
	commits, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return commits
}

// durablePool is a pool on a new database whose commits wait for the disk unless told not to,
// as production's do (the test cluster's own default is not to).
func durablePool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dbtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "on"
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func TestCheckpoints_AStepsEndAndTheNextStartAreOneCommit(t *testing.T) {
	ctx := context.Background()
	pool := durablePool(t)
	op := anOperation(t, pool)
	noteStepWrites(t, pool)
	step := func(name string, lazy bool) saga.Step {
		return saga.Step{Name: name, LazyStart: lazy, Do: func(context.Context, *saga.Run) (json.RawMessage, error) {
			return json.RawMessage(`"` + name + `"`), nil
		}}
	}
	err := saga.Execute(ctx, &checkpoints{pool: pool, operation: op}, []saga.Step{step("resolve", true), step("up", false), step("record", true)}, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"resolve:running lazy",
		"resolve:done+up:running", // the up waits for its start, and everything before it, to be on disk
		"up:done+record:running lazy",
		"record:done",
	}
	if got := stepCommits(t, pool); !slices.Equal(got, want) {
		t.Fatalf("commits\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A worker that dies right after the commit that ended one step and began the next leaves the
// next one running: the worker that takes the operation over runs it again, told that it was
// interrupted, with the result of the step before, which it does not run again.
func TestCheckpoints_CrashAfterTheFoldedCommitResumesTheNextStep(t *testing.T) {
	ctx := context.Background()
	pool := dbtest.Pool(t)
	op := anOperation(t, pool)
	var ran []string
	steps := func(crash bool) []saga.Step {
		return []saga.Step{
			{Name: "resolve", LazyStart: true, Do: func(context.Context, *saga.Run) (json.RawMessage, error) {
				ran = append(ran, "resolve")
				return json.RawMessage(`{"ip":"10.0.0.7"}`), nil
			}},
			{Name: "up", Do: func(_ context.Context, r *saga.Run) (json.RawMessage, error) {
				var got struct{ IP string }
				if err := r.Result("resolve", &got); err != nil {
					return nil, err
				}
				ran = append(ran, fmt.Sprintf("up %s interrupted=%v", got.IP, r.Interrupted("up")))
				if crash {
					runtime.Goexit() // the worker dies: nothing after this runs
				}
				return nil, nil
			}},
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = saga.Execute(ctx, &checkpoints{pool: pool, operation: op}, steps(true), false)
		t.Error("the run went on after its worker died")
	}()
	<-done
	if err := saga.Execute(ctx, &checkpoints{pool: pool, operation: op}, steps(false), false); err != nil {
		t.Fatal(err)
	}
	if want := "resolve,up 10.0.0.7 interrupted=false,up 10.0.0.7 interrupted=true"; strings.Join(ran, ",") != want {
		t.Fatalf("ran %s, want %s", strings.Join(ran, ","), want)
	}
	got := map[string]string{}
	rows, err := pool.Query(ctx, `SELECT name, status || ' ' || attempts FROM operation_steps WHERE operation_id = $1`, op)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name, state string
		if err := rows.Scan(&name, &state); err != nil {
			t.Fatal(err)
		}
		got[name] = state
	}
	if got["resolve"] != "done 1" || got["up"] != "done 2" {
		t.Fatalf("steps %v, want resolve done once and up done on its second attempt", got)
	}
}

// The commit that ends one step and begins the next is all or none: when it fails (the
// connection lost in the middle of it), the step that ran is still running, and the next run
// runs it again.
func TestCheckpoints_FailedFoldedCommitLeavesTheStepBeforeRunning(t *testing.T) {
	ctx := context.Background()
	pool := dbtest.Pool(t)
	op := anOperation(t, pool)
	// The database refuses the second step's start, once.
	_, err := pool.Exec(ctx, `
		CREATE FUNCTION refuse_up() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'connection lost'; END $$;
		CREATE TRIGGER refuse_up BEFORE UPDATE ON operation_steps
		FOR EACH ROW WHEN (NEW.name = 'up' AND NEW.status = 'running') EXECUTE FUNCTION refuse_up();`)
	if err != nil {
		t.Fatal(err)
	}
	var ran []string
	steps := []saga.Step{
		{Name: "resolve", LazyStart: true, Do: func(_ context.Context, r *saga.Run) (json.RawMessage, error) {
			ran = append(ran, fmt.Sprintf("resolve interrupted=%v", r.Interrupted("resolve")))
			return json.RawMessage(`"handed out"`), nil
		}},
		{Name: "up", Do: func(context.Context, *saga.Run) (json.RawMessage, error) { ran = append(ran, "up"); return nil, nil }},
	}
	if err := saga.Execute(ctx, &checkpoints{pool: pool, operation: op}, steps, false); !saga.IsTransient(err) {
		t.Fatalf("got %v, want a transient stop", err)
	}
	var status, result string
	err = pool.QueryRow(ctx, `SELECT status, coalesce(result::text, '') FROM operation_steps WHERE operation_id = $1 AND name = 'resolve'`, op).Scan(&status, &result)
	if err != nil {
		t.Fatal(err)
	}
	if status != "running" || result == `"handed out"` {
		t.Fatalf("resolve is %s with result %q after the failed commit, want running without its result", status, result)
	}
	if _, err := pool.Exec(ctx, `DROP TRIGGER refuse_up ON operation_steps`); err != nil {
		t.Fatal(err)
	}
	if err := saga.Execute(ctx, &checkpoints{pool: pool, operation: op}, steps, false); err != nil {
		t.Fatal(err)
	}
	if want := "resolve interrupted=false,resolve interrupted=true,up"; strings.Join(ran, ",") != want {
		t.Fatalf("ran %s, want %s", strings.Join(ran, ","), want)
	}
}
