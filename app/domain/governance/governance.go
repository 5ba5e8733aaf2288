// Package governance decides what each tenant may deploy and with which values. Per component
// and tenant, provider admins set a ceiling (allowed or denied, per-input constraints, a
// maximum number of instances) and tenant admins may narrow it for their own tenant; what binds
// is the intersection of the two.
//
// The deploy path enforces it with Check and CheckInstances, and the catalog hides what Denied
// names. These take a *dbgen.Queries so that they run inside the caller's transaction.
package governance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/audit"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// Effective returns the rule that binds tenantID's deployments of componentID: the
// intersection of the provider's and the tenant's rules, everything allowed when neither
// exists. It does no authorization; the caller has.
func Effective(ctx context.Context, q *dbgen.Queries, tenantID, componentID uuid.UUID) (EffectiveRule, error) {
	provider, tenant, err := rules(ctx, q, tenantID, componentID)
	if err != nil {
		return EffectiveRule{}, err
	}
	return Intersect(provider, tenant), nil
}

// Check refuses parameters that governance does not allow for tenantID's deployments of
// componentID. It returns a *problem.Denied (answered 403) when the component is denied to
// the tenant, a *problem.ValidationError (422) naming each refused parameter as
// "parameters.<name>" with the rule it broke and who set it, or nil. Pass the parameters as
// they will be deployed, schema defaults and resolved values included.
func Check(ctx context.Context, q *dbgen.Queries, tenantID, componentID uuid.UUID, params map[string]any) error {
	e, err := Effective(ctx, q, tenantID, componentID)
	if err != nil {
		return err
	}
	return e.Check(params)
}

// CheckInstances refuses one more deployment of componentID in tenantID when the tenant's live
// deployments of it (any not destroyed, but for those whose first deploy failed and holds
// nothing) have reached the effective max_instances, with a
// *problem.ValidationError on the field "max_instances" naming the limit and who set it.
//
// q must be bound to the READ COMMITTED transaction (pgx's default) that inserts the new
// deployment's row, and CheckInstances must run before that insert: it takes a per-tenant
// advisory lock held until the transaction ends, so concurrent deploys of the tenant count
// one after another, each seeing the rows the previous one committed.
func CheckInstances(ctx context.Context, q *dbgen.Queries, tenantID, componentID uuid.UUID) error {
	if err := q.LockTenantInstances(ctx, tenantID); err != nil {
		return fmt.Errorf("check instances: %w", err)
	}
	e, err := Effective(ctx, q, tenantID, componentID)
	if err != nil {
		return err
	}
	if e.MaxInstances == nil {
		return nil
	}
	live, err := q.CountLiveDeployments(ctx, dbgen.CountLiveDeploymentsParams{TenantID: tenantID, ComponentID: componentID})
	if err != nil {
		return fmt.Errorf("check instances: %w", err)
	}
	return e.checkInstances(int(live))
}

// Remaining says how many more deployments of componentID tenantID may make; limited is false
// when there is no limit. It is for showing ("1 of 2 left"); CheckInstances enforces.
func Remaining(ctx context.Context, q *dbgen.Queries, tenantID, componentID uuid.UUID) (left int, limited bool, err error) {
	e, err := Effective(ctx, q, tenantID, componentID)
	if err != nil || e.MaxInstances == nil {
		return 0, false, err
	}
	live, err := q.CountLiveDeployments(ctx, dbgen.CountLiveDeploymentsParams{TenantID: tenantID, ComponentID: componentID})
	if err != nil {
		return 0, false, fmt.Errorf("count instances: %w", err)
	}
	return max(e.MaxInstances.Value-int(live), 0), true, nil
}

