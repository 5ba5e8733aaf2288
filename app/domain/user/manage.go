package user

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/domain/auth"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/audit"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// Change is what a provider admin changes of a user; a nil field stays as it is.
type Change struct {
	Email         *string `json:"email"`
	ProviderAdmin *bool   `json:"provider_admin"`
	Disabled      *bool   `json:"disabled"`
}

// Update changes a user's email, provider-admin role or whether they may sign in. Only provider
// admins may; nobody disables or demotes themselves, and the last provider admin who can sign
// in stays one. Disabling ends the user's sessions, and their API tokens stop working until
// they are enabled again.
func (s *Service) Update(ctx context.Context, actor access.Principal, id uuid.UUID, c Change) (User, error) {
	var out User
	err := s.managing(ctx, actor, id, func(q *dbgen.Queries, u dbgen.User) error {
		email, admin, disabled := u.Email, u.IsProviderAdmin, u.DisabledAt != nil
		v := &problem.ValidationError{}
		if c.Email != nil {
			email = strings.TrimSpace(*c.Email)
			if err := auth.CheckEmail("email", email); err != nil {
				return err
			}
			if other, err := q.GetUserByEmail(ctx, email); err == nil && other.ID != id {
				v.Add("email", "unique", "a user with this email already exists")
			} else if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
		}
		if c.ProviderAdmin != nil {
			admin = *c.ProviderAdmin
		}
		if c.Disabled != nil {
			disabled = *c.Disabled
		}
		if id == actor.UserID && !admin {
			v.Add("provider_admin", "self", "you cannot take your own provider-admin role: another provider admin can")
		}
		if id == actor.UserID && disabled {
			v.Add("disabled", "self", "you cannot disable your own account: another provider admin can")
		}
		if err := v.Err(); err != nil {
			return err
		}
		if u.IsProviderAdmin && u.DisabledAt == nil && (!admin || disabled) {
			if err := keepAnAdmin(ctx, q, "provider_admin"); err != nil {
				return err
			}
		}
		row, err := q.UpdateUser(ctx, dbgen.UpdateUserParams{ID: id, Email: email, IsProviderAdmin: admin})
		if db.IsUniqueViolation(err) {
			return problem.Invalid("email", "unique", "a user with this email already exists")
		}
		if err != nil {
			return err
		}
		if disabled != (u.DisabledAt != nil) {
			if row, err = q.SetUserDisabled(ctx, dbgen.SetUserDisabledParams{ID: id, Disabled: disabled}); err != nil {
				return err
			}
			if disabled {
				if err := q.EndUserSessions(ctx, dbgen.EndUserSessionsParams{UserID: id, Keep: uuid.Nil}); err != nil {
					return err
				}
			}
		}
		out = fromRow(row)
		diff := map[string]any{}
		if row.Email != u.Email {
			diff["email"] = map[string]any{"from": u.Email, "to": row.Email}
		}
		if row.IsProviderAdmin != u.IsProviderAdmin {
			diff["provider_admin"] = row.IsProviderAdmin
		}
		if disabled != (u.DisabledAt != nil) {
			diff["disabled"] = disabled
		}
		if len(diff) == 0 {
			return nil
		}
		return audit.Record(ctx, q, actor, audit.Event{Action: "user.update", TargetType: "user", TargetID: id.String(), Diff: diff})
	})
	return out, err
}

// Remove takes a user away: their memberships, sessions and API tokens end, and their email is
// free for a new account. The audit log and what they made still name them. Only provider
// admins may, never on themselves, and never the last provider admin who can sign in.
func (s *Service) Remove(ctx context.Context, actor access.Principal, id uuid.UUID) error {
	return s.managing(ctx, actor, id, func(q *dbgen.Queries, u dbgen.User) error {
		if id == actor.UserID {
			return problem.Invalid("user", "self", "you cannot remove your own account: another provider admin can")
		}
		if u.IsProviderAdmin && u.DisabledAt == nil {
			if err := keepAnAdmin(ctx, q, "user"); err != nil {
				return err
			}
		}
		for _, step := range []func(context.Context, uuid.UUID) error{q.RemoveUserMemberships, q.RevokeUserTokens, q.RemoveUser} {
			if err := step(ctx, id); err != nil {
				return err
			}
		}
		if err := q.EndUserSessions(ctx, dbgen.EndUserSessionsParams{UserID: id, Keep: uuid.Nil}); err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{Action: "user.remove", TargetType: "user", TargetID: id.String(),
			Diff: map[string]any{"email": u.Email}})
	})
}

// ResetPassword gives a user a new password chosen by a provider admin, for a user who lost
// theirs, and ends the user's sessions. One's own password is changed on one's account page,
// which asks for the current one.
func (s *Service) ResetPassword(ctx context.Context, actor access.Principal, id uuid.UUID, password string) error {
	return s.managing(ctx, actor, id, func(q *dbgen.Queries, u dbgen.User) error {
		if id == actor.UserID {
			return problem.Invalid("password", "self", "change your own password on your account page, with your current one")
		}
		if err := auth.CheckPassword("password", password); err != nil {
			return err
		}
		hash, err := auth.HashPassword(password)
		if err != nil {
			return err
		}
		if err := q.SetUserPassword(ctx, dbgen.SetUserPasswordParams{ID: id, PasswordHash: hash}); err != nil {
			return err
		}
		if err := q.EndUserSessions(ctx, dbgen.EndUserSessionsParams{UserID: id, Keep: uuid.Nil}); err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{Action: "user.password_reset", TargetType: "user", TargetID: id.String(),
			Diff: map[string]any{"email": u.Email}})
	})
}

// managing runs change on user id in one transaction, for a provider admin. Anyone else is
// refused, or told there is no such user when they may not see it.
// ResetSecondFactor removes another user's second factor, for a lost phone: they sign in with
// their password alone and set up a new one. Provider admins only.
func (s *Service) ResetSecondFactor(ctx context.Context, actor access.Principal, id uuid.UUID) error {
	return s.managing(ctx, actor, id, func(q *dbgen.Queries, u dbgen.User) error {
		if id == actor.UserID {
			return problem.Invalid("second_factor", "self", "turn off your own second factor on your account page, with a code or a recovery code")
		}
		had, err := auth.ClearSecondFactor(ctx, q, id)
		if err != nil {
			return err
		}
		if !had {
			return problem.Invalid("second_factor", "enabled", "%s has no second factor to reset", u.Email)
		}
		return audit.Record(ctx, q, actor, audit.Event{Action: "user.second_factor_reset", TargetType: "user", TargetID: id.String(),
			Diff: map[string]any{"email": u.Email}})
	})
}

func (s *Service) managing(ctx context.Context, actor access.Principal, id uuid.UUID, change func(*dbgen.Queries, dbgen.User) error) error {
	if !actor.ProviderAdmin {
		if _, err := s.Get(ctx, actor, id); err != nil {
			return err
		}
		return problem.ErrForbidden
	}
	return db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		u, err := q.GetUser(ctx, id)
		if errors.Is(err, pgx.ErrNoRows) {
			return problem.ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("user %s: %w", id, err)
		}
		return change(q, u)
	})
}

// keepAnAdmin refuses a change that would leave no provider admin who can sign in.
func keepAnAdmin(ctx context.Context, q *dbgen.Queries, field string) error {
	n, err := q.CountActiveProviderAdmins(ctx)
	if err != nil {
		return err
	}
	if n <= 1 {
		return problem.Invalid(field, "last_admin", "this is the last provider admin who can sign in: make another one first")
	}
	return nil
}
