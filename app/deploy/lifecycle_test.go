package deploy

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"nimbus/db/dbtest"
)

// writesOperations finds a statement that changes operations or their steps' checkpoints.
var writesOperations = regexp.MustCompile(`(?i)\b(insert\s+into|update|delete\s+from)\s+(operations|operation_steps)\b`)

// Only lifecycle.go moves an operation: its statements are all in db/queries/operations.sql, the
// generated methods that run them are called from lifecycle.go alone, and no Go source holds a
// statement of its own that writes either table. Tests and their fixtures, and the seed that
// fills an empty database with a history for benchmarks, may arrange rows as they need.
func TestLifecycle_SoleWriter(t *testing.T) {
	root := filepath.Join("..", "..")
	queries, err := filepath.Glob(filepath.Join(root, "db", "queries", "*.sql"))
	if err != nil || len(queries) == 0 {
		t.Fatalf("no query files found: %v", err)
	}
	writers := map[string]bool{}
	for _, path := range queries {
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for name, stmt := range namedQueries(string(text)) {
			if !writesOperations.MatchString(stmt) {
				continue
			}
			if filepath.Base(path) != "operations.sql" {
				t.Errorf("%s: query %s writes operations: it belongs in operations.sql, behind a move of lifecycle.go", path, name)
			}
			writers[name] = true
		}
	}
	if len(writers) < 10 {
		t.Fatalf("found %d writing queries, expected the operation's moves: is the pattern still right?", len(writers))
	}
	calls := regexp.MustCompile(`\.(\w+)\(`)
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch rel {
			case "node_modules", ".git", filepath.Join("db", "dbgen"), filepath.Join("db", "dbtest"), filepath.Join("db", "seed"):
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || rel == filepath.Join("app", "deploy", "lifecycle.go") {
			return nil
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		checked++
		for _, m := range calls.FindAllStringSubmatch(string(text), -1) {
			if writers[m[1]] {
				t.Errorf("%s calls %s, which moves an operation: call the move in app/deploy/lifecycle.go instead", rel, m[1])
			}
		}
		if loc := writesOperations.FindStringIndex(string(text)); loc != nil {
			t.Errorf("%s writes operations itself (%q): add a move to lifecycle.go", rel, string(text)[loc[0]:loc[1]])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("checked %d Go files: is the walk still rooted at the module?", checked)
	}
}

// namedQueries splits a sqlc query file into its statements by name.
func namedQueries(text string) map[string]string {
	out := map[string]string{}
	name := ""
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, "-- name: "); ok {
			name = strings.Fields(rest)[0]
			continue
		}
		if name != "" && !strings.HasPrefix(strings.TrimSpace(line), "--") {
			out[name] += line + "\n"
		}
	}
	return out
}

// The kinds and statuses lists may be filtered by are exactly those the schema allows.
func TestLifecycle_TypesMatchTheSchema(t *testing.T) {
	pool := dbtest.Pool(t)
	cases := []struct {
		constraint string
		names      []string
	}{
		{"operations_kind_check", slices.Clone(kinds)},
		{"operations_status_check", slices.Clone(operationStatuses)},
		{"deployed_components_status_check", slices.Clone(deploymentStatuses)},
	}
	quoted := regexp.MustCompile(`'([a-z_]+)'`)
	for _, c := range cases {
		var def string
		if err := pool.QueryRow(context.Background(), `SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = $1`, c.constraint).Scan(&def); err != nil {
			t.Fatalf("%s: %v", c.constraint, err)
		}
		var allowed []string
		for _, m := range quoted.FindAllStringSubmatch(def, -1) {
			allowed = append(allowed, m[1])
		}
		slices.Sort(allowed)
		slices.Sort(c.names)
		if !slices.Equal(allowed, c.names) {
			t.Errorf("%s allows %v; the code names %v", c.constraint, allowed, c.names)
		}
	}
}
