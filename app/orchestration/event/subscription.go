package event

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/egress"
	"nimbus/app/kernel/lifecycle"
	"nimbus/app/kernel/outbox"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/audit"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// Subscription is where Nimbus sends its own events, as people and the API see it: never its
// secret.
type Subscription struct {
	ID       uuid.UUID  `json:"id"`
	TenantID *uuid.UUID `json:"tenant_id,omitempty"`
	Name     string     `json:"name"`
	URL      string     `json:"url"`
	Types    []string   `json:"types"`
	// Status is where the subscription stands; Active says whether events go to it now.
	Status SubscriptionStatus `json:"status"`
	Active bool               `json:"active"`
	// Failures counts the attempts failed in a row; DisabledReason says why a subscription
	// that kept failing was turned off.
	Failures       int       `json:"failures"`
	DisabledReason string    `json:"disabled_reason,omitempty"`
	CreatedAt      time.Time `json:"created_at"`
}

// SubscriptionStatus is where a subscription stands.
type SubscriptionStatus string

// A subscription's statuses.
const (
	SubscriptionActive SubscriptionStatus = "active"
	// SubscriptionPaused is turned off by a person.
	SubscriptionPaused SubscriptionStatus = "paused"
	// SubscriptionDisabled is turned off by Nimbus, after every attempt failed for a while.
	SubscriptionDisabled SubscriptionStatus = "disabled"
)

// SubscriptionMachine is a subscription's life; this file alone moves it.
var SubscriptionMachine = lifecycle.Machine[SubscriptionStatus]{
	Name: "subscription", Table: "event_subscriptions", Column: "status", Writer: "app/orchestration/event/subscription.go", Start: SubscriptionActive,
	Moves: map[SubscriptionStatus][]SubscriptionStatus{
		SubscriptionActive:   {SubscriptionPaused, SubscriptionDisabled},
		SubscriptionPaused:   {SubscriptionActive},
		SubscriptionDisabled: {SubscriptionActive, SubscriptionPaused},
	},
}

// NewSubscription is what a tenant admin (or, provider-wide, a provider admin) gives.
type NewSubscription struct {
	// TenantID is the tenant whose events it takes; nil takes every tenant's (provider admins).
	TenantID *uuid.UUID `json:"tenant_id"`
	Name     string     `json:"name"`
	URL      string     `json:"url"`
	Types    []string   `json:"types"`
}

// NewSubscribed is a subscription just made, with the secret its deliveries are signed with:
// shown this once.
type NewSubscribed struct {
	Subscription
	Secret string `json:"secret"`
}

// mayManage refuses an actor who may not manage the subscriptions of tenant (nil: provider-wide).
func mayManage(actor access.Principal, tenant *uuid.UUID) error {
	if tenant == nil {
		if !actor.ProviderAdmin {
			return problem.ErrForbidden
		}
		return nil
	}
	if !actor.Member(*tenant) {
		return problem.ErrNotFound
	}
	if !actor.Can(access.EventsRulesManage, *tenant) {
		return problem.ErrForbidden
	}
	return nil
}

// Subscribe makes a subscription; tenant admins for their tenant, provider admins for any or
// for all. Its secret is returned this once.
func (s *Service) Subscribe(ctx context.Context, actor access.Principal, in NewSubscription) (NewSubscribed, error) {
	if err := mayManage(actor, in.TenantID); err != nil {
		return NewSubscribed{}, err
	}
	in.Name = strings.TrimSpace(in.Name)
	v := &problem.ValidationError{}
	if !sourceName.MatchString(in.Name) {
		v.Add("name", "pattern", "must be 1–40 lower-case letters, digits and -, starting with a letter")
	}
	if u, err := url.Parse(in.URL); err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil {
		v.Add("url", "https", "must be an https:// URL without credentials in it")
	} else if len(in.URL) > 2000 {
		v.Add("url", "max", "must be at most 2000 characters")
	} else if err := s.addresses.CheckHost(u.Hostname()); err != nil {
		// A name is checked when each delivery dials it, against what it resolves to then.
		v.Add("url", "address", "%s", addressRefusal(err))
	}
	if in.Types == nil {
		in.Types = []string{}
	}
	for i, t := range in.Types {
		if _, err := path.Match(t, ""); t == "" || err != nil {
			v.Add(fmt.Sprintf("types.%d", i), "pattern", "an event type or a glob over one, such as deployment.* or stack.state_changed")
		}
	}
	if err := v.Err(); err != nil {
		return NewSubscribed{}, err
	}
	id := uuid.New()
	secret, keyID, sealed, err := s.newSecret(id)
	if err != nil {
		return NewSubscribed{}, err
	}
	var out NewSubscribed
	err = db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		tenant := uuid.NullUUID{}
		if in.TenantID != nil {
			tenant = uuid.NullUUID{UUID: *in.TenantID, Valid: true}
		}
		row, err := q.CreateSubscription(ctx, dbgen.CreateSubscriptionParams{ID: id, TenantID: tenant, Name: in.Name, Url: in.URL,
			Types: in.Types, Secret: sealed, SecretKeyID: *keyID, CreatedBy: uuid.NullUUID{UUID: actor.UserID, Valid: actor.UserID != uuid.Nil}})
		if db.IsUniqueViolation(err) {
			return problem.Invalid("name", "unique", "a subscription named %q exists already", in.Name)
		}
		if db.IsForeignKeyViolation(err) {
			return problem.Invalid("tenant_id", "exists", "no such tenant")
		}
		if err != nil {
			return err
		}
		out = NewSubscribed{Subscription: subscriptionView(row), Secret: secret}
		return audit.Record(ctx, q, actor, audit.Event{Tenant: tenant.UUID, Action: "event_subscription.create", TargetType: "event_subscription",
			TargetID: id.String(), Diff: map[string]any{"name": in.Name, "host": hostOf(in.URL), "types": in.Types}})
	})
	if err != nil {
		return NewSubscribed{}, fmt.Errorf("subscribe: %w", err)
	}
	return out, nil
}

