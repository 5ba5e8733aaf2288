package event

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"nimbus/app/domain/stack"
	"nimbus/app/kernel/outbox"
	"nimbus/app/platform/tracing"
	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/jobs"
)

// The outcomes of routing an event, as the log records them.
const (
	Pending   = "pending"
	Unrouted  = "unrouted"  // it names nothing Nimbus knows in its source's landing zone
	Unmatched = "unmatched" // no rule of its instance's version takes it
	Refused   = "refused"   // a rule took it, and the instance's state does not take the trigger
	Signalled = "signalled" // a rule took it, and its trigger is queued on the instance
)

// RouteArgs routes one logged event.
type RouteArgs struct {
	Event uuid.UUID `json:"event"`
}

// Kind names the job in River.
func (RouteArgs) Kind() string { return "event_route" }

// InsertOpts puts routing in a queue of its own, so that a queue full of long operations never
// holds up an event.
func (RouteArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: jobs.EventQueue} }

// Signaller queues a trigger on a stack instance in the caller's transaction; an error that
// refuse reports true for is a refusal in words (the state does not take it), not a failure.
type Signaller interface {
	Signal(ctx context.Context, tx pgx.Tx, queue jobs.Queue, id uuid.UUID, trigger, source string, detail any) (uuid.UUID, error)
}

// Router finds a logged event's target and sends its instance the trigger of the first rule of
// the instance's version that takes the event; Nimbus's own events also reach the reactions
// that wait for their type. Everything it finds is written on the event's log row, in one
// transaction with the trigger queued and the reactions' writes.
type Router struct {
	river.WorkerDefaults[RouteArgs]
	pool      *pgxpool.Pool
	signals   Signaller
	refusal   func(error) bool
	reactions map[string][]outbox.Reaction
}

// NewRouter returns the router; refusal tells a refused trigger from a failure.
func NewRouter(pool *pgxpool.Pool, signals Signaller, refusal func(error) bool) *Router {
	return &Router{pool: pool, signals: signals, refusal: refusal, reactions: map[string][]outbox.Reaction{}}
}

// Reacting returns the router with r run for each of Nimbus's own events of type typ.
func (w *Router) Reacting(typ string, r outbox.Reaction) *Router {
	w.reactions[typ] = append(w.reactions[typ], r)
	return w
}

// Timeout bounds routing one event, which reads and queues.
func (w *Router) Timeout(*river.Job[RouteArgs]) time.Duration { return time.Minute }

// Work routes the event.
func (w *Router) Work(ctx context.Context, job *river.Job[RouteArgs]) error {
	// The job's span names the event; the transition it starts is a child of it.
	ctx = tracing.Tag(ctx, tracing.EventID.String(job.Args.Event.String()))
	return w.routeOne(ctx, job.Args.Event)
}

// routeOne routes an event once: one routed already, or being routed, is let be.
func (w *Router) routeOne(ctx context.Context, id uuid.UUID) error {
	queue, err := jobs.FromContext(ctx)
	if err != nil {
		return err
	}
	return db.BeginFunc(ctx, w.pool, func(tx pgx.Tx) error {
		q := db.Queries(tx)
		row, err := q.LockLoggedEvent(ctx, id)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil || row.Outcome != Pending {
			return err
		}
		// What the event was written about stays when the router finds no target: Nimbus's own
		// events about an environment name no instance nor deployment.
		r := dbgen.RouteEventParams{ID: row.ID, TenantID: row.TenantID, EnvironmentID: row.EnvironmentID, InstanceID: row.InstanceID,
			DeploymentID: row.DeploymentID}
		w.route(ctx, tx, queue, row, &r)
		if err := q.RouteEvent(ctx, r); err != nil {
			return err
		}
		if row.SourceKind != Nimbus {
			return nil
		}
		if err := w.react(ctx, tx, row); err != nil {
			return err
		}
		return deliver(ctx, tx, queue, row, r.TenantID)
	})
}

