package event

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	neturl "net/url"
	"path"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"nimbus/app/kernel/egress"
	"nimbus/app/kernel/lifecycle"
	"nimbus/app/kernel/outbox"
	"nimbus/app/kernel/secrets"
	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/jobs"
)

// DeliverArgs sends one event to one subscription.
type DeliverArgs struct {
	Delivery uuid.UUID `json:"delivery"`
}

// Kind names the job in River.
func (DeliverArgs) Kind() string { return "event_delivery" }

// InsertOpts gives a delivery enough attempts to outlast GiveUpAfter (the worker gives up then),
// in a queue of its own: a queue full of long operations never holds deliveries up, nor a slow
// receiver the operations.
func (DeliverArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 100, Queue: jobs.DeliveryQueue}
}

// Delivery's defaults.
const (
	// DefaultBackoff is the wait before the second attempt; each later one waits twice as
	// long as the last, up to MaxBackoff.
	DefaultBackoff = 30 * time.Second
	MaxBackoff     = time.Hour
	// DefaultDisableAfter is how many attempts in a row may fail, over DefaultFailingFor at
	// least, before the subscription is turned off: a receiver down for an hour loses nothing.
	DefaultDisableAfter = 30
	DefaultFailingFor   = 24 * time.Hour
	// GiveUpAfter is how long an event is retried.
	GiveUpAfter = 24 * time.Hour
)

// DeliveryConfig is how deliveries are made.
type DeliveryConfig struct {
	Backoff      time.Duration
	DisableAfter int
	// FailingFor is how long a subscription's attempts must have been failing before it is
	// turned off; DefaultFailingFor when zero, none when negative.
	FailingFor time.Duration
	// AllowPrivate lets deliveries reach the operator's own networks (egress.Private: private-use,
	// shared address space, loopback, link-local, unique-local): off, a subscription's URL
	// cannot be used to reach into the network Nimbus runs in. The other special-purpose ranges
	// (documentation, reserved, …) stay closed either way.
	AllowPrivate bool
	// TLS is the TLS configuration of deliveries (the system's roots when nil).
	TLS *tls.Config
	// Resolver finds the addresses of receivers' names (the system's when nil); whatever it
	// answers is checked as it is dialled.
	Resolver *net.Resolver
}

// Deliverer sends Nimbus's own events to subscriptions as CloudEvents (structured mode),
// signed as webhooks into Nimbus are (Sign), records every attempt, retries with a growing
// wait for GiveUpAfter, and turns off a subscription that keeps failing, saying why.
type Deliverer struct {
	river.WorkerDefaults[DeliverArgs]
	pool   *pgxpool.Pool
	keys   *secrets.Keyring
	cfg    DeliveryConfig
	client *http.Client
	// now is the clock that says when a delivery is given up and a subscription has failed
	// long enough to be turned off.
	now func() time.Time
	// log has the network's own words of every failed attempt, for operators: the delivery
	// log tenants see has only a plain category (egress.Told).
	log *slog.Logger
}

