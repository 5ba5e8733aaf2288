// Package environment manages environments: where a tenant's deployments land. One made
// without a template is a bare, active place to deploy. One opened from a landing zone's
// template owns a lifecycle: its mandatory components are deployed side by side when it is
// provisioned, each after any member it names (refers), and every deployment is destroyed, the
// template's last, when it is decommissioned (Lifecycle, and Graph, which the graph runner
// steps through). Its status changes only through the transitions in transition.go.
package environment

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"nimbus/app/domain/resolver"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/lifecycle"
	"nimbus/app/kernel/problem"
	"nimbus/app/orchestration/deploy"
	"nimbus/app/platform/audit"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// Environment is an environment as the API and pages show it.
type Environment struct {
	ID         uuid.UUID `json:"id"`
	TenantID   uuid.UUID `json:"tenant_id"`
	TenantName string    `json:"tenant_name"`
	Name       string    `json:"name"`
	// Status is where it is in its lifecycle; StatusReason says what failed, and what was kept.
	Status        lifecycle.EnvironmentStatus `json:"status"`
	StatusReason  string                      `json:"status_reason"`
	LandingZoneID *uuid.UUID                  `json:"landing_zone_id"`
	LandingZone   string                      `json:"landing_zone"`
	TemplateID    *uuid.UUID                  `json:"template_id"`
	Template      string                      `json:"template"`
	CreatedAt     time.Time                   `json:"created_at"`
	// ExpiresAt is when it is decommissioned on its own; nil when it does not expire.
	ExpiresAt *time.Time `json:"expires_at"`
}

// New is an environment to make: from a landing zone's template when TemplateID is set. An
// environment opened in a zone may ask when it expires, at ExpiresAt or TTL from now (as
// ParseTTL reads it), within the zone's maximum; it gets the zone's default otherwise.
type New struct {
	TenantID   uuid.UUID  `json:"tenant_id"`
	Name       string     `json:"name"`
	TemplateID uuid.UUID  `json:"template_id"`
	ExpiresAt  *time.Time `json:"expires_at"`
	TTL        string     `json:"ttl"`
}

// TemplateChoice is a template an environment can be opened from.
type TemplateChoice struct {
	ID                uuid.UUID
	Name, LandingZone string
}

func environmentOf(r dbgen.GetEnvironmentRow) Environment {
	e := Environment{ID: r.ID, TenantID: r.TenantID, TenantName: r.TenantName, Name: r.Name, Status: lifecycle.EnvironmentStatus(r.Status), StatusReason: r.StatusReason,
		LandingZone: r.LandingZoneName, Template: r.TemplateName, CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt}
	if r.LandingZoneID.Valid {
		e.LandingZoneID = &r.LandingZoneID.UUID
	}
	if r.TemplateID.Valid {
		e.TemplateID = &r.TemplateID.UUID
	}
	return e
}

// Service reads and creates environments on behalf of a principal.
type Service struct{ pool *pgxpool.Pool }

// NewService returns a Service on pool.
func NewService(pool *pgxpool.Pool) *Service { return &Service{pool: pool} }

var name = regexp.MustCompile(`^[a-z][a-z0-9-]{0,39}$`)

// List returns the environments of the tenants the actor may see.
func (s *Service) List(ctx context.Context, actor access.Principal) ([]Environment, error) {
	tenants := actor.TenantsWith(access.EnvironmentRead)
	if tenants == nil {
		tenants = []uuid.UUID{}
	}
	rows, err := db.Queries(s.pool).ListEnvironments(ctx, dbgen.ListEnvironmentsParams{AllTenants: actor.ProviderAdmin, TenantIds: tenants})
	if err != nil {
		return nil, fmt.Errorf("list environments: %w", err)
	}
	out := make([]Environment, len(rows))
	for i, r := range rows {
		out[i] = environmentOf(dbgen.GetEnvironmentRow(r))
	}
	return out, nil
}