// react runs the reactions to one of Nimbus's own events. One that fails leaves the event
// waiting, with everything the others did undone, for the next sweep to route again.
func (w *Router) react(ctx context.Context, tx pgx.Tx, row dbgen.EventLog) error {
	reactions := w.reactions[row.Type]
	if len(reactions) == 0 {
		return nil
	}
	var p struct {
		Data map[string]any `json:"data"`
	}
	if err := json.Unmarshal(row.Payload, &p); err != nil {
		return fmt.Errorf("read event %s for its reactions: %w", row.ID, err)
	}
	e := outbox.Logged{EventID: row.ID, Type: row.Type, Subject: row.Subject, Tenant: row.TenantID.UUID, Environment: row.EnvironmentID.UUID,
		Instance: row.InstanceID.UUID, Deployment: row.DeploymentID.UUID, Data: p.Data}
	for _, react := range reactions {
		if err := react(ctx, tx, e); err != nil {
			return fmt.Errorf("react to %s event %s: %w", row.Type, row.ID, err)
		}
	}
	return nil
}

// route fills in r: the target, the rule and the outcome.
func (w *Router) route(ctx context.Context, tx pgx.Tx, queue jobs.Queue, row dbgen.EventLog, r *dbgen.RouteEventParams) {
	var st outbox.Payload
	if err := json.Unmarshal(row.Payload, &st); err != nil {
		r.Outcome, r.Detail = Unrouted, "its payload cannot be read"
		return
	}
	// A source reaches what lives in its landing zone; Nimbus's own events name what they tell
	// of, or nothing a rule could take.
	zone := row.LandingZoneID
	if row.SourceKind == Nimbus {
		if st.Target == (outbox.Target{}) {
			r.Outcome, r.Detail = Unmatched, "it is about no stack instance"
			return
		}
		zone = uuid.NullUUID{}
	}
	t, err := findTarget(ctx, db.Queries(tx), zone, st.Target, row.Subject)
	if err != nil {
		r.Outcome, r.Detail = Unrouted, err.Error()
		return
	}
	r.TenantID, r.EnvironmentID = uuid.NullUUID{UUID: t.tenant, Valid: true}, uuid.NullUUID{UUID: t.environment, Valid: true}
	if t.deployment != uuid.Nil {
		r.DeploymentID = uuid.NullUUID{UUID: t.deployment, Valid: true}
	}
	if t.instance == uuid.Nil {
		r.Outcome, r.Detail = Unmatched, "its deployment belongs to no stack instance: only stack instances have routing rules"
		return
	}
	r.InstanceID = uuid.NullUUID{UUID: t.instance, Valid: true}
	if row.SourceKind == Nimbus && strings.HasPrefix(row.Type, "stack.") {
		// An instance's own state changes would otherwise be able to move it for ever.
		r.Outcome, r.Detail = Unmatched, "an instance's own changes are not routed back to it"
		return
	}
	def, err := stack.LoadVersion(ctx, db.Queries(tx), t.stack, t.version)
	if err != nil {
		r.Outcome, r.Detail = Unmatched, "its instance's stack version cannot be read"
		return
	}
	e := Event{ID: row.EventID, Type: row.Type, Subject: row.Subject, Source: st.Source, Time: row.OccurredAt, Data: st.Data}
	var failed []string
	for i, rule := range def.Routes {
		takes, err := rule.Takes(ctx, row.SourceKind, row.Type, e.Fields())
		if err != nil {
			failed = append(failed, fmt.Sprintf("rule %d: %v", i+1, err))
			continue
		}
		if !takes {
			continue
		}
		r.RulePosition, r.Trigger = pgtype.Int4{Int32: int32(i), Valid: true}, &rule.Trigger
		w.signal(ctx, tx, queue, t.instance, rule.Trigger, row, r)
		return
	}
	r.Outcome = Unmatched
	r.Detail = fmt.Sprintf("none of the %d rules of version %d takes it", len(def.Routes), t.version)
	if len(failed) > 0 {
		r.Detail += "; " + strings.Join(failed, "; ")
	}
}

