package event

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"nimbus/app/kernel/secrets"
	"nimbus/db/dbtest"
)

// failingReceiver answers every delivery 503 once told to: each request waits for a word on
// release, so that a test can hold several deliveries in flight at once.
type failingReceiver struct {
	*httptest.Server
	hits    atomic.Int32
	arrived chan struct{}
	release chan struct{}
}

func newFailingReceiver(t *testing.T) *failingReceiver {
	r := &failingReceiver{arrived: make(chan struct{}, 16), release: make(chan struct{}, 16)}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.hits.Add(1)
		r.arrived <- struct{}{}
		select {
		case <-r.release:
		case <-req.Context().Done():
		}
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
	}))
	t.Cleanup(r.Close)
	return r
}

// deliveryFixture is a subscription of the provider's to a failing receiver, and a deliverer
// whose clock the test sets.
type deliveryFixture struct {
	pool     *pgxpool.Pool
	w        *Deliverer
	receiver *failingReceiver
	sub      uuid.UUID
	clock    time.Time
}

func newDeliveryFixture(t *testing.T, cfg DeliveryConfig) *deliveryFixture {
	t.Helper()
	pool := dbtest.Pool(t)
	keys, err := secrets.Load(t.TempDir(), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	f := &deliveryFixture{pool: pool, receiver: newFailingReceiver(t), sub: uuid.New(), clock: time.Now().UTC()}
	keyID, sealed, err := keys.Seal([]byte("hook-secret"), f.sub[:])
	if err != nil {
		t.Fatal(err)
	}
	f.exec(t, `INSERT INTO event_subscriptions (id, name, url, secret, secret_key_id) VALUES ($1, 'flaky', $2, $3, $4)`,
		f.sub, f.receiver.URL, sealed, keyID)
	cfg.AllowPrivate = true
	f.w = NewDeliverer(pool, keys, cfg, slog.New(slog.DiscardHandler))
	f.w.now = func() time.Time { return f.clock }
	return f
}

func (f *deliveryFixture) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	if _, err := f.pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatal(err)
	}
}

func (f *deliveryFixture) scan(t *testing.T, sql string, args []any, into ...any) {
	t.Helper()
	if err := f.pool.QueryRow(context.Background(), sql, args...).Scan(into...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// delivery is one of Nimbus's own events due to the subscription, made at the clock's time.
func (f *deliveryFixture) delivery(t *testing.T) uuid.UUID {
	t.Helper()
	var id uuid.UUID
	f.scan(t, `WITH e AS (INSERT INTO event_log (source_kind, event_id, type, subject, payload)
		VALUES ('nimbus', gen_random_uuid()::text, 'deployment.failed', 'web', '{}') RETURNING id)
		INSERT INTO event_deliveries (subscription_id, event_id, created_at) SELECT $1, e.id, $2 FROM e RETURNING id`,
		[]any{f.sub, f.clock}, &id)
	return id
}

// attempt works the deliveries' jobs at once, each making its request before any is answered,
// and returns what each job said.
func (f *deliveryFixture) attempt(t *testing.T, ids ...uuid.UUID) []error {
	t.Helper()
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() { errs[i] = f.work(id) })
	}
	for range ids {
		select {
		case <-f.receiver.arrived:
		case <-t.Context().Done():
			t.Fatal("the deliveries did not reach the receiver")
		}
	}
	for range ids {
		f.receiver.release <- struct{}{}
	}
	wg.Wait()
	return errs
}

func (f *deliveryFixture) work(id uuid.UUID) error {
	return f.w.Work(context.Background(), &river.Job[DeliverArgs]{JobRow: &rivertype.JobRow{Attempt: 1}, Args: DeliverArgs{Delivery: id}})
}

func (f *deliveryFixture) status(t *testing.T, id uuid.UUID) (status string, attempts, recorded int) {
	t.Helper()
	f.scan(t, `SELECT status, attempts, (SELECT count(*) FROM event_delivery_attempts a WHERE a.delivery_id = d.id AND a.status_code = 503)
		FROM event_deliveries d WHERE id = $1`, []any{id}, &status, &attempts, &recorded)
	return status, attempts, recorded
}