// Denied returns the components denied, by the provider or the tenant, in every one of
// tenantIDs: those that someone who uses only these tenants can deploy nowhere. A component
// denied in some of them but allowed in another is not in it. No tenants, no denials.
func Denied(ctx context.Context, q *dbgen.Queries, tenantIDs []uuid.UUID) (map[uuid.UUID]bool, error) {
	seen := map[uuid.UUID]bool{}
	ids := []uuid.UUID{}
	for _, id := range tenantIDs {
		if !seen[id] {
			seen[id], ids = true, append(ids, id)
		}
	}
	out := map[uuid.UUID]bool{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := q.DeniedComponents(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("denied components: %w", err)
	}
	for _, id := range rows {
		out[id] = true
	}
	return out, nil
}

// rules reads the provider's and the tenant's rule; either is nil when not set.
func rules(ctx context.Context, q *dbgen.Queries, tenantID, componentID uuid.UUID) (provider, tenant *Rule, err error) {
	rows, err := q.GovernanceRules(ctx, dbgen.GovernanceRulesParams{TenantID: tenantID, ComponentID: componentID})
	if err != nil {
		return nil, nil, fmt.Errorf("read governance: %w", err)
	}
	for _, r := range rows {
		rule, err := fromRow(dbgen.ComponentGovernance{SetBy: r.SetBy, IsAllowed: r.IsAllowed, ParameterConstraints: r.ParameterConstraints,
			MaxInstances: r.MaxInstances, UpdatedAt: r.UpdatedAt}, r.UpdatedByEmail)
		if err != nil {
			return nil, nil, err
		}
		if r.SetBy == Provider {
			provider = &rule
		} else {
			tenant = &rule
		}
	}
	return provider, tenant, nil
}

func fromRow(r dbgen.ComponentGovernance, email *string) (Rule, error) {
	rule := Rule{IsAllowed: r.IsAllowed, Constraints: map[string]Constraint{}}
	if err := json.Unmarshal(r.ParameterConstraints, &rule.Constraints); err != nil {
		return Rule{}, fmt.Errorf("read %s governance constraints: %w", r.SetBy, err)
	}
	if r.MaxInstances.Valid {
		m := int(r.MaxInstances.Int32)
		rule.MaxInstances = &m
	}
	if email != nil {
		rule.UpdatedBy = *email
	}
	at := r.UpdatedAt
	rule.UpdatedAt = &at
	return rule, nil
}

// Service reads and sets governance on behalf of a principal.
type Service struct{ pool *pgxpool.Pool }

// NewService returns a Service on pool.
func NewService(pool *pgxpool.Pool) *Service { return &Service{pool: pool} }

// Change is a rule to set. Scope is "provider" or "tenant"; empty picks "provider" for those
// who may set the provider's ceiling (provider admins) and "tenant" for everyone else.
type Change struct {
	Scope                string                `json:"scope"`
	IsAllowed            *bool                 `json:"is_allowed"`
	ParameterConstraints map[string]Constraint `json:"parameter_constraints"`
	MaxInstances         *int                  `json:"max_instances"`
}

// Component is a component as governance pages need it.
type Component struct {
	ID          uuid.UUID `json:"id"`
	Name        string    `json:"name"`
	DisplayName string    `json:"display_name"`
	Provider    string    `json:"provider"`
	Version     int       `json:"version"` // the latest published, whose inputs constraints name
}

// View is one component's governance in one tenant.
type View struct {
	TenantID   uuid.UUID     `json:"tenant_id"`
	TenantName string        `json:"tenant_name"`
	Component  Component     `json:"component"`
	Provider   *Rule         `json:"provider"` // nil: not set
	Tenant     *Rule         `json:"tenant"`   // nil: not set
	Effective  EffectiveRule `json:"effective"`
	Instances  int           `json:"instances"` // live deployments of the component in the tenant
	// Params are the component's inputs, for forms.
	Params []Param `json:"-"`
}

// Param is one input of a component's latest published schema, as a governance form shows it.
type Param struct {
	Name, Type       string
	Minimum, Maximum *float64 // the schema's own bounds
	Enum             []any
	// Which constraints apply: minimum and maximum, a pattern, a list of allowed values.
	Bounded, Patterned, Listed bool
}

func params(s schema) []Param {
	var out []Param
	for _, name := range s.names() {
		in := s.Properties[name]
		typ := in.Type
		if in.isMap() {
			typ = "map of strings"
		}
		out = append(out, Param{Name: name, Type: typ, Minimum: in.Minimum, Maximum: in.Maximum, Enum: in.Enum,
			Bounded: in.numeric(), Patterned: in.Type == "string", Listed: in.scalar()})
	}
	return out
}

// canRead reports whether the actor may see a tenant's governance: any member may, since it
// bounds what they deploy.
func canRead(actor access.Principal, tenantID uuid.UUID) bool {
	return actor.Can(access.ComponentDefinitionRead, tenantID)
}

// CanSet reports whether the actor may set the rule of scope in tenantID.
func CanSet(actor access.Principal, tenantID uuid.UUID, scope string) bool {
	if scope == Provider {
		return actor.Can(access.ComponentGovernanceManage, tenantID)
	}
	return actor.Can(access.ComponentGovernanceNarrow, tenantID)
}

// Get returns a component's governance in a tenant the actor belongs to; another tenant, or a
// component the tenant cannot use, is not found.
func (s *Service) Get(ctx context.Context, actor access.Principal, tenantID, componentID uuid.UUID) (View, error) {
	if !canRead(actor, tenantID) {
		return View{}, problem.ErrNotFound
	}
	return view(ctx, db.Queries(s.pool), tenantID, componentID)
}

func view(ctx context.Context, q *dbgen.Queries, tenantID, componentID uuid.UUID) (View, error) {
	t, c, s, err := governable(ctx, q, tenantID, componentID)
	if err != nil {
		return View{}, err
	}
	provider, tenant, err := rules(ctx, q, tenantID, componentID)
	if err != nil {
		return View{}, err
	}
	live, err := q.CountLiveDeployments(ctx, dbgen.CountLiveDeploymentsParams{TenantID: tenantID, ComponentID: componentID})
	if err != nil {
		return View{}, fmt.Errorf("count instances: %w", err)
	}
	return View{TenantID: tenantID, TenantName: t.Name, Component: c, Provider: provider, Tenant: tenant, Effective: Intersect(provider, tenant),
		Instances: int(live), Params: params(s)}, nil
}

// governable finds the tenant, shared until the caller's transaction ends so that it is not
// deleted under a rule being set, and a published component it can use, with its latest inputs.
func governable(ctx context.Context, q *dbgen.Queries, tenantID, componentID uuid.UUID) (dbgen.Tenant, Component, schema, error) {
	t, err := q.ShareTenant(ctx, tenantID)
	if errors.Is(err, pgx.ErrNoRows) {
		return dbgen.Tenant{}, Component{}, schema{}, problem.ErrNotFound
	}
	if err != nil {
		return dbgen.Tenant{}, Component{}, schema{}, fmt.Errorf("get tenant: %w", err)
	}
	r, err := q.GovernableComponent(ctx, dbgen.GovernableComponentParams{ComponentID: componentID, TenantID: tenantID})
	if errors.Is(err, pgx.ErrNoRows) {
		return dbgen.Tenant{}, Component{}, schema{}, problem.ErrNotFound
	}
	if err != nil {
		return dbgen.Tenant{}, Component{}, schema{}, fmt.Errorf("get component: %w", err)
	}
	s, err := parseSchema(r.InputSchema)
	if err != nil {
		return dbgen.Tenant{}, Component{}, schema{}, err
	}
	return t, Component{ID: r.ID, Name: r.Name, DisplayName: r.DisplayName, Provider: r.Provider, Version: int(r.LatestVersion)}, s, nil
}

// Set saves one scope's rule for a component in a tenant and returns the governance it leaves.
// The provider's rule needs component:governance:manage; the tenant's needs
// component:governance:narrow in the tenant and may only narrow the provider's. A refused rule
// saves nothing; a saved one is audited in the same transaction.
func (s *Service) Set(ctx context.Context, actor access.Principal, tenantID, componentID uuid.UUID, in Change) (View, error) {
	if !canRead(actor, tenantID) {
		return View{}, problem.ErrNotFound
	}
	scope := in.Scope
	switch scope {
	case "":
		scope = Tenant
		if CanSet(actor, tenantID, Provider) {
			scope = Provider
		}
	case Provider, Tenant:
	default:
		return View{}, problem.Invalid("scope", "one_of", "must be provider or tenant, or left out to pick by your role")
	}
	if !CanSet(actor, tenantID, scope) {
		return View{}, problem.ErrForbidden
	}
	if in.IsAllowed == nil {
		return View{}, problem.Invalid("is_allowed", "required", "send true to allow the component or false to deny it")
	}
	var out View
	err := db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		_, _, inputs, err := governable(ctx, q, tenantID, componentID)
		if err != nil {
			return err
		}
		provider, tenant, err := rules(ctx, q, tenantID, componentID)
		if err != nil {
			return err
		}
		// The ceiling is read without a lock: should the provider narrow it concurrently, the
		// tenant's rule is merely wider than it in places, which the intersection absorbs.
		rule, err := validate(scope, Rule{IsAllowed: *in.IsAllowed, Constraints: in.ParameterConstraints, MaxInstances: in.MaxInstances}, inputs, provider)
		if err != nil {
			return err
		}
		constraints, err := json.Marshal(rule.Constraints)
		if err != nil {
			return err
		}
		var limit pgtype.Int4
		if rule.MaxInstances != nil {
			limit = pgtype.Int4{Int32: int32(*rule.MaxInstances), Valid: true}
		}
		if _, err := q.UpsertGovernanceRule(ctx, dbgen.UpsertGovernanceRuleParams{
			ComponentID: componentID, TenantID: tenantID, SetBy: scope, IsAllowed: rule.IsAllowed,
			ParameterConstraints: constraints, MaxInstances: limit,
			UpdatedBy: uuid.NullUUID{UUID: actor.UserID, Valid: actor.UserID != uuid.Nil},
		}); err != nil {
			return err
		}
		before := provider
		if scope == Tenant {
			before = tenant
		}
		if err := audit.Record(ctx, q, actor, audit.Event{Tenant: tenantID, Action: "governance.set", TargetType: "component",
			TargetID: componentID.String(), Diff: map[string]any{"scope": scope, "before": auditRule(before), "after": auditRule(&rule)}}); err != nil {
			return err
		}
		out, err = view(ctx, q, tenantID, componentID)
		return err
	})
	if err != nil {
		return View{}, fmt.Errorf("set governance: %w", err)
	}
	return out, nil
}