// signal queues the trigger in a savepoint, so that a refusal leaves the event's own row to be
// written.
func (w *Router) signal(ctx context.Context, tx pgx.Tx, queue jobs.Queue, instance uuid.UUID, trigger string, row dbgen.EventLog, r *dbgen.RouteEventParams) {
	sp, err := tx.Begin(ctx)
	if err != nil {
		r.Outcome, r.Detail = Refused, err.Error()
		return
	}
	run, err := w.signals.Signal(ctx, sp, queue, instance, trigger, "event", map[string]any{"event": row.ID, "type": row.Type})
	if err == nil {
		err = sp.Commit(ctx)
	}
	if err != nil {
		_ = sp.Rollback(ctx)
		r.Outcome, r.Detail = Refused, err.Error()
		if !w.refusal(err) {
			r.Detail = "the trigger could not be queued: " + err.Error()
		}
		return
	}
	r.Outcome, r.RunID = Signalled, uuid.NullUUID{UUID: run, Valid: true}
}

// target is what an event was found to name.
type target struct {
	tenant, environment, deployment, instance, stack uuid.UUID
	version                                          int
}

// findTarget looks for what an event names within its source's landing zone: an instance or a
// deployment by ID, else a resource by an output's value or a URN; the subject is tried as
// each of those when the event names nothing else.
func findTarget(ctx context.Context, q *dbgen.Queries, zone uuid.NullUUID, named outbox.Target, subject string) (target, error) {
	if named == (outbox.Target{}) {
		named = outbox.Target{Instance: subject, Deployment: subject, Resource: subject}
	}
	if id, err := uuid.Parse(named.Instance); err == nil {
		if t, err := instanceTarget(ctx, q, zone, id); err == nil || !errors.Is(err, pgx.ErrNoRows) {
			return t, err
		}
	}
	if id, err := uuid.Parse(named.Deployment); err == nil {
		d, err := q.EventTargetDeployment(ctx, dbgen.EventTargetDeploymentParams{ID: id, Zone: zone})
		if err == nil {
			return deploymentTarget(ctx, q, zone, d.ID, d.TenantID, d.EnvironmentID, d.StackInstanceID)
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return target{}, err
		}
	}
	if named.Resource != "" {
		found, err := q.EventTargetResource(ctx, dbgen.EventTargetResourceParams{Zone: zone, Resource: named.Resource})
		if err != nil {
			return target{}, err
		}
		switch len(found) {
		case 1:
			d := found[0]
			return deploymentTarget(ctx, q, zone, d.ID, d.TenantID, d.EnvironmentID, d.StackInstanceID)
		case 2:
			return target{}, fmt.Errorf("more than one deployment holds resource %q", named.Resource)
		}
	}
	return target{}, errors.New("it names no stack instance, deployment or resource of this landing zone")
}

func instanceTarget(ctx context.Context, q *dbgen.Queries, zone uuid.NullUUID, id uuid.UUID) (target, error) {
	i, err := q.EventTargetInstance(ctx, dbgen.EventTargetInstanceParams{ID: id, Zone: zone})
	if err != nil {
		return target{}, err
	}
	return target{tenant: i.TenantID, environment: i.EnvironmentID, instance: i.ID, stack: i.StackID, version: int(i.Version)}, nil
}

func deploymentTarget(ctx context.Context, q *dbgen.Queries, zone uuid.NullUUID, id, tenant, env uuid.UUID, inst uuid.NullUUID) (target, error) {
	if !inst.Valid {
		return target{tenant: tenant, environment: env, deployment: id}, nil
	}
	t, err := instanceTarget(ctx, q, zone, inst.UUID)
	t.deployment = id
	return t, err
}
