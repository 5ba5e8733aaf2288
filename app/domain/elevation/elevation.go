// Package elevation grants people a role in a tenant for a while: a provider admin gives it
// with a reason, it adds to whatever role they hold (never lowering one), and it ends by
// itself at its end time or earlier when revoked. The role is read with the user's
// memberships at every request (package auth), so an ending takes effect at once.
package elevation

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/audit"
	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/jobs"
)

// How long an elevation may last.
const (
	MinDuration = 15 * time.Minute
	MaxDuration = 7 * 24 * time.Hour
)

// Recent is how long an ended elevation stays on the elevations page.
const Recent = 30 * 24 * time.Hour

// Elevation is a role granted to a user in a tenant until EndsAt.
type Elevation struct {
	ID        uuid.UUID   `json:"id"`
	UserID    uuid.UUID   `json:"user_id"`
	Email     string      `json:"email"`
	TenantID  uuid.UUID   `json:"tenant_id"`
	Tenant    string      `json:"tenant"`
	Role      access.Role `json:"role"`
	Reason    string      `json:"reason"`
	GrantedBy string      `json:"granted_by"`
	CreatedAt time.Time   `json:"created_at"`
	EndsAt    time.Time   `json:"ends_at"`
	Status    Status      `json:"status"`
	// Why, EndedAt and EndedBy say how it ended; empty while it is active.
	Why     Why        `json:"why,omitempty"`
	EndedAt *time.Time `json:"ended_at,omitempty"`
	EndedBy string     `json:"ended_by,omitempty"`
}

func fromRow(r dbgen.ListElevationsRow) Elevation {
	e := Elevation{ID: r.Elevation.ID, UserID: r.Elevation.UserID, Email: r.UserEmail, TenantID: r.Elevation.TenantID, Tenant: r.TenantName,
		Role: access.Role(r.Elevation.Role), Reason: r.Elevation.Reason, GrantedBy: r.GrantedByEmail, CreatedAt: r.Elevation.CreatedAt,
		EndsAt: r.Elevation.EndsAt, Status: Status(r.Elevation.Status), EndedAt: r.Elevation.EndedAt, EndedBy: r.EndedByEmail}
	if r.Elevation.EndedWhy != nil {
		e.Why = Why(*r.Elevation.EndedWhy)
	}
	return e
}

// Grant is what a provider admin grants: Role to the user in the tenant for Duration, for Reason.
type Grant struct {
	UserID, TenantID uuid.UUID
	Role             access.Role
	Duration         time.Duration
	Reason           string
}

// Service grants, lists and ends elevations.
type Service struct {
	pool  *pgxpool.Pool
	queue jobs.Queue
}

// NewService returns the service; queue schedules each elevation's end.
func NewService(pool *pgxpool.Pool, queue jobs.Queue) *Service {
	return &Service{pool: pool, queue: queue}
}

// Grant gives a user a role in a tenant for a while; provider admins alone may.
func (s *Service) Grant(ctx context.Context, actor access.Principal, g Grant) (Elevation, error) {
	if !actor.ProviderAdmin {
		return Elevation{}, problem.ErrForbidden
	}
	g.Reason = strings.TrimSpace(g.Reason)
	v := &problem.ValidationError{}
	if !g.Role.Valid() {
		v.Add("role", "one_of", "must be one of read_only, user or tenant_admin")
	}
	switch {
	case g.Duration < MinDuration:
		v.Add("duration", "min", "must be at least 15 minutes")
	case g.Duration > MaxDuration:
		v.Add("duration", "max", "must be at most 7 days")
	}
	switch {
	case g.Reason == "":
		v.Add("reason", "required", "say why the role is granted")
	case utf8.RuneCountInString(g.Reason) > 500:
		v.Add("reason", "max_length", "must be at most 500 characters")
	}
	q := db.Queries(s.pool)
	u, err := q.GetUser(ctx, g.UserID)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		v.Add("user_id", "exists", "no user has this ID")
	case err != nil:
		return Elevation{}, fmt.Errorf("grant elevation: %w", err)
	case u.DisabledAt != nil:
		v.Add("user_id", "enabled", "this user's account is disabled")
	}
	t, err := q.GetTenant(ctx, g.TenantID)
	switch {
	case errors.Is(err, pgx.ErrNoRows) || err == nil && t.System:
		v.Add("tenant_id", "exists", "no tenant has this ID")
	case err != nil:
		return Elevation{}, fmt.Errorf("grant elevation: %w", err)
	}
	if err := v.Err(); err != nil {
		return Elevation{}, err
	}
	var row dbgen.Elevation
	err = db.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		row, err = grant(ctx, tx, s.queue, actor, dbgen.CreateElevationParams{UserID: u.ID, TenantID: t.ID, Role: string(g.Role), Reason: g.Reason,
			GrantedBy: uuid.NullUUID{UUID: actor.UserID, Valid: actor.UserID != uuid.Nil}, EndsAt: time.Now().Add(g.Duration)}, u.Email)
		return err
	})
	if err != nil {
		return Elevation{}, fmt.Errorf("grant elevation: %w", err)
	}
	return fromRow(dbgen.ListElevationsRow{Elevation: row, UserEmail: u.Email, TenantName: t.Name, GrantedByEmail: actor.Email}), nil
}

