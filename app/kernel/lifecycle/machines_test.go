package lifecycle_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"nimbus/app/domain/component"
	"nimbus/app/domain/elevation"
	"nimbus/app/domain/inventory"
	"nimbus/app/domain/notification"
	"nimbus/app/kernel/lifecycle"
	"nimbus/app/orchestration/approval"
	"nimbus/app/orchestration/deploy"
	"nimbus/app/orchestration/event"
	"nimbus/app/orchestration/instance"
	"nimbus/db/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// lifecycles are every machine of Nimbus, with the tables whose every write (not only of the
// status) belongs to the machine's writer: an operation's steps are checkpointed by the
// operation's moves alone.
var lifecycles = []struct {
	machine lifecycle.Described
	owns    []string
}{
	{deploy.OperationMachine, []string{"operations", "operation_steps"}},
	{deploy.DeploymentMachine, nil},
	{lifecycle.Environments, nil},
	{lifecycle.Zones, nil},
	{lifecycle.Instances, nil},
	{instance.RunMachine, []string{"stack_runs", "stack_run_steps"}},
	{approval.Machine, []string{"approval_requests", "approval_decisions"}},
	{event.DeliveryMachine, nil},
	{event.SubscriptionMachine, nil},
	{component.CheckMachine, nil},
	{component.SyncMachine, nil},
	{elevation.Machine, nil},
	{notification.MailMachine, nil},
	{inventory.Machine, []string{"inventory_items"}},
}

// root is the module's root, from this package's folder.
var root = filepath.Join("..", "..", "..")

// Every machine's statuses are exactly those its column's constraint allows.
func TestMachines_StatesAreTheSchemas(t *testing.T) {
	pool := dbtest.Pool(t)
	quoted := regexp.MustCompile(`'([a-z_]+)'::text`)
	for _, l := range lifecycles {
		d := l.machine.Describe()
		rows, err := pool.Query(context.Background(),
			`SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = $1::regclass AND contype = 'c'`, d.Table)
		if err != nil {
			t.Fatalf("%s: %v", d.Name, err)
		}
		var allowed []string
		for rows.Next() {
			var def string
			if err := rows.Scan(&def); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(def, "CHECK (("+d.Column+" = ANY") {
				continue
			}
			for _, m := range quoted.FindAllStringSubmatch(def, -1) {
				allowed = append(allowed, m[1])
			}
		}
		rows.Close()
		slices.Sort(allowed)
		if !slices.Equal(allowed, d.States) {
			t.Errorf("%s: %s.%s allows %v; the machine has %v", d.Name, d.Table, d.Column, allowed, d.States)
		}
	}
}

var (
	updates  = regexp.MustCompile(`(?is)\bupdate\s+(\w+)(?:\s+\w+)?\s+set\s+(.*?)(?:\bwhere\b|\breturning\b|\bfrom\b|;|$)`)
	inserts  = regexp.MustCompile(`(?i)\binsert\s+into\s+(\w+)`)
	anyWrite = regexp.MustCompile(`(?i)\b(?:insert\s+into|update|delete\s+from)\s+(\w+)`)
)

// writes reports whether a statement writes d's status (a row inserted is given its first
// status) or touches a table the machine owns.
func writes(stmt string, d lifecycle.Description, owns []string) bool {
	for _, m := range inserts.FindAllStringSubmatch(stmt, -1) {
		if strings.EqualFold(m[1], d.Table) {
			return true
		}
	}
	set := regexp.MustCompile(`(?i)(?:^|[\s,])` + d.Column + `\s*=`)
	for _, m := range updates.FindAllStringSubmatch(stmt, -1) {
		if strings.EqualFold(m[1], d.Table) && set.MatchString(m[2]) {
			return true
		}
	}
	for _, m := range anyWrite.FindAllStringSubmatch(stmt, -1) {
		if slices.ContainsFunc(owns, func(t string) bool { return strings.EqualFold(t, m[1]) }) {
			return true
		}
	}
	return false
}

// sources walks the module's hand-written Go and templ files; tests, generated code, the
// fixtures, the test harness (app/apptest) and the seed that fills a database for benchmarks
// are left out: they arrange rows as they need.
func sources(t *testing.T, each func(rel, text string)) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			switch {
			case rel == "node_modules", rel == "db/dbgen", rel == "db/dbtest", rel == "db/seed", rel == "app/apptest", rel != "." && strings.HasPrefix(d.Name(), "."):
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(rel, "_test.go") || strings.HasSuffix(rel, "_templ.go") ||
			!(strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, ".templ")) {
			return nil
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		n++
		each(rel, string(text))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 100 {
		t.Fatalf("read %d sources: is the walk still rooted at the module?", n)
	}
}