// Clear removes one scope's rule for a component in a tenant, with the same permissions as Set,
// and returns the governance it leaves. Clearing a rule that is not set changes nothing.
func (s *Service) Clear(ctx context.Context, actor access.Principal, tenantID, componentID uuid.UUID, scope string) (View, error) {
	if !canRead(actor, tenantID) {
		return View{}, problem.ErrNotFound
	}
	if scope != Provider && scope != Tenant {
		return View{}, problem.Invalid("scope", "one_of", "must be provider or tenant")
	}
	if !CanSet(actor, tenantID, scope) {
		return View{}, problem.ErrForbidden
	}
	var out View
	err := db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		if _, _, _, err := governable(ctx, q, tenantID, componentID); err != nil {
			return err
		}
		gone, err := q.DeleteGovernanceRule(ctx, dbgen.DeleteGovernanceRuleParams{TenantID: tenantID, ComponentID: componentID, SetBy: scope})
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return err
		default:
			before, err := fromRow(gone, nil)
			if err != nil {
				return err
			}
			if err := audit.Record(ctx, q, actor, audit.Event{Tenant: tenantID, Action: "governance.clear", TargetType: "component",
				TargetID: componentID.String(), Diff: map[string]any{"scope": scope, "before": auditRule(&before), "after": nil}}); err != nil {
				return err
			}
		}
		out, err = view(ctx, q, tenantID, componentID)
		return err
	})
	if err != nil {
		return View{}, fmt.Errorf("clear governance: %w", err)
	}
	return out, nil
}

