package approval

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/audit"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// Scopes are what a policy may be set on; Operations the kinds it may hold back; ApproverRoles
// whom it may ask.
var (
	Scopes        = []string{"landing_zone", "environment", "component"}
	Operations    = []string{"deploy", "update", "upgrade", "destroy"}
	ApproverRoles = []access.Role{access.User, access.TenantAdmin, access.ProviderAdmin}
)

// Policy says which operations on deployments in its scope need approval: how many approvals,
// from which role in the deployment's tenant.
type Policy struct {
	ID        uuid.UUID `json:"id"`
	Scope     string    `json:"scope"`
	ScopeID   uuid.UUID `json:"scope_id"`
	ScopeName string    `json:"scope_name"`
	// TenantID is the environment's tenant, for a policy on an environment.
	TenantID          *uuid.UUID  `json:"tenant_id,omitempty"`
	Operations        []string    `json:"operations"`
	ApprovalsRequired int         `json:"approvals_required"`
	ApproverRole      access.Role `json:"approver_role"`
	// RequesterMayApprove lets the requester approve their own operation.
	RequesterMayApprove bool   `json:"requester_may_approve"`
	CreatedBy           string `json:"created_by"`
	// SetByProviderAdmin marks a policy a provider admin made: it binds the tenant, whose
	// admins cannot remove it.
	SetByProviderAdmin bool      `json:"set_by_provider_admin"`
	CreatedAt          time.Time `json:"created_at"`
}

// NewPolicy is a policy to make. ScopeID is text so that a malformed one is refused by name.
type NewPolicy struct {
	Scope             string   `json:"scope"`
	ScopeID           string   `json:"scope_id"`
	Operations        []string `json:"operations"`
	ApprovalsRequired *int     `json:"approvals_required"` // 1 when left out
	ApproverRole      string   `json:"approver_role"`
	// RequesterMayApprove lets the requester approve their own operation, for a team with one
	// admin; false asks for four eyes.
	RequesterMayApprove bool `json:"requester_may_approve"`
}

// Choice is something a policy may be set on, for the policy form.
type Choice struct {
	Scope, Name string
	ID          uuid.UUID
}

// CreatePolicy records a policy. Landing zone and component policies are for provider admins;
// an environment's, for its tenant's admins too. A provider admin's policy is marked as theirs,
// so that the tenant's admins cannot remove it.
func (s *Service) CreatePolicy(ctx context.Context, actor access.Principal, in NewPolicy) (Policy, error) {
	p, err := check(in)
	if err != nil {
		return Policy{}, err
	}
	var id uuid.UUID
	err = db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		tenant, name, err := s.scope(ctx, q, actor, p.Scope, p.ScopeID)
		if err != nil {
			return err
		}
		row, err := q.CreateApprovalPolicy(ctx, dbgen.CreateApprovalPolicyParams{Scope: p.Scope, ScopeID: p.ScopeID,
			Operations: p.Operations, ApprovalsRequired: p.ApprovalsRequired, ApproverRole: p.ApproverRole, RequesterMayApprove: p.RequesterMayApprove,
			CreatedBy: uuid.NullUUID{UUID: actor.UserID, Valid: actor.UserID != uuid.Nil}, ByProviderAdmin: actor.ProviderAdmin})
		if err != nil {
			return err
		}
		id = row.ID
		return audit.Record(ctx, q, actor, audit.Event{Tenant: tenant, Action: "approval_policy.create", TargetType: "approval_policy",
			TargetID: id.String(), Diff: map[string]any{"scope": p.Scope, "scope_id": p.ScopeID, "scope_name": name,
				"operations": p.Operations, "approvals_required": p.ApprovalsRequired, "approver_role": p.ApproverRole,
				"requester_may_approve": p.RequesterMayApprove}})
	})
	if err != nil {
		return Policy{}, fmt.Errorf("create approval policy: %w", err)
	}
	return s.policy(ctx, actor, id)
}

