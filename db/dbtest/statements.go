package dbtest

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"
)

// Statements records what a pool sends Postgres, so that a test can count the statements, round
// trips and commits a piece of work costs: figures that, unlike its time, do not depend on how
// busy the machine is.
type Statements struct {
	mu    sync.Mutex
	sent  []Sent
	conns map[*pgx.Conn]*session
}

// Sent is one statement as the pool sent it.
type Sent struct {
	At    time.Time
	SQL   string
	Trace trace.TraceID // of the span the caller's context carried; zero without one
	// Trip numbers the round trip that carried it, over the whole recording: a batch's
	// statements share one.
	Trip int
	// Control says it began or ended a transaction, or set how its commit waits.
	Control bool
	// Commit says it committed a transaction that wrote, or wrote in a transaction of its own.
	Commit bool
	// Durable says that commit waits for the disk where synchronous_commit is on, as in
	// production (the tests' database skips the disk throughout): neither its transaction nor
	// its session turned it off.
	Durable bool
}

// session is what a connection's statements so far say about its transaction.
type session struct {
	inTx, lazy, wrote bool
	batch             []string // the statements of the batch under way
}

// Traced returns a pool on pool's database, configured as pool is, whose statements s records.
func (s *Statements) Traced(t testing.TB, pool *pgxpool.Pool) *pgxpool.Pool {
	t.Helper()
	cfg := pool.Config().Copy()
	cfg.ConnConfig.Tracer = s
	traced, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(traced.Close)
	return traced
}

// lazyCommit finds a statement that lets its transaction commit without waiting for the disk.
var lazyCommit = regexp.MustCompile(`(?i)synchronous_commit'?\s*(TO|,)\s*'?off`)

// writes finds a statement that takes a transaction id, so that its commit waits for the disk:
// one that changes rows or locks them, a notification (sent at commit, under an id), or a message
// written to the log (db.Flush).
var writes = regexp.MustCompile(`(?i)\b(INSERT|UPDATE|DELETE|MERGE|NOTIFY|pg_notify|FOR\s+(NO\s+KEY\s+)?UPDATE|FOR\s+(KEY\s+)?SHARE|pg_logical_emit_message)\b`)

type (
	traceKey struct{}
	sqlKey   struct{}
)

// TraceQueryStart keeps the statement and the caller's trace for TraceQueryEnd.
func (s *Statements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	ctx = context.WithValue(ctx, sqlKey{}, data.SQL)
	return context.WithValue(ctx, traceKey{}, trace.SpanContextFromContext(ctx).TraceID())
}

// TraceQueryEnd records a statement once it was answered.
func (s *Statements) TraceQueryEnd(ctx context.Context, conn *pgx.Conn, _ pgx.TraceQueryEndData) {
	sql, _ := ctx.Value(sqlKey{}).(string)
	s.record(ctx, conn, []string{sql})
}

// TraceBatchStart begins a batch: its statements go out in one round trip.
func (s *Statements) TraceBatchStart(ctx context.Context, conn *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return context.WithValue(ctx, traceKey{}, trace.SpanContextFromContext(ctx).TraceID())
}

// TraceBatchQuery notes one of a batch's statements.
func (s *Statements) TraceBatchQuery(_ context.Context, conn *pgx.Conn, data pgx.TraceBatchQueryData) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.session(conn)
	c.batch = append(c.batch, data.SQL)
}

// TraceBatchEnd records a batch's statements as one round trip.
func (s *Statements) TraceBatchEnd(ctx context.Context, conn *pgx.Conn, _ pgx.TraceBatchEndData) {
	s.mu.Lock()
	batch := s.session(conn).batch
	s.session(conn).batch = nil
	s.mu.Unlock()
	s.record(ctx, conn, batch)
}

func (s *Statements) session(conn *pgx.Conn) *session {
	if s.conns == nil {
		s.conns = map[*pgx.Conn]*session{}
	}
	c, ok := s.conns[conn]
	if !ok {
		c = &session{}
		s.conns[conn] = c
	}
	return c
}

// record notes statements sent in one round trip, and what they did to their connection's
// transaction. A failed statement is counted too: it cost its trip.
func (s *Statements) record(ctx context.Context, conn *pgx.Conn, sqls []string) {
	tid, _ := ctx.Value(traceKey{}).(trace.TraceID)
	now := time.Now()
	// A session may commit lazily throughout (db.LazySessions).
	lazySession := conn.Config().RuntimeParams["synchronous_commit"] == "off"
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.session(conn)
	trip := 1
	if n := len(s.sent); n > 0 {
		trip = s.sent[n-1].Trip + 1
	}
	// A batch sent outside a transaction runs as one of its own, which commits after its last
	// statement (db.Lazy's set its commit mode first).
	implicit := !c.inTx && len(sqls) > 1
	if implicit {
		c.inTx, c.lazy, c.wrote = true, lazySession, false
	}
	for i, sql := range sqls {
		sent := Sent{At: now, SQL: sql, Trace: tid, Trip: trip}
		word := strings.ToUpper(strings.TrimSuffix(strings.Fields(sql + " x")[0], ";"))
		switch {
		case word == "BEGIN":
			c.inTx, c.wrote = true, false
			c.lazy = lazySession || lazyCommit.MatchString(sql)
			sent.Control = true
		case word == "COMMIT":
			sent.Control, sent.Commit, sent.Durable = true, c.inTx && c.wrote, c.inTx && c.wrote && !c.lazy
			c.inTx = false
		case word == "ROLLBACK":
			sent.Control = true
			c.inTx = false
		case implicit && lazyCommit.MatchString(sql):
			sent.Control, c.lazy = true, true
		case writes.MatchString(sql):
			if c.inTx {
				c.wrote = true
			} else {
				sent.Commit, sent.Durable = true, !lazySession // a transaction of its own
			}
		}
		if implicit && i == len(sqls)-1 {
			sent.Commit, sent.Durable = c.wrote, c.wrote && !c.lazy
			c.inTx = false
		}
		s.sent = append(s.sent, sent)
	}
}

// Since returns the statements recorded from t on.
func (s *Statements) Since(t time.Time) []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Sent
	for _, x := range s.sent {
		if !x.At.Before(t) {
			out = append(out, x)
		}
	}
	return out
}

// Cost is what a list of statements cost.
type Cost struct {
	Statements int // excluding those that begin, end or set up a transaction
	RoundTrips int
	Commits    int // transactions that committed a change
	Durable    int // of which waited for the disk
}

// CostOf adds up what sent cost.
func CostOf(sent []Sent) Cost {
	var c Cost
	trips := map[int]bool{}
	for _, x := range sent {
		trips[x.Trip] = true
		if !x.Control {
			c.Statements++
		}
		if x.Commit {
			c.Commits++
		}
		if x.Durable {
			c.Durable++
		}
	}
	c.RoundTrips = len(trips)
	return c
}

func (c Cost) String() string {
	return fmt.Sprintf("%d statements in %d round trips, %d commits of which %d waited for the disk", c.Statements, c.RoundTrips, c.Commits, c.Durable)
}
