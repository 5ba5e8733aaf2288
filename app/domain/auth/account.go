package auth

import (
	"context"
	"errors"
	"fmt"

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
	q := dbgen.New(s.pool)
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