// check refuses a malformed policy, naming each field and the rule it breaks.
func check(in NewPolicy) (dbgen.CreateApprovalPolicyParams, error) {
	v := &problem.ValidationError{}
	p := dbgen.CreateApprovalPolicyParams{Scope: in.Scope, ApprovalsRequired: 1, ApproverRole: in.ApproverRole, RequesterMayApprove: in.RequesterMayApprove}
	if !slices.Contains(Scopes, in.Scope) {
		v.Add("scope", "enum", "must be one of %s", strings.Join(Scopes, ", "))
	}
	id, err := uuid.Parse(strings.TrimSpace(in.ScopeID))
	if err != nil {
		v.Add("scope_id", "uuid", "must be the ID of the %s", scopeNoun(in.Scope))
	}
	p.ScopeID = id
	if len(in.Operations) == 0 {
		v.Add("operations", "required", "name at least one of %s", strings.Join(Operations, ", "))
	}
	for i, op := range in.Operations {
		switch {
		case !slices.Contains(Operations, op):
			v.Add(fmt.Sprintf("operations[%d]", i), "enum", "%q is not one of %s", op, strings.Join(Operations, ", "))
		case !slices.Contains(p.Operations, op):
			p.Operations = append(p.Operations, op)
		}
	}
	if in.ApprovalsRequired != nil {
		if n := *in.ApprovalsRequired; n < 1 || n > 10 {
			v.Add("approvals_required", "range", "must be from 1 to 10, not %d", n)
		}
		p.ApprovalsRequired = int32(*in.ApprovalsRequired)
	}
	if !slices.Contains(ApproverRoles, access.Role(in.ApproverRole)) {
		v.Add("approver_role", "enum", "must be user, tenant_admin or provider_admin")
	}
	return p, v.Err()
}

func scopeNoun(scope string) string {
	switch scope {
	case "landing_zone":
		return "landing zone"
	case "environment", "component":
		return scope
	}
	return "landing zone, environment or component"
}

// scope checks that the policy's scope exists and that the actor may set policies on it, and
// returns the tenant it belongs to (none for landing zones and components) and its name.
func (s *Service) scope(ctx context.Context, q *dbgen.Queries, actor access.Principal, scope string, id uuid.UUID) (uuid.UUID, string, error) {
	missing := problem.Invalid("scope_id", "exists", "no %s with this ID", scopeNoun(scope))
	if scope == "environment" {
		env, err := q.ApprovalScopeEnvironment(ctx, id)
		if errors.Is(err, pgx.ErrNoRows) || err == nil && !actor.Can(access.EnvironmentRead, env.TenantID) {
			return uuid.Nil, "", problem.Invalid("scope_id", "exists", "no environment with this ID that you can see")
		}
		if err != nil {
			return uuid.Nil, "", err
		}
		if !actor.Can(access.EnvironmentManage, env.TenantID) {
			return uuid.Nil, "", problem.ErrForbidden
		}
		return env.TenantID, env.Name, nil
	}
	if !actor.CanSomewhere(access.ApprovalPolicyManage) {
		return uuid.Nil, "", problem.ErrForbidden
	}
	var (
		name string
		err  error
	)
	if scope == "landing_zone" {
		var z dbgen.ApprovalScopeZoneRow
		z, err = q.ApprovalScopeZone(ctx, id)
		name = z.Name
	} else {
		var c dbgen.ApprovalScopeComponentRow
		c, err = q.ApprovalScopeComponent(ctx, id)
		name = c.Name
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return uuid.Nil, "", missing
	}
	return uuid.Nil, name, err
}

// Policies lists the policies that bind deployments of the actor's tenants (all for provider
// admins).
func (s *Service) Policies(ctx context.Context, actor access.Principal) ([]Policy, error) {
	return s.policies(ctx, actor, uuid.Nil)
}

func (s *Service) policy(ctx context.Context, actor access.Principal, id uuid.UUID) (Policy, error) {
	list, err := s.policies(ctx, actor, id)
	if err != nil {
		return Policy{}, err
	}
	if len(list) == 0 {
		return Policy{}, problem.ErrNotFound
	}
	return list[0], nil
}

func (s *Service) policies(ctx context.Context, actor access.Principal, id uuid.UUID) ([]Policy, error) {
	rows, err := s.policyRows(ctx, actor, id)
	if err != nil {
		return nil, err
	}
	out := make([]Policy, len(rows))
	for i, r := range rows {
		out[i] = Policy{ID: r.ID, Scope: r.Scope, ScopeID: r.ScopeID, ScopeName: r.ScopeName, Operations: r.Operations,
			ApprovalsRequired: int(r.ApprovalsRequired), ApproverRole: access.Role(r.ApproverRole), CreatedBy: r.CreatedByEmail,
			SetByProviderAdmin: r.ByProviderAdmin, CreatedAt: r.CreatedAt, RequesterMayApprove: r.RequesterMayApprove}
		if r.ScopeTenantID.Valid {
			out[i].TenantID = &r.ScopeTenantID.UUID
		}
	}
	return out, nil
}

