package deploy

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"nimbus/app/kernel/objstore"
	"nimbus/app/kernel/objstore/s3test"
	"nimbus/app/platform/pulumix"
	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/db/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(s3test.Around(m)) }

func TestProgress_LogCappedInTheDatabaseWholeInTheStore(t *testing.T) {
	pool := dbtest.Pool(t)
	ctx := context.Background()
	op := dbtest.NewDeployment(t, pool).OperationID
	store, err := objstore.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := newProgress(ctx, pool, store, op, false, slog.New(slog.DiscardHandler))
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

	q := db.Queries(pool)
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

func TestProgress_LongLinesAreCutWithANote(t *testing.T) {
	pool := dbtest.Pool(t)
	ctx := context.Background()
	op := dbtest.NewDeployment(t, pool).OperationID
	p := newProgress(ctx, pool, nil, op, false, slog.New(slog.DiscardHandler))
	long := strings.Repeat("é", 629146) // 1.2 MiB, written in pieces as a pipe delivers it
	for i := 0; i < len(long); i += 32 << 10 {
		fmt.Fprint(p, long[i:min(i+32<<10, len(long))])
	}
	fmt.Fprint(p, "\nafter\n")
	fmt.Fprint(p, strings.Repeat("z", 20<<10)) // the last line, unfinished
	p.Event(pulumix.Event{URN: "urn:pulumi:s::p::simcloud:index:Machine::web", Name: "web", Message: strings.Repeat("m", 1<<20), Severity: "error"})
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}

	q := db.Queries(pool)
	rows, err := q.OperationLogs(ctx, dbgen.OperationLogsParams{OperationID: op})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 {
		t.Fatalf("%d lines stored, want 3", len(rows))
	}
	first := rows[0].Line
	if !strings.HasPrefix(first, "éé") || !strings.HasSuffix(first, "é … [line truncated: 1.2 MiB]") || len(first) > pulumix.MaxLine+64 {
		t.Fatalf("the long line is stored as %d bytes ending %q", len(first), first[len(first)-40:])
	}
	if rows[1].Line != "after" {
		t.Fatalf("the next line is %q", rows[1].Line)
	}
	if last := rows[2].Line; !strings.HasSuffix(last, "z … [line truncated: 20.0 KiB]") || len(last) > pulumix.MaxLine+64 {
		t.Fatalf("the unfinished last line is stored as %d bytes ending %q", len(last), last[max(0, len(last)-40):])
	}
	res, err := q.OperationResources(ctx, op)
	if err != nil || len(res) != 1 {
		t.Fatalf("resources %d (%v)", len(res), err)
	}
	if d := res[0].Diagnostics; !strings.HasSuffix(d, "m … [line truncated: 1.0 MiB]\n") {
		t.Fatalf("the diagnostic is %d bytes ending %q", len(d), d[max(0, len(d)-40):])
	}
}
