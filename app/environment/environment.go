// Package environment manages environments: where a tenant's deployments land. Landing zones,
// templates and provisioning come later; for now an environment is a named place in a tenant.
package environment

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"nimbus/app/access"
	"nimbus/app/audit"
	"nimbus/app/problem"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// Environment is an environment as the API and pages show it.
type Environment struct {
	ID         uuid.UUID `json:"id"`
	TenantID   uuid.UUID `json:"tenant_id"`
	TenantName string    `json:"tenant_name"`
	Name       string    `json:"name"`
	Status     string    `json:"status"`
	CreatedAt  time.Time `json:"created_at"`
}

// Service reads and creates environments on behalf of a principal.
type Service struct{ pool *pgxpool.Pool }

// NewService returns a Service on pool.
func NewService(pool *pgxpool.Pool) *Service { return &Service{pool: pool} }

var name = regexp.MustCompile(`^[a-z][a-z0-9-]{0,39}$`)

// List returns the environments of the tenants the actor may see.
func (s *Service) List(ctx context.Context, actor access.Principal) ([]Environment, error) {
	tenants := actor.TenantsWith("environment:read")
	if tenants == nil {
		tenants = []uuid.UUID{}
	}
	rows, err := dbgen.New(s.pool).ListEnvironments(ctx, dbgen.ListEnvironmentsParams{AllTenants: actor.ProviderAdmin, TenantIds: tenants})
	if err != nil {
		return nil, fmt.Errorf("list environments: %w", err)
	}
	out := make([]Environment, len(rows))
	for i, r := range rows {
		out[i] = Environment{ID: r.ID, TenantID: r.TenantID, TenantName: r.TenantName, Name: r.Name, Status: r.Status, CreatedAt: r.CreatedAt}
	}
	return out, nil
}

// Get returns an environment the actor may see; any other is not found.
func (s *Service) Get(ctx context.Context, actor access.Principal, id uuid.UUID) (Environment, error) {
	r, err := dbgen.New(s.pool).GetEnvironment(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return Environment{}, problem.ErrNotFound
	}
	if err != nil {
		return Environment{}, fmt.Errorf("get environment: %w", err)
	}
	if !actor.Can("environment:read", r.TenantID) {
		return Environment{}, problem.ErrNotFound
	}
	return Environment{ID: r.ID, TenantID: r.TenantID, TenantName: r.TenantName, Name: r.Name, Status: r.Status, CreatedAt: r.CreatedAt}, nil
}

// Create adds an environment to a tenant; its tenant admins and provider admins may.
func (s *Service) Create(ctx context.Context, actor access.Principal, tenantID uuid.UUID, envName string) (Environment, error) {
	if !actor.Member(tenantID) {
		return Environment{}, problem.Invalid("tenant_id", "exists", "no tenant with this ID that you can see")
	}
	if !actor.Can("environment:manage", tenantID) {
		return Environment{}, problem.ErrForbidden
	}
	envName = strings.TrimSpace(envName)
	if !name.MatchString(envName) {
		return Environment{}, problem.Invalid("name", "pattern", "must be 1–40 lower-case letters, digits and -, starting with a letter, such as dev or prod-eu")
	}
	var id uuid.UUID
	err := db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		e, err := q.CreateEnvironment(ctx, dbgen.CreateEnvironmentParams{TenantID: tenantID, Name: envName,
			CreatedBy: uuid.NullUUID{UUID: actor.UserID, Valid: actor.UserID != uuid.Nil}})
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

// manageable lists the tenants the actor may add environments to; a failed read lists none,
// which only hides the form.
func (s *Service) manageable(ctx context.Context, actor access.Principal) []dbgen.ListTenantsRow {
	rows, err := dbgen.New(s.pool).ListTenants(ctx, dbgen.ListTenantsParams{AllTenants: actor.ProviderAdmin, UserID: actor.UserID})
	if err != nil {
		return nil
	}
	out := rows[:0]
	for _, r := range rows {
		if actor.Can("environment:manage", r.ID) {
			out = append(out, r)
		}
	}
	return out
}