// List returns the elevations in force and those ended in the last 30 days, for provider admins.
func (s *Service) List(ctx context.Context, actor access.Principal) ([]Elevation, error) {
	if !actor.ProviderAdmin {
		return nil, problem.ErrForbidden
	}
	rows, err := db.Queries(s.pool).ListElevations(ctx, time.Now().Add(-Recent))
	if err != nil {
		return nil, fmt.Errorf("list elevations: %w", err)
	}
	out := make([]Elevation, len(rows))
	for i, r := range rows {
		out[i] = fromRow(r)
	}
	return out, nil
}

// Revoke ends an elevation before its time; provider admins alone may, and to anyone else
// the elevation does not exist. One that has already ended is refused on its status.
func (s *Service) Revoke(ctx context.Context, actor access.Principal, id uuid.UUID) error {
	if !actor.ProviderAdmin {
		return problem.ErrNotFound
	}
	return db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		e, err := q.LockElevation(ctx, id)
		if errors.Is(err, pgx.ErrNoRows) {
			return problem.ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("revoke elevation: %w", err)
		}
		_, err = end(ctx, q, actor, e.Elevation, Revoked, e.UserEmail)
		return err
	})
}

// Expire ends the elevation id when its end time has come and it is still active, as the
// system; it reports whether it did.
func (s *Service) Expire(ctx context.Context, id uuid.UUID) (bool, error) {
	done := false
	err := db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		e, err := q.LockElevation(ctx, id)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // gone with its user or tenant
		}
		if err != nil {
			return err
		}
		if Machine.Ended(Status(e.Elevation.Status)) || time.Now().Before(e.Elevation.EndsAt) {
			return nil
		}
		done = true
		_, err = end(ctx, q, audit.System, e.Elevation, Expired, e.UserEmail)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("expire elevation %s: %w", id, err)
	}
	return done, nil
}

// ExpireDue ends every active elevation past its end time, a hundred at most, and reports how
// many it ended: the backstop of the job each elevation schedules for its end.
func (s *Service) ExpireDue(ctx context.Context) (int, error) {
	ids, err := db.Queries(s.pool).DueElevations(ctx)
	if err != nil {
		return 0, fmt.Errorf("due elevations: %w", err)
	}
	n := 0
	for _, id := range ids {
		done, err := s.Expire(ctx, id)
		if err != nil {
			return n, err
		}
		if done {
			n++
		}
	}
	return n, nil
}

// Choice is a user or a tenant the grant form offers.
type Choice struct {
	ID   uuid.UUID
	Name string
}

// Choices lists the users and the tenants an elevation may be granted to and in, for
// provider admins.
func (s *Service) Choices(ctx context.Context, actor access.Principal) (users, tenants []Choice, err error) {
	if !actor.ProviderAdmin {
		return nil, nil, problem.ErrForbidden
	}
	q := db.Queries(s.pool)
	us, err := q.ListUsers(ctx, dbgen.ListUsersParams{AllUsers: true})
	if err != nil {
		return nil, nil, fmt.Errorf("list users: %w", err)
	}
	for _, u := range us {
		if u.DisabledAt == nil {
			users = append(users, Choice{ID: u.ID, Name: u.Email})
		}
	}
	ts, err := q.ListTenants(ctx, dbgen.ListTenantsParams{AllTenants: true})
	if err != nil {
		return nil, nil, fmt.Errorf("list tenants: %w", err)
	}
	for _, t := range ts {
		tenants = append(tenants, Choice{ID: t.ID, Name: t.Name})
	}
	return users, tenants, nil
}