// No code but a machine's writer writes its status: the queries that do are called from the
// writer alone, and no Go source carries a statement of its own that does.
func TestMachines_OnlyTheWriterMovesAStatus(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(root, "db", "queries", "*.sql"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no query files: %v", err)
	}
	writerOf := map[string]lifecycle.Description{} // query name → the machine whose status it writes
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for name, stmt := range namedQueries(string(text)) {
			for _, l := range lifecycles {
				if d := l.machine.Describe(); writes(stmt, d, l.owns) {
					if other, ok := writerOf[name]; ok && other.Writer != d.Writer {
						t.Errorf("query %s writes both %s and %s, which have different writers", name, other.Name, d.Name)
					}
					writerOf[name] = d
				}
			}
		}
	}
	found := map[string]int{}
	for _, d := range writerOf {
		found[d.Name]++
	}
	for _, l := range lifecycles {
		if d := l.machine.Describe(); found[d.Name] == 0 {
			t.Errorf("no query writes %s.%s: is this test still reading the right statements?", d.Table, d.Column)
		}
	}
	calls := regexp.MustCompile(`\.(\w+)\(`)
	called := map[string]bool{}
	sources(t, func(rel, text string) {
		for _, m := range calls.FindAllStringSubmatch(text, -1) {
			d, ok := writerOf[m[1]]
			if !ok {
				continue
			}
			called[d.Name] = true
			if rel != d.Writer {
				t.Errorf("%s calls %s, which moves a %s: only %s may", rel, m[1], d.Name, d.Writer)
			}
		}
		for _, l := range lifecycles {
			if d := l.machine.Describe(); rel != d.Writer && writes(text, d, l.owns) {
				t.Errorf("%s carries SQL that writes %s.%s: add a move to %s", rel, d.Table, d.Column, d.Writer)
			}
		}
	})
	for _, l := range lifecycles {
		if d := l.machine.Describe(); !called[d.Name] {
			t.Errorf("%s calls none of the queries that move a %s: is it still the writer?", d.Writer, d.Name)
		}
	}
}

// statusLiteral finds a quoted word compared with, assigned to or given as a status, and the
// case of a switch over a status; statusList, a list of words given as statuses.
var (
	statusLiteral = regexp.MustCompile(`(?i)status\w*\)?\s*(?:==|!=|:|=)\s*"([a-z_]+)"|"([a-z_]+)"\s*(?:==|!=)\s*[\w.]*status`)
	statusList    = regexp.MustCompile(`(?i)status\w*\s*(?::=|:|=)\s*\[\]string\{([^}]*)\}`)
	switchLine    = regexp.MustCompile(`^\s*switch\b(.*)\{`)
	caseLine      = regexp.MustCompile(`^\s*case\s+("[^:]*):`)
	word          = regexp.MustCompile(`"([a-z_]+)"`)
	definition    = regexp.MustCompile(`^\s*\w+\s+\w+\s*=\s*"[a-z_]+"`)
)

// No code names a machine's status by its spelling: it uses the machine's typed values, so a
// status renamed or added is found by the compiler, not by a reader. The machines' own
// definitions (a typed constant's value) are where the spellings live.
func TestMachines_NoStatusIsSpelledOutsideItsMachine(t *testing.T) {
	states := map[string]bool{}
	for _, l := range lifecycles {
		for _, s := range l.machine.Describe().States {
			states[s] = true
		}
	}
	sources(t, func(rel, text string) {
		if !strings.HasPrefix(rel, "app/") {
			return
		}
		overStatus := false
		for i, line := range strings.Split(text, "\n") {
			if definition.MatchString(line) || strings.HasPrefix(strings.TrimSpace(line), "//") {
				continue
			}
			var found []string
			for _, m := range statusLiteral.FindAllStringSubmatch(line, -1) {
				found = append(found, m[1]+m[2])
			}
			for _, m := range statusList.FindAllStringSubmatch(line, -1) {
				for _, w := range word.FindAllStringSubmatch(m[1], -1) {
					found = append(found, w[1])
				}
			}
			if m := switchLine.FindStringSubmatch(line); m != nil {
				overStatus = strings.Contains(strings.ToLower(m[1]), "status")
			}
			if m := caseLine.FindStringSubmatch(line); m != nil && overStatus {
				for _, w := range word.FindAllStringSubmatch(m[1], -1) {
					found = append(found, w[1])
				}
			}
			for _, s := range found {
				if states[s] {
					t.Errorf("%s:%d spells the status %q: use the machine's value", rel, i+1, s)
				}
			}
		}
	})
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