// NewDeliverer returns the worker; keys opens the subscriptions' secrets.
func NewDeliverer(pool *pgxpool.Pool, keys *secrets.Keyring, cfg DeliveryConfig, log *slog.Logger) *Deliverer {
	if cfg.Backoff <= 0 {
		cfg.Backoff = DefaultBackoff
	}
	if cfg.DisableAfter <= 0 {
		cfg.DisableAfter = DefaultDisableAfter
	}
	switch {
	case cfg.FailingFor == 0:
		cfg.FailingFor = DefaultFailingFor
	case cfg.FailingFor < 0:
		cfg.FailingFor = 0
	}
	// The address is checked as it is dialled, after the name is resolved, so that no name
	// (nor a change of its answer since the subscription was saved) can point a delivery inside.
	dialer := &net.Dialer{Timeout: 10 * time.Second, Resolver: cfg.Resolver, Control: egress.Policy{AllowPrivate: cfg.AllowPrivate}.Control}
	transport := &http.Transport{DialContext: dialer.DialContext, TLSClientConfig: cfg.TLS, TLSHandshakeTimeout: 10 * time.Second,
		MaxIdleConnsPerHost: 4, IdleConnTimeout: time.Minute}
	client := &http.Client{Transport: transport, Timeout: 15 * time.Second,
		// A redirect is an answer like any other that is not a success.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &Deliverer{pool: pool, keys: keys, cfg: cfg, client: client, now: time.Now, log: log}
}

// Timeout bounds one attempt.
func (w *Deliverer) Timeout(*river.Job[DeliverArgs]) time.Duration { return time.Minute }

// NextRetry waits Backoff, doubling with each attempt, up to MaxBackoff.
func (w *Deliverer) NextRetry(job *river.Job[DeliverArgs]) time.Time {
	wait := w.cfg.Backoff
	for i := 1; i < job.Attempt && wait < MaxBackoff; i++ {
		wait *= 2
	}
	return time.Now().Add(min(wait, MaxBackoff))
}

// DeliveryStatus is where one event's delivery to one subscription stands: pending while it is
// tried again, delivered, failed when it gave up, cancelled when its subscription was turned off.
type DeliveryStatus string

// The statuses of a delivery.
const (
	DeliveryPending   DeliveryStatus = "pending"
	Delivered         DeliveryStatus = "delivered"
	DeliveryFailed    DeliveryStatus = "failed"
	DeliveryCancelled DeliveryStatus = "cancelled"
)

// DeliveryMachine is a delivery's life; this file alone records deliveries and their attempts.
var DeliveryMachine = lifecycle.Machine[DeliveryStatus]{
	Name: "delivery", Table: "event_deliveries", Column: "status", Writer: "app/orchestration/event/deliver.go", Start: DeliveryPending,
	Moves: map[DeliveryStatus][]DeliveryStatus{DeliveryPending: {DeliveryPending, Delivered, DeliveryFailed, DeliveryCancelled}},
}

// Work makes one attempt. The request is made outside any transaction; what it got is
// recorded after.
func (w *Deliverer) Work(ctx context.Context, job *river.Job[DeliverArgs]) error {
	q := db.Queries(w.pool)
	d, err := q.GetDelivery(ctx, job.Args.Delivery)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil || DeliveryStatus(d.Status) != DeliveryPending {
		return err
	}
	switch {
	case SubscriptionStatus(d.SubscriptionStatus) != SubscriptionActive:
		return q.FinishDelivery(ctx, dbgen.FinishDeliveryParams{ID: d.ID, Status: string(DeliveryCancelled)})
	case w.now().Sub(d.CreatedAt) > GiveUpAfter:
		return q.FinishDelivery(ctx, dbgen.FinishDeliveryParams{ID: d.ID, Status: string(DeliveryFailed)})
	}
	body, err := w.body(ctx, q, d.EventID)
	if err != nil {
		return err
	}
	secret, err := w.keys.Open(d.SecretKeyID, d.Secret, d.SubscriptionID[:])
	if err != nil {
		return fmt.Errorf("open the secret of subscription %s: %w", d.SubscriptionName, err)
	}
	start := time.Now()
	code, sendErr := w.send(ctx, d.Url, secret, body)
	attempt := dbgen.RecordAttemptParams{ID: d.ID, Attempt: d.Attempts + 1, Status: string(Delivered), TookMs: int32(time.Since(start).Milliseconds())}
	if code != 0 {
		attempt.StatusCode = pgtype.Int4{Int32: int32(code), Valid: true}
	}
	// told is what the tenant sees of a failure; the error itself is for the server's log.
	var told string
	switch {
	case sendErr != nil:
		told = egress.Told(sendErr)
		w.log.Warn("event delivery failed", "delivery", d.ID, "subscription", d.SubscriptionID, "host", hostOf(d.Url), "told", told, "err", sendErr)
		sendErr = fmt.Errorf("deliver to %s: %w", hostOf(d.Url), sendErr)
	case code < 200 || code > 299:
		told = egress.Answered(code)
		sendErr = errors.New(told)
	}
	if sendErr != nil {
		attempt.Status, attempt.Error = string(DeliveryPending), told
	}
	var off bool
	err = db.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		q := db.Queries(tx)
		if sendErr == nil {
			if err := q.RecordAttempt(ctx, attempt); err != nil {
				return err
			}
			return q.SubscriptionSucceeded(ctx, d.SubscriptionID)
		}
		off, err = subscriptionFailed(ctx, q, dbgen.SubscriptionFailedParams{ID: d.SubscriptionID, At: w.now(), LimitFailures: int32(w.cfg.DisableAfter),
			LimitSpan: pgtype.Interval{Microseconds: w.cfg.FailingFor.Microseconds(), Valid: true},
			Reason:    fmt.Sprintf("turned off: every attempt failed for %s; the last: %s", w.cfg.FailingFor, told)})
		if err != nil {
			return err
		}
		if off {
			attempt.Status = string(DeliveryCancelled)
		}
		return q.RecordAttempt(ctx, attempt)
	})
	if err != nil || sendErr == nil || off {
		return err
	}
	return sendErr
}

