// Package dashboard is the home page: for the signed-in user's tenants, their environments,
// what runs now, what waits for their approval, what failed lately, and for provider admins
// how full the IP pools are.
package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"

	"nimbus/app/domain/ipam"
	"nimbus/app/kernel/access"
	"nimbus/app/orchestration/deploy"
	"nimbus/app/orchestration/environment"
	"nimbus/app/platform/web"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// Service gathers the dashboard.
type Service struct {
	pool  *pgxpool.Pool
	envs  *environment.Service
	pools *ipam.Service
}

// NewService returns a Service that lists envs and pools.
func NewService(pool *pgxpool.Pool, envs *environment.Service, pools *ipam.Service) *Service {
	return &Service{pool: pool, envs: envs, pools: pools}
}

// Overview is what the dashboard shows one viewer.
type Overview struct {
	// Environments are the first few to look at; MoreEnvironments how many others there are.
	Environments     []environment.Environment
	MoreEnvironments int
	Active           []Operation
	// Awaiting are the operations that wait for approval, whoever may decide them.
	Awaiting []Operation
	Failures []Failure
	Drifted  int         // deployments whose last drift check found changes
	Pools    []ipam.Pool // for provider admins
	// FirstSteps is how far a new install has come, for provider admins.
	FirstSteps *Progress
}

// Operation is an operation under way, or waiting, and where it is.
type Operation struct {
	ID              uuid.UUID
	Kind, Status    string
	CreatedAt       time.Time
	StartedAt       *time.Time
	DeploymentID    uuid.UUID
	DeploymentName  string
	EnvironmentID   uuid.UUID
	EnvironmentName string
	TenantID        uuid.UUID
	TenantName      string
}

// Failure is an operation that failed lately, and where.
type Failure struct {
	ID              uuid.UUID
	Kind, Error     string
	FinishedAt      *time.Time
	DeploymentID    uuid.UUID
	DeploymentName  string
	EnvironmentID   uuid.UUID
	EnvironmentName string
	TenantID        uuid.UUID
	TenantName      string
}

// Progress says which of a new install's first steps are done.
type Progress struct {
	HasTenant, HasMember, HasZone, HasEnvironment, HasPool, HasDeployment bool
}

// operations converts the rows of operations under way.
func operations(rows []dbgen.ActiveOperationsRow) []Operation {
	out := make([]Operation, len(rows))
	for i, r := range rows {
		out[i] = Operation{ID: r.ID, Kind: r.Kind, Status: r.Status, CreatedAt: r.CreatedAt, StartedAt: r.StartedAt,
			DeploymentID: r.DeploymentID, DeploymentName: r.DeploymentName, EnvironmentID: r.EnvironmentID,
			EnvironmentName: r.EnvironmentName, TenantID: r.TenantID, TenantName: r.TenantName}
	}
	return out
}

// environmentsShown is how many environments the dashboard lists; the environments page has
// them all.
const environmentsShown = 20

// failureWindow is how far back the dashboard looks for failures.
const failureWindow = 7 * 24 * time.Hour

// Overview reads the dashboard of the tenants the actor may see.
func (s *Service) Overview(ctx context.Context, actor access.Principal) (Overview, error) {
	var o Overview
	envs, total, err := s.envs.Leading(ctx, actor, environmentsShown)
	if err != nil {
		return o, err
	}
	o.Environments, o.MoreEnvironments = envs, total-len(envs)
	tenants := actor.TenantsWith(access.EnvironmentRead)
	q := db.Queries(s.pool)
	active, err := q.ActiveOperations(ctx, dbgen.ActiveOperationsParams{Running: []string{string(deploy.Queued), string(deploy.Running)},
		Waiting: []string{string(deploy.AwaitingApproval)}, AllTenants: actor.ProviderAdmin, TenantIds: tenants})
	if err != nil {
		return o, fmt.Errorf("operations under way: %w", err)
	}
	for _, a := range operations(active) {
		if deploy.Status(a.Status) == deploy.AwaitingApproval {
			o.Awaiting = append(o.Awaiting, a)
		} else {
			o.Active = append(o.Active, a)
		}
	}
	failures, err := q.RecentFailures(ctx, dbgen.RecentFailuresParams{AllTenants: actor.ProviderAdmin, TenantIds: tenants,
		Since: time.Now().Add(-failureWindow)})
	if err != nil {
		return o, fmt.Errorf("recent failures: %w", err)
	}
	for _, f := range failures {
		o.Failures = append(o.Failures, Failure{ID: f.ID, Kind: f.Kind, Error: f.Error, FinishedAt: f.FinishedAt,
			DeploymentID: f.DeploymentID, DeploymentName: f.DeploymentName, EnvironmentID: f.EnvironmentID,
			EnvironmentName: f.EnvironmentName, TenantID: f.TenantID, TenantName: f.TenantName})
	}
	drifted, err := q.CountDrifted(ctx, dbgen.CountDriftedParams{AllTenants: actor.ProviderAdmin, TenantIds: tenants})
	if err != nil {
		return o, fmt.Errorf("drifted deployments: %w", err)
	}
	o.Drifted = int(drifted)
	if actor.ProviderAdmin {
		steps, err := q.FirstSteps(ctx)
		if err != nil {
			return o, fmt.Errorf("first steps: %w", err)
		}
		o.FirstSteps = &Progress{HasTenant: steps.HasTenant, HasMember: steps.HasMember, HasEnvironment: steps.HasEnvironment,
			HasPool: steps.HasPool, HasZone: steps.HasZone, HasDeployment: steps.HasDeployment}
		list, err := s.pools.List(ctx, actor, ipam.Filter{})
		if err != nil {
			return o, err
		}
		for _, p := range list {
			full, err := s.pools.Get(ctx, actor, p.ID)
			if err != nil {
				return o, err
			}
			o.Pools = append(o.Pools, full)
		}
		// The fullest first: they are the ones to act on.
		slices.SortStableFunc(o.Pools, func(a, b ipam.Pool) int { return cmpDesc(a.Utilisation, b.Utilisation) })
	}
	return o, nil
}

