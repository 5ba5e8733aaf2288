package environment

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// statusWriters are the queries that write an environment's status, all in environments.sql,
// and transitions is the one file that calls them.
var (
	statusWriters = []string{"CreateEnvironment", "SetEnvironmentStatus", "StartEnvironmentTransition"}
	transitions   = "app/environment/transition.go"
)

var (
	updates      = regexp.MustCompile(`(?is)\bUPDATE\s+environments\b.*?\bSET\b(.*?)(?:\bWHERE\b|\bRETURNING\b|;|$)`)
	inserts      = regexp.MustCompile(`(?is)\bINSERT\s+INTO\s+environments\s*\(([^)]*)\)`)
	setStatus    = regexp.MustCompile(`(?i)(?:^|[\s,])status\s*=`)
	statusColumn = regexp.MustCompile(`(?i)\bstatus\b`)
)

// writesStatus reports whether SQL updates environments setting the status, or inserts into
// environments naming it.
func writesStatus(sql string) bool {
	for _, m := range updates.FindAllStringSubmatch(sql, -1) {
		if setStatus.MatchString(m[1]) {
			return true
		}
	}
	for _, m := range inserts.FindAllStringSubmatch(sql, -1) {
		if statusColumn.MatchString(m[1]) {
			return true
		}
	}
	return false
}

// TestStatus_OnlyTheTransitionsWriteIt reads the query files and the Go sources: no query but
// statusWriters writes environments.status, and no Go file but transitions calls them or
// carries SQL of its own that does. Tests are left out: they set up fixtures by hand.
func TestStatus_OnlyTheTransitionsWriteIt(t *testing.T) {
	root := filepath.Join("..", "..")
	queries, err := filepath.Glob(filepath.Join(root, "db", "queries", "*.sql"))
	if err != nil || len(queries) == 0 {
		t.Fatalf("no query files found: %v", err)
	}
	found := map[string]bool{}
	for _, path := range queries {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range strings.Split(string(src), "-- name: ")[1:] {
			name := strings.Fields(q)[0]
			if !writesStatus(q) {
				continue
			}
			if filepath.Base(path) != "environments.sql" || !slices.Contains(statusWriters, name) {
				t.Errorf("%s: query %s writes environments.status; only %v in environments.sql may", filepath.Base(path), name, statusWriters)
			}
			found[name] = true
		}
	}
	for _, name := range statusWriters {
		if !found[name] {
			t.Errorf("query %s no longer writes environments.status: is this test still looking at the right queries?", name)
		}
	}

	calls := regexp.MustCompile(`\.(` + strings.Join(statusWriters, "|") + `)\(`)
	called := false
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			// The generated queries are checked through their SQL above.
			if rel == "db/dbgen" || rel == "node_modules" || strings.HasPrefix(d.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if m := calls.FindString(string(src)); m != "" {
			if rel != transitions {
				t.Errorf("%s calls %s: only the transitions in %s write an environment's status", rel, m, transitions)
			}
			called = true
		}
		if writesStatus(string(src)) {
			t.Errorf("%s carries SQL that writes environments.status: add a transition in %s instead", rel, transitions)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !called {
		t.Errorf("%s calls none of %v: is this test still looking at the right files?", transitions, statusWriters)
	}
}
