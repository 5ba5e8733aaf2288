package auth

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/audit"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// ChangePassword sets the actor's own password, once they give their current one, and ends
// every other session of theirs: whoever else knew the old password is signed out, and the
// session making the change (keep) goes on.
func (s *Service) ChangePassword(ctx context.Context, actor access.Principal, keep uuid.UUID, current, next string) error {
	if actor.UserID == uuid.Nil {
		return problem.ErrForbidden
	}
	q := db.Queries(s.pool)
	u, err := q.GetUser(ctx, actor.UserID)
	if errors.Is(err, pgx.ErrNoRows) {
		return problem.ErrForbidden
	}
	if err != nil {
		return fmt.Errorf("change password: %w", err)
	}
	v := &problem.ValidationError{}
	if current == "" {
		v.Add("current_password", "required", "enter your current password")
	} else if ok, err := s.verifyPassword(ctx, u.PasswordHash, current); err != nil {
		return fmt.Errorf("change password: %w", err)
	} else if !ok {
		v.Add("current_password", "credentials", "is not your current password")
	}
	if err := CheckPassword("new_password", next); err != nil {
		return err
	}
	if next == current {
		v.Add("new_password", "changed", "is your current password: choose another")
	}
	if err := v.Err(); err != nil {
		return err
	}
	hash, err := HashPassword(next)
	if err != nil {
		return fmt.Errorf("change password: %w", err)
	}
	return db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		if err := q.SetUserPassword(ctx, dbgen.SetUserPasswordParams{ID: u.ID, PasswordHash: hash}); err != nil {
			return err
		}
		if err := q.EndUserSessions(ctx, dbgen.EndUserSessionsParams{UserID: u.ID, Keep: keep}); err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{Action: "user.password_change", TargetType: "user", TargetID: u.ID.String()})
	})
}

// HeldElevation is a role the actor holds in a tenant until EndsAt, granted by a provider admin.
type HeldElevation struct {
	ID       uuid.UUID   `json:"id"`
	TenantID uuid.UUID   `json:"tenant_id"`
	Tenant   string      `json:"tenant"`
	Role     access.Role `json:"role"`
	Reason   string      `json:"reason"`
	EndsAt   time.Time   `json:"ends_at"`
}

// Elevations lists the elevations the actor holds now, soonest ending first; nobody sees
// another's here.
func (s *Service) Elevations(ctx context.Context, actor access.Principal) ([]HeldElevation, error) {
	rows, err := db.Queries(s.pool).HeldElevations(ctx, actor.UserID)
	if err != nil {
		return nil, fmt.Errorf("list held elevations: %w", err)
	}
	out := make([]HeldElevation, len(rows))
	for i, r := range rows {
		out[i] = HeldElevation{ID: r.ID, TenantID: r.TenantID, Tenant: r.TenantName, Role: access.Role(r.Role), Reason: r.Reason, EndsAt: r.EndsAt}
	}
	return out, nil
}

// TenantChoice is a tenant a token may be confined to, with the role the actor holds there.
type TenantChoice struct {
	ID   uuid.UUID
	Name string
	Role access.Role
}

// TokenTenants lists the tenants the actor holds a role in, by membership or elevation: those
// a token of theirs may be confined to.
func (s *Service) TokenTenants(ctx context.Context, actor access.Principal) ([]TenantChoice, error) {
	q := db.Queries(s.pool)
	members, err := q.ListMembershipsOfUser(ctx, actor.UserID)
	if err != nil {
		return nil, fmt.Errorf("list tenants for tokens: %w", err)
	}
	held, err := q.HeldElevations(ctx, actor.UserID)
	if err != nil {
		return nil, fmt.Errorf("list tenants for tokens: %w", err)
	}
	var out []TenantChoice
	add := func(id uuid.UUID, name string) {
		role, ok := actor.Roles[id]
		if ok && !slices.ContainsFunc(out, func(c TenantChoice) bool { return c.ID == id }) {
			out = append(out, TenantChoice{ID: id, Name: name, Role: role})
		}
	}
	for _, m := range members {
		add(m.TenantID, m.TenantName)
	}
	for _, e := range held {
		add(e.TenantID, e.TenantName)
	}
	return out, nil
}