func cmpDesc(a, b float64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

// Handlers serves the dashboard.
type Handlers struct{ svc *Service }

// NewHandlers returns the handlers for svc.
func NewHandlers(svc *Service) *Handlers { return &Handlers{svc: svc} }

// Page shows the dashboard; while anything runs it refreshes its list of running operations.
func (h *Handlers) Page(c echo.Context) error {
	o, err := h.svc.Overview(web.Ctx(c), web.Actor(c))
	if err != nil {
		return err
	}
	page := web.Page(c, "Dashboard")
	// The requests waiting for the viewer, as the navigation counted them for this page.
	v := DashboardView{Waiting: page.Viewer.Approvals, Drifted: o.Drifted, MoreEnvironments: o.MoreEnvironments}
	for _, e := range o.Environments {
		v.Environments = append(v.Environments, environment.EnvironmentRow{ID: e.ID.String(), Tenant: e.TenantName, Name: e.Name, Status: string(e.Status),
			LandingZone: e.LandingZone, Template: e.Template, Created: e.CreatedAt})
	}
	operation := func(a Operation) DashboardOperation {
		return DashboardOperation{ID: a.ID.String(), Kind: a.Kind, Status: a.Status, Deployment: a.DeploymentName,
			DeploymentID: a.DeploymentID.String(), Tenant: a.TenantName, TenantID: a.TenantID.String(),
			Environment: a.EnvironmentName, EnvironmentID: a.EnvironmentID.String(), Since: a.CreatedAt}
	}
	for _, a := range o.Active {
		v.Active = append(v.Active, operation(a))
	}
	for _, a := range o.Awaiting {
		v.Awaiting = append(v.Awaiting, operation(a))
	}
	if o.FirstSteps != nil {
		v.FirstSteps = checklist(*o.FirstSteps)
	}
	for _, f := range o.Failures {
		row := DashboardOperation{ID: f.ID.String(), Kind: f.Kind, Status: string(deploy.Failed), Deployment: f.DeploymentName,
			DeploymentID: f.DeploymentID.String(), Tenant: f.TenantName, TenantID: f.TenantID.String(),
			Environment: f.EnvironmentName, EnvironmentID: f.EnvironmentID.String(), Error: f.Error}
		if f.FinishedAt != nil {
			row.Since = *f.FinishedAt
		}
		v.Failures = append(v.Failures, row)
	}
	for _, p := range o.Pools {
		where := "landing zone " + p.LandingZone
		if p.EnvironmentID != nil {
			where = p.Environment
		}
		v.Pools = append(v.Pools, ipam.PoolRow{ID: p.ID.String(), Name: p.Name, Prefix: p.Prefix.String(), Scope: where, Used: p.Used,
			Utilisation: p.Utilisation})
	}
	v.ShowPools = web.Actor(c).ProviderAdmin
	return web.Render(c, http.StatusOK, Dashboard(page, v))
}

// checklist is the checklist of a new install, in the order the steps depend on each other;
// none once every step is done.
func checklist(f Progress) []FirstStep {
	steps := []FirstStep{
		{Key: "tenant", Text: "Create a tenant", Why: "a team that owns environments and deployments", URL: "/tenants", Done: f.HasTenant},
		{Key: "member", Text: "Add people to it", Why: "create users and give each a role in the tenant", URL: "/users", Done: f.HasMember},
		{Key: "zone", Text: "Publish a landing zone", Why: "where environments open: its provider, resolvers and templates", URL: "/landing-zones", Done: f.HasZone},
		{Key: "pool", Text: "Create an IP pool", Why: "addresses handed out to machines as they are deployed, in a landing zone or an environment", URL: "/ipam", Done: f.HasPool},
		{Key: "environment", Text: "Open an environment", Why: "where the tenant's deployments live, from a landing zone's template", URL: "/environments", Done: f.HasEnvironment},
		{Key: "deployment", Text: "Deploy a component", Why: "pick one in the catalog and deploy it into the environment", URL: "/catalog", Done: f.HasDeployment},
	}
	for _, s := range steps {
		if !s.Done {
			return steps
		}
	}
	return nil
}
