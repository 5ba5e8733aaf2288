package component

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"nimbus/app/kernel/problem"
	"nimbus/app/platform/pulumix"
	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/db/dbtest"
)

func TestLiveOutput_NeverSplitsACharacter(t *testing.T) {
	var got []string
	l := &liveOutput{flush: func(s string) { got = append(got, s) }}
	text := "résumé ✓ done"
	b := []byte(text)
	// Written a byte at a time and flushed after each, as a slow engine would.
	for i := range b {
		_, _ = l.Write(b[i : i+1])
		l.mu.Lock()
		l.flushLocked()
		l.mu.Unlock()
	}
	l.Close()
	for _, piece := range got {
		if strings.ToValidUTF8(piece, "") != piece {
			t.Fatalf("piece %q is not valid UTF-8", piece)
		}
	}
	if strings.Join(got, "") != text {
		t.Fatalf("got %q, want %q", strings.Join(got, ""), text)
	}
}

func TestLiveOutput_CutsLongLinesAndBoundsWhatWaits(t *testing.T) {
	var got strings.Builder
	l := &liveOutput{flush: func(s string) { got.WriteString(s) }}
	l.last = time.Now() // everything below comes in one burst, before the next flush is due
	_, _ = l.Write([]byte(strings.Repeat("x", 1<<20) + "\nshort\n"))
	for range 30000 { // 330 KB more
		_, _ = l.Write([]byte("0123456789\n"))
	}
	l.Close()
	out := got.String()
	if !strings.HasPrefix(out, "[… ") || !strings.Contains(out[:80], " of output dropped]\n") {
		t.Fatalf("what was dropped is not noted: %.80q", out)
	}
	if len(out) > maxCheckOutput+100 || !strings.HasSuffix(out, "0123456789\n") {
		t.Fatalf("%d bytes passed on, ending %q", len(out), out[max(0, len(out)-20):])
	}

	got.Reset()
	l = &liveOutput{flush: func(s string) { got.WriteString(s) }}
	_, _ = l.Write([]byte(strings.Repeat("y", 1<<20) + "\nnext\n"))
	l.Close()
	if out := got.String(); !strings.HasSuffix(out, "y … [line truncated: 1.0 MiB]\nnext\n") || len(out) > pulumix.MaxLine+100 {
		t.Fatalf("a long line passed on as %d bytes ending %q", len(out), out[max(0, len(out)-40):])
	}
}

func TestAppendCheckOutput_KeepsTheEndAndNotesTheCut(t *testing.T) {
	pool := dbtest.Pool(t)
	ctx := t.Context()
	q := db.Queries(pool)
	chk, err := q.CreateCheck(ctx, dbgen.CreateCheckParams{ComponentID: dbtest.NewDeployment(t, pool).ComponentID, Code: "name: c", InputSchema: []byte("{}")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.StartCheck(ctx, chk.ID); err != nil {
		t.Fatal(err)
	}
	for _, part := range []string{strings.Repeat("a", 200<<10), strings.Repeat("b", 100<<10) + "the end"} {
		if err := q.AppendCheckOutput(ctx, dbgen.AppendCheckOutputParams{ID: chk.ID, Output: part}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := q.GetCheck(ctx, chk.ID)
	if err != nil {
		t.Fatal(err)
	}
	if n := utf8.RuneCountInString(got.Output); n != maxCheckOutput || !strings.HasPrefix(got.Output, "[… earlier output dropped]\naaa") || !strings.HasSuffix(got.Output, "bthe end") {
		t.Fatalf("stored %d characters: %.40q … %q", n, got.Output, got.Output[len(got.Output)-10:])
	}
}

// secretDisk declares one input secret in its config and the other in its schema only.
const secretDisk = `name: secret-disk
runtime: yaml
config:
  name:
    type: string
  password:
    type: string
    secret: true
  token:
    type: string
resources:
  disk:
    type: simcloud:index:Disk
    properties:
      name: ${name}
      image: ${password}-${token}
outputs:
  disk_id: ${disk.id}
`

// A component with secret inputs passes the engine's check: its placeholders reach the engine
// as secrets, which it refuses as plain config.
func TestCheck_SecretInputsPassTheEngine(t *testing.T) {
	d := Draft{Name: "secret-disk", Language: "yaml", Code: secretDisk,
		InputSchema: []byte(`{"type": "object", "required": ["name", "password", "token"], "properties": {
			"name": {"type": "string"}, "password": {"type": "string", "x-secret": true},
			"token": {"type": "string", "x-secret": true}}}`),
		OutputSchema: []byte(`{"type": "object", "properties": {"disk_id": {"type": "string"}}}`)}
	scope := Scope{ProviderLevel: true, Package: "simcloud"}
	in, _, err := Validate(&d, map[string]bool{"yaml": true}, scope)
	if err != nil {
		t.Fatal(err)
	}
	plain, secret := placeholders(in, ParseYAML(d.Code, scope, &problem.ValidationError{}))
	if _, ok := secret["password"]; !ok || plain["password"] != nil || plain["token"] != nil || plain["name"] == nil {
		t.Fatalf("plain %v, secret %v: want password and token secret, name plain", plain, secret)
	}
	runner, err := pulumix.NewRunner(os.Getenv("NIMBUS_PULUMI_DIR"), t.TempDir(), nil)
	if err != nil {
		t.Fatalf("the Pulumi toolchain is needed here (go tool task toolchain): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := runner.Check(ctx, pulumix.Stack{Code: d.Code, Config: plain, Secrets: secret}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Succeeded {
		t.Fatalf("the check of a component with secret inputs failed:\n%s", res.Output)
	}
}