// body is the event as a CloudEvent in structured mode.
func (w *Deliverer) body(ctx context.Context, q *dbgen.Queries, id uuid.UUID) ([]byte, error) {
	row, err := q.LoggedEvent(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("read event %s: %w", id, err)
	}
	var st outbox.Payload
	if err := json.Unmarshal(row.Payload, &st); err != nil {
		return nil, err
	}
	ce := cloudevents.New()
	ce.SetID(row.ID.String())
	ce.SetSource("nimbus")
	ce.SetType(row.Type)
	ce.SetSubject(row.Subject)
	ce.SetTime(row.ReceivedAt)
	data := map[string]any{"data": st.Data}
	for k, v := range map[string]uuid.NullUUID{"tenant_id": row.TenantID, "environment_id": row.EnvironmentID,
		"stack_instance_id": row.InstanceID, "deployment_id": row.DeploymentID} {
		if v.Valid {
			data[k] = v.UUID
		}
	}
	if err := ce.SetData(cloudevents.ApplicationJSON, data); err != nil {
		return nil, err
	}
	return json.Marshal(ce)
}

// send posts body, signed, and returns the answer's status code, or the error that kept it
// from being answered: the network's own, without the URL (whose query may hold a receiver's
// credentials).
func (w *Deliverer) send(ctx context.Context, url string, secret, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	now := time.Now()
	req.Header.Set("Content-Type", "application/cloudevents+json")
	req.Header.Set(TimestampHeader, fmt.Sprint(now.Unix()))
	req.Header.Set(SignatureHeader, Sign(secret, now, body))
	resp, err := w.client.Do(req)
	if uerr := (*neturl.Error)(nil); errors.As(err, &uerr) {
		return 0, uerr.Err
	}
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, nil
}

// deliver queues the deliveries of one of Nimbus's own events to the active subscriptions of
// its tenant and the provider-wide ones whose types take it.
func deliver(ctx context.Context, tx pgx.Tx, queue Queue, row dbgen.EventLog, tenant uuid.NullUUID) error {
	q := db.Queries(tx)
	subs, err := q.SubscriptionsFor(ctx, tenant)
	if err != nil {
		return err
	}
	var jobs []river.InsertManyParams
	for _, s := range subs {
		if !takesType(s.Types, row.Type) {
			continue
		}
		id, err := q.CreateDelivery(ctx, dbgen.CreateDeliveryParams{SubscriptionID: s.ID, EventID: row.ID})
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		if err != nil {
			return err
		}
		jobs = append(jobs, river.InsertManyParams{Args: DeliverArgs{Delivery: id}})
	}
	if len(jobs) == 0 {
		return nil
	}
	_, err = queue.InsertManyTx(ctx, tx, jobs)
	return err
}

func takesType(globs []string, typ string) bool {
	if len(globs) == 0 {
		return true
	}
	for _, g := range globs {
		if ok, _ := path.Match(g, typ); ok {
			return true
		}
	}
	return false
}