// Subscriptions lists the subscriptions the actor may manage, of one tenant when tenant is
// not nil: then refused to those who may not manage that tenant's.
func (s *Service) Subscriptions(ctx context.Context, actor access.Principal, tenant *uuid.UUID) ([]Subscription, error) {
	if tenant != nil {
		if err := mayManage(actor, tenant); err != nil {
			return nil, err
		}
	}
	p := dbgen.ListSubscriptionsParams{Provider: actor.ProviderAdmin, Tenants: actor.TenantsWith(access.EventsRulesManage)}
	if tenant != nil {
		p.Tenant = uuid.NullUUID{UUID: *tenant, Valid: true}
	}
	rows, err := db.Queries(s.pool).ListSubscriptions(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("list subscriptions: %w", err)
	}
	out := make([]Subscription, len(rows))
	for i, r := range rows {
		out[i] = subscriptionView(r)
	}
	return out, nil
}

// Subscription reads one subscription the actor may manage.
func (s *Service) Subscription(ctx context.Context, actor access.Principal, id uuid.UUID) (Subscription, error) {
	row, err := s.subscription(ctx, db.Queries(s.pool), actor, id)
	if err != nil {
		return Subscription{}, err
	}
	return subscriptionView(row), nil
}

// subscription reads one the actor may manage.
func (s *Service) subscription(ctx context.Context, q *dbgen.Queries, actor access.Principal, id uuid.UUID) (dbgen.EventSubscription, error) {
	row, err := q.GetSubscription(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return row, problem.ErrNotFound
	}
	if err != nil {
		return row, err
	}
	return row, mayManage(actor, ptr(row.TenantID))
}

// SetSubscriptionActive turns a subscription off (paused), or on again: on again, its failures
// are forgotten. Asking for what it is already changes nothing.
func (s *Service) SetSubscriptionActive(ctx context.Context, actor access.Principal, id uuid.UUID, active bool) (Subscription, error) {
	to := SubscriptionPaused
	if active {
		to = SubscriptionActive
	}
	var out Subscription
	err := db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		row, err := s.subscription(ctx, q, actor, id)
		if err != nil {
			return err
		}
		if SubscriptionStatus(row.Status) == to {
			out = subscriptionView(row)
			return nil
		}
		if err := SubscriptionMachine.Check("subscription "+row.Name, SubscriptionStatus(row.Status), to); err != nil {
			return err
		}
		moved, err := q.MoveSubscription(ctx, dbgen.MoveSubscriptionParams{ID: id, Status: string(to), Sources: SubscriptionMachine.SourceNames(to)})
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("subscription %s moved meanwhile: %w", row.Name, lifecycle.ErrIllegalMove)
		}
		if err != nil {
			return err
		}
		row = moved
		out = subscriptionView(row)
		return audit.Record(ctx, q, actor, audit.Event{Tenant: row.TenantID.UUID, Action: "event_subscription.update",
			TargetType: "event_subscription", TargetID: id.String(), Diff: map[string]any{"name": row.Name, "active": active}})
	})
	if err != nil {
		return Subscription{}, fmt.Errorf("update subscription %s: %w", id, err)
	}
	return out, nil
}