func TestDeliver_ADeliveryFailingForADayIsGivenUp(t *testing.T) {
	f := newDeliveryFixture(t, DeliveryConfig{DisableAfter: 1000})
	created := f.clock
	d := f.delivery(t)

	// Failures within the day are retried: the job fails, and River tries again.
	for _, after := range []time.Duration{0, time.Hour, 23 * time.Hour} {
		f.clock = created.Add(after)
		if errs := f.attempt(t, d); errs[0] == nil || !strings.Contains(errs[0].Error(), "503") {
			t.Fatalf("%s after: the job said %v, want the receiver's 503 so that it is retried", after, errs[0])
		}
	}
	if status, attempts, recorded := f.status(t, d); status != "pending" || attempts != 3 || recorded != 3 {
		t.Fatalf("within the day: %s after %d attempts (%d recorded), want pending after 3", status, attempts, recorded)
	}

	// A day on, the job ends without another request, the delivery failed, its attempts kept.
	f.clock = created.Add(GiveUpAfter + time.Minute)
	for range 2 {
		if err := f.work(d); err != nil {
			t.Fatalf("a day on, the job said %v: it would be retried", err)
		}
	}
	if n := f.receiver.hits.Load(); n != 3 {
		t.Fatalf("the receiver was asked %d times, want 3: a delivery given up is not tried again", n)
	}
	var finished *time.Time
	f.scan(t, `SELECT finished_at FROM event_deliveries WHERE id = $1`, []any{d}, &finished)
	if status, attempts, recorded := f.status(t, d); status != "failed" || attempts != 3 || recorded != 3 || finished == nil {
		t.Fatalf("a day on: %s after %d attempts (%d recorded), finished %v; want failed after 3, finished", status, attempts, recorded, finished)
	}
}

func TestDeliver_ASubscriptionFailingForADayIsTurnedOffWithOneNotice(t *testing.T) {
	f := newDeliveryFixture(t, DeliveryConfig{DisableAfter: 3})
	start := f.clock
	var status string
	var failures int
	var reason string
	var active bool
	sub := func() {
		t.Helper()
		f.scan(t, `SELECT status, failures, disabled_reason FROM event_subscriptions WHERE id = $1`, []any{f.sub}, &status, &failures, &reason)
		active = SubscriptionStatus(status) == SubscriptionActive
	}

	// Three failures in half a day are not enough: a receiver down for hours loses nothing.
	for _, after := range []time.Duration{0, 6 * time.Hour, 12 * time.Hour} {
		f.clock = start.Add(after)
		f.attempt(t, f.delivery(t))
	}
	if sub(); !active || failures != 3 {
		t.Fatalf("after half a day of failures: active %v with %d failures, want active with 3", active, failures)
	}

	// A day after the first failure, two deliveries fail at once: one turns the subscription
	// off, and only it tells.
	f.clock = start.Add(DefaultFailingFor + time.Minute)
	d1, d2 := f.delivery(t), f.delivery(t)
	for _, err := range f.attempt(t, d1, d2) {
		if err != nil {
			t.Fatalf("a delivery of a subscription turned off is not retried, but its job said %v", err)
		}
	}
	if sub(); SubscriptionStatus(status) != SubscriptionDisabled || failures != 5 || !strings.Contains(reason, "503") {
		t.Fatalf("a day on: %s, %d failures, reason %q; want disabled after 5, saying why", status, failures, reason)
	}
	for _, d := range []uuid.UUID{d1, d2} {
		if status, attempts, recorded := f.status(t, d); status != "cancelled" || attempts != 1 || recorded != 1 {
			t.Fatalf("a delivery failing as the subscription went off: %s after %d attempts (%d recorded)", status, attempts, recorded)
		}
	}

	// Later deliveries of it end without a request, and without another notice.
	before := f.receiver.hits.Load()
	d3 := f.delivery(t)
	if err := f.work(d3); err != nil {
		t.Fatal(err)
	}
	if status, _, _ := f.status(t, d3); status != "cancelled" || f.receiver.hits.Load() != before {
		t.Fatalf("a delivery after the subscription went off: %s, the receiver asked again: %v", status, f.receiver.hits.Load() != before)
	}
	var notices int
	var subject string
	f.scan(t, `SELECT count(*), min(subject) FROM event_log WHERE type = 'subscription.disabled'`, nil, &notices, &subject)
	if notices != 1 || subject != "flaky" {
		t.Fatalf("%d subscription.disabled events (subject %q), want one naming the subscription", notices, subject)
	}
}