func (s *Service) policyRows(ctx context.Context, actor access.Principal, id uuid.UUID) ([]dbgen.ListApprovalPoliciesRow, error) {
	rows, err := db.Queries(s.pool).ListApprovalPolicies(ctx, dbgen.ListApprovalPoliciesParams{
		ID: uuid.NullUUID{UUID: id, Valid: id != uuid.Nil}, AllTenants: actor.ProviderAdmin,
		TenantIds: append([]uuid.UUID{}, actor.TenantsWith(access.ApprovalRead)...)})
	if err != nil {
		return nil, fmt.Errorf("list approval policies: %w", err)
	}
	return rows, nil
}

// DeletePolicy removes a policy, with the permissions it took to make it. A policy a provider
// admin set stands against the tenant's admins: only a provider admin can remove it, and the
// refusal says who set it. Operations already waiting keep the request they have.
func (s *Service) DeletePolicy(ctx context.Context, actor access.Principal, id uuid.UUID) error {
	rows, err := s.policyRows(ctx, actor, id)
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		return problem.ErrNotFound
	}
	p := rows[0]
	tenant := p.ScopeTenantID.UUID
	if err := mayDelete(actor, p.Scope, tenant, p.ByProviderAdmin, p.CreatedByEmail); err != nil {
		return err
	}
	err = db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		n, err := q.DeleteApprovalPolicy(ctx, id)
		if err != nil {
			return err
		}
		if n == 0 {
			return problem.ErrNotFound
		}
		return audit.Record(ctx, q, actor, audit.Event{Tenant: tenant, Action: "approval_policy.delete", TargetType: "approval_policy",
			TargetID: id.String(), Diff: map[string]any{"scope": p.Scope, "scope_id": p.ScopeID, "scope_name": p.ScopeName,
				"operations": p.Operations, "approvals_required": p.ApprovalsRequired, "approver_role": p.ApproverRole,
				"set_by_provider_admin": p.ByProviderAdmin}})
	})
	if err != nil {
		return fmt.Errorf("delete approval policy: %w", err)
	}
	return nil
}

// mayManage reports whether the actor may make policies of the scope: an environment's tenant
// admins may for it, provider admins for any.
func mayManage(actor access.Principal, scope string, tenant uuid.UUID) bool {
	if scope == "environment" && actor.Can(access.EnvironmentManage, tenant) {
		return true
	}
	return actor.CanSomewhere(access.ApprovalPolicyManage)
}

// mayDelete refuses the actor the removal of a policy: provider admins may remove any; others
// only one a tenant admin set, on a scope they may manage.
func mayDelete(actor access.Principal, scope string, tenant uuid.UUID, byProviderAdmin bool, setBy string) error {
	if actor.ProviderAdmin {
		return nil
	}
	if byProviderAdmin {
		who := "a provider admin"
		if setBy != "" {
			who += " (" + setBy + ")"
		}
		return &problem.Denied{Message: "this policy was set by " + who + "; only a provider admin can remove it"}
	}
	if !mayManage(actor, scope, tenant) {
		return problem.ErrForbidden
	}
	return nil
}

// MayDelete reports whether the actor may delete the policy.
func (p Policy) MayDelete(actor access.Principal) bool {
	tenant := uuid.Nil
	if p.TenantID != nil {
		tenant = *p.TenantID
	}
	return mayDelete(actor, p.Scope, tenant, p.SetByProviderAdmin, p.CreatedBy) == nil
}

// ScopeChoices lists what the actor may set policies on: for provider admins every landing
// zone, environment and component; for tenant admins their tenants' environments.
func (s *Service) ScopeChoices(ctx context.Context, actor access.Principal) ([]Choice, error) {
	rows, err := db.Queries(s.pool).ApprovalScopeChoices(ctx, dbgen.ApprovalScopeChoicesParams{
		WithProvider: actor.CanSomewhere(access.ApprovalPolicyManage), AllTenants: actor.ProviderAdmin,
		TenantIds: append([]uuid.UUID{}, actor.TenantsWith(access.EnvironmentManage)...)})
	if err != nil {
		return nil, fmt.Errorf("approval policy scopes: %w", err)
	}
	out := make([]Choice, len(rows))
	for i, r := range rows {
		out[i] = Choice{Scope: r.Scope, ID: r.ID, Name: r.Name}
	}
	return out, nil
}