// auditRule is a rule as the audit diff records it; nil for one not set before.
func auditRule(r *Rule) any {
	if r == nil {
		return nil
	}
	return map[string]any{"is_allowed": r.IsAllowed, "parameter_constraints": r.Constraints, "max_instances": r.MaxInstances}
}

// Summary is one component in a tenant's governance overview.
type Summary struct {
	Component Component     `json:"component"`
	Provider  bool          `json:"provider_rule"` // whether the provider set a rule
	Tenant    bool          `json:"tenant_rule"`   // whether the tenant set one
	Effective EffectiveRule `json:"effective"`
	Instances int           `json:"instances"`
}

// Overview is the governance of every published component a tenant can use.
type Overview struct {
	TenantID   uuid.UUID `json:"tenant_id"`
	TenantName string    `json:"tenant_name"`
	Components []Summary `json:"components"`
}

// List returns the effective governance of every published component a tenant the actor
// belongs to can use.
func (s *Service) List(ctx context.Context, actor access.Principal, tenantID uuid.UUID) (Overview, error) {
	if !canRead(actor, tenantID) {
		return Overview{}, problem.ErrNotFound
	}
	q := db.Queries(s.pool)
	t, err := q.GetTenant(ctx, tenantID)
	if errors.Is(err, pgx.ErrNoRows) {
		return Overview{}, problem.ErrNotFound
	}
	if err != nil {
		return Overview{}, fmt.Errorf("get tenant: %w", err)
	}
	comps, err := q.GovernableComponents(ctx, tenantID)
	if err != nil {
		return Overview{}, fmt.Errorf("list components: %w", err)
	}
	rows, err := q.TenantGovernanceRules(ctx, tenantID)
	if err != nil {
		return Overview{}, fmt.Errorf("list governance: %w", err)
	}
	counts, err := q.CountTenantLiveDeployments(ctx, tenantID)
	if err != nil {
		return Overview{}, fmt.Errorf("count instances: %w", err)
	}
	type pair struct{ provider, tenant *Rule }
	byComponent := map[uuid.UUID]pair{}
	for _, r := range rows {
		rule, err := fromRow(dbgen.ComponentGovernance{SetBy: r.SetBy, IsAllowed: r.IsAllowed, ParameterConstraints: r.ParameterConstraints,
			MaxInstances: r.MaxInstances, UpdatedAt: r.UpdatedAt}, r.UpdatedByEmail)
		if err != nil {
			return Overview{}, err
		}
		p := byComponent[r.ComponentID]
		if r.SetBy == Provider {
			p.provider = &rule
		} else {
			p.tenant = &rule
		}
		byComponent[r.ComponentID] = p
	}
	live := map[uuid.UUID]int{}
	for _, c := range counts {
		live[c.ComponentID] = int(c.Live)
	}
	out := Overview{TenantID: t.ID, TenantName: t.Name, Components: make([]Summary, len(comps))}
	for i, c := range comps {
		p := byComponent[c.ID]
		out.Components[i] = Summary{
			Component: Component{ID: c.ID, Name: c.Name, DisplayName: c.DisplayName, Provider: c.Provider, Version: int(c.LatestVersion)},
			Provider:  p.provider != nil, Tenant: p.tenant != nil, Effective: Intersect(p.provider, p.tenant), Instances: live[c.ID],
		}
	}
	return out, nil
}