// Leading returns the first n environments the actor may see, not decommissioned, failed ones
// first, then those under way, then the active ones, each by tenant and name; and how many
// there are of them in all.
func (s *Service) Leading(ctx context.Context, actor access.Principal, n int) ([]Environment, int, error) {
	tenants := actor.TenantsWith(access.EnvironmentRead)
	if tenants == nil {
		tenants = []uuid.UUID{}
	}
	gone := string(lifecycle.EnvironmentDecommissioned)
	q := db.Queries(s.pool)
	rows, err := q.LeadingEnvironments(ctx, dbgen.LeadingEnvironmentsParams{Gone: gone, AllTenants: actor.ProviderAdmin, TenantIds: tenants,
		First: []string{string(lifecycle.EnvironmentFailed)}, Last: []string{string(lifecycle.EnvironmentActive)}, Shown: int32(n)})
	if err != nil {
		return nil, 0, fmt.Errorf("list environments: %w", err)
	}
	out := make([]Environment, len(rows))
	for i, r := range rows {
		out[i] = environmentOf(dbgen.GetEnvironmentRow(r))
	}
	if len(out) < n {
		return out, len(out), nil
	}
	total, err := q.CountLiveEnvironments(ctx, dbgen.CountLiveEnvironmentsParams{Gone: gone, AllTenants: actor.ProviderAdmin, TenantIds: tenants})
	if err != nil {
		return nil, 0, fmt.Errorf("count environments: %w", err)
	}
	return out, int(total), nil
}

// Get returns an environment the actor may see; any other is not found.
func (s *Service) Get(ctx context.Context, actor access.Principal, id uuid.UUID) (Environment, error) {
	r, err := db.Queries(s.pool).GetEnvironment(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return Environment{}, problem.ErrNotFound
	}
	if err != nil {
		return Environment{}, fmt.Errorf("get environment: %w", err)
	}
	if !actor.Can(access.EnvironmentRead, r.TenantID) {
		return Environment{}, problem.ErrNotFound
	}
	return environmentOf(r), nil
}

// Create adds an environment to a tenant; its tenant admins and provider admins may.
func (s *Service) Create(ctx context.Context, actor access.Principal, tenantID uuid.UUID, envName string) (Environment, error) {
	if !actor.Member(tenantID) {
		return Environment{}, problem.Invalid("tenant_id", "exists", "no tenant with this ID that you can see")
	}
	if !actor.Can(access.EnvironmentManage, tenantID) {
		return Environment{}, problem.ErrForbidden
	}
	envName = strings.TrimSpace(envName)
	if !name.MatchString(envName) {
		return Environment{}, problem.Invalid("name", "pattern", "must be 1–40 lower-case letters, digits and -, starting with a letter, such as dev or prod-eu")
	}
	var id uuid.UUID
	err := db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		if t, err := q.ShareTenant(ctx, tenantID); errors.Is(err, pgx.ErrNoRows) {
			return problem.Invalid("tenant_id", "exists", "no tenant with this ID that you can see")
		} else if err != nil {
			return fmt.Errorf("get tenant: %w", err)
		} else if t.System {
			return problem.Invalid("tenant_id", "system", "the system tenant holds landing zones' system services and has no environments of its own")
		}
		e, err := create(ctx, q, dbgen.CreateEnvironmentParams{TenantID: tenantID, Name: envName, CreatedBy: nullID(actor.UserID)})
		if db.IsUniqueViolation(err) {
			return problem.Invalid("name", "unique", "this tenant already has an environment named %q", envName)
		}
		if err != nil {
			return err
		}
		id = e.ID
		return audit.Record(ctx, q, actor, audit.Event{Tenant: tenantID, Action: "environment.create", TargetType: "environment",
			TargetID: e.ID.String(), Diff: map[string]any{"name": envName}})
	})
	if err != nil {
		return Environment{}, fmt.Errorf("create environment: %w", err)
	}
	return s.Get(ctx, actor, id)
}

// Detail is an environment with its deployments and what they hold from resolvers.
type Detail struct {
	Environment
	Deployments []EnvDeploymentRow
	Addresses   []EnvAddressRow
	Names       []resolver.IssuedNameRow
	Policies    []Policy
}

// Policy is an enabled plan policy of an environment's landing zone, as those deploying read it.
type Policy struct {
	Name       string `json:"name"`
	Level      string `json:"level"`
	Message    string `json:"message"`
	Expression string `json:"expression"`
}