// Unsubscribe removes a subscription and its deliveries.
func (s *Service) Unsubscribe(ctx context.Context, actor access.Principal, id uuid.UUID) error {
	return db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		row, err := s.subscription(ctx, q, actor, id)
		if err != nil {
			return err
		}
		if err := q.DeleteSubscription(ctx, id); err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{Tenant: row.TenantID.UUID, Action: "event_subscription.delete",
			TargetType: "event_subscription", TargetID: id.String(), Diff: map[string]any{"name": row.Name}})
	})
}

// Delivery is one event sent to a subscription, with every attempt.
type Delivery struct {
	ID         uuid.UUID  `json:"id"`
	Event      uuid.UUID  `json:"event_id"`
	Type       string     `json:"type"`
	Subject    string     `json:"subject,omitempty"`
	Status     string     `json:"status"`
	CreatedAt  time.Time  `json:"created_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	Attempts   []Attempt  `json:"attempts"`
}

// Attempt is one try at delivering: what the receiver answered, or why it could not.
type Attempt struct {
	N          int       `json:"attempt"`
	At         time.Time `json:"at"`
	StatusCode int       `json:"status_code,omitempty"`
	Error      string    `json:"error,omitempty"`
	TookMs     int       `json:"took_ms"`
}

// Deliveries lists a subscription's latest deliveries, newest first, with their attempts.
func (s *Service) Deliveries(ctx context.Context, actor access.Principal, id uuid.UUID) ([]Delivery, error) {
	q := db.Queries(s.pool)
	if _, err := s.subscription(ctx, q, actor, id); err != nil {
		return nil, err
	}
	rows, err := q.SubscriptionDeliveries(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("list deliveries: %w", err)
	}
	ids := make([]uuid.UUID, len(rows))
	out := make([]Delivery, len(rows))
	at := map[uuid.UUID]int{}
	for i, r := range rows {
		ids[i], at[r.ID] = r.ID, i
		out[i] = Delivery{ID: r.ID, Event: r.EventID, Type: r.EventType, Subject: r.EventSubject, Status: r.Status, CreatedAt: r.CreatedAt,
			FinishedAt: r.FinishedAt, Attempts: []Attempt{}}
	}
	attempts, err := q.DeliveryAttempts(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("list attempts: %w", err)
	}
	for _, a := range attempts {
		d := &out[at[a.DeliveryID]]
		d.Attempts = append(d.Attempts, Attempt{N: int(a.Attempt), At: a.At, StatusCode: int(a.StatusCode.Int32), Error: a.Error, TookMs: int(a.TookMs)})
	}
	return out, nil
}

// addressRefusal says why a subscription's URL may not point where it does, and for the
// operator's own networks, that the server's setting would open them.
func addressRefusal(err error) string {
	var refused *egress.Refused
	switch {
	case !errors.As(err, &refused):
		return err.Error()
	case refused.In.Reach == egress.Private:
		return err.Error() + ": deliveries go there only when the server is started with --webhooks-private"
	}
	return err.Error() + ": no delivery may go there"
}

// hostOf is where a URL points, without the path or query some receivers keep their
// credentials in: what the audit log keeps of a subscription's URL.
func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Host
}

// subscriptionFailed counts a failed attempt of a delivery, disabling the subscription once its
// attempts have failed for long enough; it reports whether the subscription takes events no
// more, and emits the news once, from the attempt that disabled it.
func subscriptionFailed(ctx context.Context, q *dbgen.Queries, arg dbgen.SubscriptionFailedParams) (bool, error) {
	sub, err := q.SubscriptionFailed(ctx, arg)
	if err != nil {
		return false, err
	}
	if SubscriptionStatus(sub.WasStatus) == SubscriptionActive && SubscriptionStatus(sub.Status) == SubscriptionDisabled {
		err = outbox.Emit(ctx, q, outbox.Event{Type: "subscription.disabled", Subject: sub.Name, Tenant: sub.TenantID.UUID,
			Data: map[string]any{"subscription": sub.ID, "reason": sub.DisabledReason}})
	}
	return SubscriptionStatus(sub.Status) != SubscriptionActive, err
}

func subscriptionView(r dbgen.EventSubscription) Subscription {
	return Subscription{ID: r.ID, TenantID: ptr(r.TenantID), Name: r.Name, URL: r.Url, Types: r.Types,
		Status: SubscriptionStatus(r.Status), Active: SubscriptionStatus(r.Status) == SubscriptionActive,
		Failures: int(r.Failures), DisabledReason: r.DisabledReason, CreatedAt: r.CreatedAt}
}
