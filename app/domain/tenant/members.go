package tenant

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/audit"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// Members lists a tenant's members; the actor must be able to see the tenant.
func (s *Service) Members(ctx context.Context, actor access.Principal, tenantID uuid.UUID) ([]Member, error) {
	if _, err := s.Get(ctx, actor, tenantID); err != nil {
		return nil, err
	}
	rows, err := db.Queries(s.pool).ListMembers(ctx, tenantID)
	if err != nil {
		return nil, fmt.Errorf("list members: %w", err)
	}
	out := make([]Member, len(rows))
	for i, r := range rows {
		out[i] = Member{UserID: r.UserID, Email: r.Email, Role: access.Role(r.Role), CreatedAt: r.CreatedAt}
	}
	return out, nil
}

// SetMember adds a user to a tenant with role, or changes the role of a member. Tenant admins
// of that tenant and provider admins may.
func (s *Service) SetMember(ctx context.Context, actor access.Principal, tenantID, userID uuid.UUID, role access.Role) (Member, error) {
	if err := s.mayManage(ctx, actor, tenantID); err != nil {
		return Member{}, err
	}
	var out Member
	err := db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		// The tenant the member is set in is the page's own: deleted since mayManage read it,
		// it is not found, as it would be on a fresh load, rather than a choice to correct.
		if _, err := q.ShareTenant(ctx, tenantID); errors.Is(err, pgx.ErrNoRows) {
			return problem.ErrNotFound
		} else if err != nil {
			return err
		}
		var err error
		out, err = Join(ctx, q, actor, tenantID, userID, role)
		return err
	})
	if err != nil {
		return Member{}, fmt.Errorf("set member: %w", err)
	}
	return out, nil
}

// Join gives a user a role in a tenant, or changes the role they have, and audits it, using q,
// bound to the caller's transaction. The caller checks that the actor may manage the
// tenant's members.
func Join(ctx context.Context, q *dbgen.Queries, actor access.Principal, tenantID, userID uuid.UUID, role access.Role) (Member, error) {
	if !role.Valid() {
		return Member{}, problem.Invalid("role", "one_of", "choose read-only, user or tenant admin")
	}
	t, err := q.ShareTenant(ctx, tenantID)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && t.System {
		return Member{}, problem.Invalid("tenant_id", "exists", "choose one of the tenants listed")
	}
	if err != nil {
		return Member{}, err
	}
	u, err := q.GetUser(ctx, userID)
	if errors.Is(err, pgx.ErrNoRows) {
		return Member{}, problem.Invalid("user_id", "exists", "no user has this ID")
	}
	if err != nil {
		return Member{}, err
	}
	before, err := q.GetMembership(ctx, dbgen.GetMembershipParams{TenantID: tenantID, UserID: userID})
	existed := err == nil
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return Member{}, err
	}
	m, err := q.UpsertMembership(ctx, dbgen.UpsertMembershipParams{TenantID: tenantID, UserID: userID, Role: string(role)})
	if err != nil {
		return Member{}, err
	}
	diff := map[string]any{"user": u.Email, "role": string(role)}
	action := "membership.create"
	if existed {
		action = "membership.update"
		diff["previous_role"] = before.Role
	}
	err = audit.Record(ctx, q, actor, audit.Event{
		Tenant: tenantID, Action: action, TargetType: "membership", TargetID: tenantID.String() + "/" + userID.String(), Diff: diff,
	})
	return Member{UserID: u.ID, Email: u.Email, Role: role, CreatedAt: m.CreatedAt, Tenant: t.Name}, err
}

// RemoveMember takes a user out of a tenant.
func (s *Service) RemoveMember(ctx context.Context, actor access.Principal, tenantID, userID uuid.UUID) error {
	if err := s.mayManage(ctx, actor, tenantID); err != nil {
		return err
	}
	err := db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		before, err := q.GetMembership(ctx, dbgen.GetMembershipParams{TenantID: tenantID, UserID: userID})
		if errors.Is(err, pgx.ErrNoRows) {
			return problem.ErrNotFound
		}
		if err != nil {
			return err
		}
		if _, err := q.DeleteMembership(ctx, dbgen.DeleteMembershipParams{TenantID: tenantID, UserID: userID}); err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{
			Tenant: tenantID, Action: "membership.delete", TargetType: "membership",
			TargetID: tenantID.String() + "/" + userID.String(), Diff: map[string]any{"role": before.Role},
		})
	})
	if err != nil {
		return fmt.Errorf("remove member: %w", err)
	}
	return nil
}

// mayManage answers not found for a tenant the actor cannot see and forbidden for one they
// see but may not change.
func (s *Service) mayManage(ctx context.Context, actor access.Principal, tenantID uuid.UUID) error {
	if _, err := s.Get(ctx, actor, tenantID); err != nil {
		return err
	}
	if !actor.Can(access.TenantMemberManage, tenantID) {
		return problem.ErrForbidden
	}
	if t, err := db.Queries(s.pool).GetTenant(ctx, tenantID); err != nil {
		return err
	} else if t.System {
		return problem.Invalid("tenant_id", "system", "the system tenant holds landing zones' system services and has no members")
	}
	return nil
}

// UserIDByEmail finds the user to add to tenantID by email, for the membership form; only
// those who may manage the tenant's members may look.
func (s *Service) UserIDByEmail(ctx context.Context, actor access.Principal, tenantID uuid.UUID, email string) (uuid.UUID, error) {
	if err := s.mayManage(ctx, actor, tenantID); err != nil {
		return uuid.Nil, err
	}
	u, err := db.Queries(s.pool).GetUserByEmail(ctx, strings.TrimSpace(email))
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, problem.Invalid("email", "exists", "no user has this email; a provider admin can create one on the Users page")
	}
	if err != nil {
		return uuid.Nil, fmt.Errorf("find user: %w", err)
	}
	return u.ID, nil
}