func policiesOf(rows []dbgen.EnvironmentPoliciesRow) []Policy {
	out := make([]Policy, len(rows))
	for i, r := range rows {
		out[i] = Policy(r)
	}
	return out
}

// Detail returns an environment the actor may see, with its deployments, the addresses they
// hold and the names they were given.
func (s *Service) Detail(ctx context.Context, actor access.Principal, id uuid.UUID) (Detail, error) {
	env, err := s.Get(ctx, actor, id)
	if err != nil {
		return Detail{}, err
	}
	q := db.Queries(s.pool)
	d := Detail{Environment: env}
	deployments, err := q.EnvironmentDeployments(ctx, id)
	if err != nil {
		return Detail{}, fmt.Errorf("environment deployments: %w", err)
	}
	for _, dep := range deployments {
		if deploy.DeploymentStatus(dep.Status) == deploy.Destroyed && (dep.LastKind == "" || deploy.Kind(dep.LastKind) == deploy.KindPreview) {
			continue // let go before anything was deployed: no deployment to show
		}
		d.Deployments = append(d.Deployments, EnvDeploymentRow{ID: dep.ID.String(), Name: dep.Name, Component: dep.ComponentName, ComponentID: dep.ComponentID.String(),
			Status: dep.Status, Outputs: outputs(dep.Outputs), Mandatory: dep.TemplateComponentID.Valid})
	}
	addresses, err := q.EnvironmentAllocations(ctx, id)
	if err != nil {
		return Detail{}, fmt.Errorf("environment addresses: %w", err)
	}
	for _, a := range addresses {
		prefix := a.Prefix.String()
		if a.Kind == "address" {
			prefix = a.Prefix.Addr().String()
		}
		d.Addresses = append(d.Addresses, EnvAddressRow{Prefix: prefix, Kind: a.Kind, Pool: a.PoolName, Deployment: a.DeploymentName,
			DeploymentID: a.DeploymentID.String(), Input: cmp.Or(a.Inputs, a.Input), Within: a.Within, WithinDeployment: a.WithinDeployment, Moving: a.Moving})
	}
	names, err := q.IssuedNames(ctx, id)
	if err != nil {
		return Detail{}, fmt.Errorf("environment names: %w", err)
	}
	for _, n := range names {
		row := resolver.IssuedNameRow{Name: n.Name, FQDN: n.Fqdn, Deployment: n.DeploymentName, Created: n.CreatedAt}
		if n.DeploymentID.Valid {
			row.DeploymentID = n.DeploymentID.UUID.String()
		}
		d.Names = append(d.Names, row)
	}
	policies, err := q.EnvironmentPolicies(ctx, id)
	if err != nil {
		return Detail{}, fmt.Errorf("environment policies: %w", err)
	}
	d.Policies = policiesOf(policies)
	return d, nil
}

// Policies returns the enabled plan policies of the landing zone of an environment the actor
// may see: what every deploy into it answers to, so that those deploying read the rules
// before a preview names one they broke. Empty for an environment of no zone.
func (s *Service) Policies(ctx context.Context, actor access.Principal, id uuid.UUID) ([]Policy, error) {
	if _, err := s.Get(ctx, actor, id); err != nil {
		return nil, err
	}
	rows, err := db.Queries(s.pool).EnvironmentPolicies(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("environment policies: %w", err)
	}
	return policiesOf(rows), nil
}

// manageable lists the tenants the actor may add environments to; a failed read lists none,
// which only hides the form.
func (s *Service) manageable(ctx context.Context, actor access.Principal) []dbgen.ListTenantsRow {
	rows, err := db.Queries(s.pool).ListTenants(ctx, dbgen.ListTenantsParams{AllTenants: actor.ProviderAdmin, TenantIds: actor.TenantsWithRole(access.ReadOnly)})
	if err != nil {
		return nil
	}
	out := rows[:0]
	for _, r := range rows {
		if actor.Can(access.EnvironmentManage, r.ID) {
			out = append(out, r)
		}
	}
	return out
}
