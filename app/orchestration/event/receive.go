package event

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"nimbus/app/kernel/outbox"
	"nimbus/app/kernel/problem"
	"nimbus/app/kernel/secrets"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// MaxBody is the largest request the receiver reads.
const MaxBody = 1 << 20

// Queue queues jobs in the caller's transaction.
type Queue interface {
	InsertManyTx(ctx context.Context, tx pgx.Tx, params []river.InsertManyParams) ([]*rivertype.JobInsertResult, error)
}

// Receiver takes events from webhook sources: POST /api/v1/events/{source_id}. It checks the
// source's secret, decodes the events, writes each to the event log once and queues its
// routing in the same transaction, and answers without waiting for any state machine.
type Receiver struct {
	pool  *pgxpool.Pool
	keys  *secrets.Keyring
	queue Queue
	log   *slog.Logger
	now   func() time.Time
}

// NewReceiver returns the receiver; keys opens the sources' secrets.
func NewReceiver(pool *pgxpool.Pool, keys *secrets.Keyring, queue Queue, log *slog.Logger) *Receiver {
	return &Receiver{pool: pool, keys: keys, queue: queue, log: log, now: time.Now}
}

// Accepted is the receiver's answer: how many events were new and how many it had already.
type Accepted struct {
	Accepted   int         `json:"accepted"`
	Duplicates int         `json:"duplicates"`
	IDs        []uuid.UUID `json:"ids"`
}

// Receive answers POST /api/v1/events/{source_id}.
func (r *Receiver) Receive(c echo.Context) error {
	ctx := c.Request().Context()
	id, err := uuid.Parse(c.Param("source_id"))
	if err != nil {
		return problem.ErrNotFound
	}
	src, err := db.Queries(r.pool).GetEventSource(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && src.Kind != Webhook {
		return problem.ErrNotFound
	}
	if err != nil {
		return err
	}
	body, err := io.ReadAll(http.MaxBytesReader(c.Response(), c.Request().Body, MaxBody))
	var (
		tooLarge *http.MaxBytesError
		overLong *echo.HTTPError
		invalid  *problem.ValidationError
	)
	switch {
	case errors.As(err, &tooLarge), errors.As(err, &overLong) && overLong.Code == http.StatusRequestEntityTooLarge:
		return echo.NewHTTPError(http.StatusRequestEntityTooLarge, fmt.Sprintf("an event request carries at most %d bytes", MaxBody))
	case errors.As(err, &invalid): // a NUL in its JSON, which the log cannot keep
		return err
	case err != nil:
		return problem.Invalid("body", "read", "the body could not be read")
	}
	secret, err := r.keys.Open(*src.SecretKeyID, src.Secret, src.ID[:])
	if err != nil {
		return fmt.Errorf("open the secret of event source %s: %w", src.Name, err)
	}
	if err := verify(secret, c.Request().Header, body, r.now()); err != nil {
		r.log.Warn("event refused", "source", src.ID, "source_name", src.Name, "client", c.RealIP(), "reason", err.Error())
		return echo.NewHTTPError(http.StatusUnauthorized, "the request's secret or signature does not match this source's")
	}
	if !src.Active {
		return echo.NewHTTPError(http.StatusForbidden, "this event source is turned off")
	}
	events, err := Decode(c.Request().Header, body, r.now())
	if err != nil {
		return err
	}
	out, err := r.accept(ctx, src, events)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, out)
}

// accept writes the events that are new to the log and queues their routing, all or none.
func (r *Receiver) accept(ctx context.Context, src dbgen.EventSource, events []Event) (Accepted, error) {
	var out Accepted
	err := db.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		var err error
		out, err = Record(ctx, tx, r.queue, sourceView(src), events)
		return err
	})
	if err != nil {
		return Accepted{}, fmt.Errorf("log %d events: %w", len(events), err)
	}
	return out, nil
}

// Record writes the events of a source that are new to the log, in tx, and queues their
// routing: what the receiver does with a webhook's events, and a poller with what it saw.
// However many events there are, they are written in one statement and queued in another.
func Record(ctx context.Context, tx pgx.Tx, queue Queue, src Source, events []Event) (Accepted, error) {
	out := Accepted{IDs: []uuid.UUID{}}
	if len(events) == 0 {
		return out, nil
	}
	batch := make([]batchEvent, len(events))
	for i, e := range events {
		payload, err := json.Marshal(outbox.Payload{Source: e.Source, Data: outbox.Redacted(e.Data), Target: e.Target})
		if err != nil {
			return out, err
		}
		batch[i] = batchEvent{EventID: e.ID, Type: e.Type, Subject: e.Subject, OccurredAt: e.Time, Payload: payload}
		if e.Time != nil {
			// Postgres keeps microseconds; a parameter would be cut to them, not rounded.
			at := e.Time.Truncate(time.Microsecond)
			batch[i].OccurredAt = &at
		}
	}
	rows, err := json.Marshal(batch)
	if err != nil {
		return out, err
	}
	written, err := db.Queries(tx).LogEvents(ctx, dbgen.LogEventsParams{SourceID: src.ID, LandingZoneID: src.LandingZoneID,
		SourceKind: src.Kind, Events: rows})
	if err != nil {
		return out, err
	}
	slices.SortFunc(written, func(a, b dbgen.LogEventsRow) int { return strings.Compare(a.EventID, b.EventID) })
	out.Accepted, out.Duplicates = len(written), len(events)-len(written)
	route := make([]river.InsertManyParams, 0, len(written))
	for _, w := range written {
		out.IDs = append(out.IDs, w.ID)
		route = append(route, river.InsertManyParams{Args: RouteArgs{Event: w.ID}})
	}
	if len(route) == 0 {
		return out, nil
	}
	_, err = queue.InsertManyTx(ctx, tx, route)
	return out, err
}

// batchEvent is one event as LogEvents takes it.
type batchEvent struct {
	EventID    string          `json:"event_id"`
	Type       string          `json:"type"`
	Subject    string          `json:"subject"`
	OccurredAt *time.Time      `json:"occurred_at"`
	Payload    json.RawMessage `json:"payload"`
}
