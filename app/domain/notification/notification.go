package notification

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/cursor"
	"nimbus/app/kernel/problem"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// Notification is one entry of a person's inbox.
type Notification struct {
	ID        uuid.UUID  `json:"id"`
	Kind      string     `json:"kind"`
	Title     string     `json:"title"`
	Link      string     `json:"link"`
	TenantID  *uuid.UUID `json:"tenant_id,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	ReadAt    *time.Time `json:"read_at,omitempty"`
	// MailFailed says why its mail could not be delivered, after every attempt; empty when
	// it was, or is still being tried, or none was sent.
	MailFailed string `json:"mail_failed,omitempty"`
}

// Place is where the notification stands in its list, for the next page's cursor.
func (n Notification) Place() cursor.Cursor { return cursor.Cursor{At: n.CreatedAt, ID: n.ID} }

// Service reads and marks each person's own notifications: nobody reads another's inbox, so
// every method works on the actor's alone.
type Service struct{ pool *pgxpool.Pool }

// NewService returns the service.
func NewService(pool *pgxpool.Pool) *Service { return &Service{pool: pool} }

// Filter picks a page of the inbox.
type Filter struct {
	Unread bool
	After  cursor.Cursor
	Limit  int
}

// List is a page of the actor's notifications, newest first.
func (s *Service) List(ctx context.Context, actor access.Principal, f Filter) ([]Notification, error) {
	if f.Limit < 1 || f.Limit > cursor.MaxRows {
		f.Limit = cursor.MaxRows
	}
	arg := dbgen.ListNotificationsParams{UserID: actor.UserID, Unread: f.Unread, AfterID: f.After.ID, MaxRows: int32(f.Limit)}
	if !f.After.IsZero() {
		arg.AfterAt = &f.After.At
	}
	rows, err := db.Queries(s.pool).ListNotifications(ctx, arg)
	if err != nil {
		return nil, fmt.Errorf("list notifications: %w", err)
	}
	out := make([]Notification, len(rows))
	for i, r := range rows {
		out[i] = view(r.Notification)
		out[i].MailFailed = r.MailError
	}
	return out, nil
}

// Unread counts the actor's unread notifications, for every page's header.
func (s *Service) Unread(ctx context.Context, actor access.Principal) (int, error) {
	n, err := db.Queries(s.pool).CountUnreadNotifications(ctx, actor.UserID)
	return int(n), err
}

// MarkRead marks one of the actor's notifications read; another's is not found.
func (s *Service) MarkRead(ctx context.Context, actor access.Principal, id uuid.UUID) (Notification, error) {
	r, err := db.Queries(s.pool).MarkNotificationRead(ctx, dbgen.MarkNotificationReadParams{ID: id, UserID: actor.UserID})
	if errors.Is(err, pgx.ErrNoRows) {
		return Notification{}, problem.ErrNotFound
	}
	if err != nil {
		return Notification{}, fmt.Errorf("mark notification %s read: %w", id, err)
	}
	return view(r), nil
}

// MarkAllRead marks every notification of the actor read and says how many were not.
func (s *Service) MarkAllRead(ctx context.Context, actor access.Principal) (int, error) {
	n, err := db.Queries(s.pool).MarkAllNotificationsRead(ctx, actor.UserID)
	if err != nil {
		return 0, fmt.Errorf("mark notifications read: %w", err)
	}
	return int(n), nil
}

// Choice is what a person takes of one kind.
type Choice struct {
	Kind  string `json:"kind"`
	Label string `json:"label"`
	Inbox bool   `json:"inbox"`
	Email bool   `json:"email"`
}

// Preferences is what a person takes: each kind, in the inbox and by mail, and whether mails
// come as one daily digest.
type Preferences struct {
	Kinds  []Choice `json:"kinds"`
	Digest bool     `json:"daily_digest"`
}

// Preferences reads the actor's preferences, each kind's default where they never chose.
func (s *Service) Preferences(ctx context.Context, actor access.Principal) (Preferences, error) {
	q := db.Queries(s.pool)
	rows, err := q.NotificationPreferences(ctx, actor.UserID)
	if err != nil {
		return Preferences{}, fmt.Errorf("read notification preferences: %w", err)
	}
	chosen := map[string]dbgen.NotificationPreference{}
	for _, r := range rows {
		chosen[r.Kind] = r
	}
	var p Preferences
	for _, k := range Kinds {
		c := Choice{Kind: k.Type, Label: k.Label, Inbox: k.On, Email: k.On}
		if r, ok := chosen[k.Type]; ok {
			c.Inbox, c.Email = r.Inbox, r.Email
		}
		p.Kinds = append(p.Kinds, c)
	}
	p.Digest, err = q.WantsDigest(ctx, actor.UserID)
	return p, err
}

// SetPreferences records the actor's choices; a kind left out keeps what it was. A kind Nimbus
// does not make is refused by name.
func (s *Service) SetPreferences(ctx context.Context, actor access.Principal, p Preferences) error {
	for _, c := range p.Kinds {
		if _, ok := kindOf(c.Kind); !ok {
			return problem.Invalid("kinds", "known", "%q is no kind of notification; the kinds are those the preferences list", c.Kind)
		}
	}
	return db.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := db.Queries(tx)
		for _, c := range p.Kinds {
			err := q.SetNotificationPreference(ctx, dbgen.SetNotificationPreferenceParams{UserID: actor.UserID, Kind: c.Kind, Inbox: c.Inbox, Email: c.Email})
			if err != nil {
				return fmt.Errorf("set notification preference %s: %w", c.Kind, err)
			}
		}
		if p.Digest {
			return q.StartDigest(ctx, actor.UserID)
		}
		return q.StopDigest(ctx, actor.UserID)
	})
}

func view(r dbgen.Notification) Notification {
	n := Notification{ID: r.ID, Kind: r.Kind, Title: r.Title, Link: r.Link, CreatedAt: r.CreatedAt, ReadAt: r.ReadAt}
	if r.TenantID.Valid {
		n.TenantID = &r.TenantID.UUID
	}
	return n
}
