// Package user manages the people who can sign in to Nimbus.
package user

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"nimbus/app/domain/auth"
	"nimbus/app/domain/tenant"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/audit"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// User is a person as the API and pages show them: never with their password hash.
type User struct {
	ID            uuid.UUID `json:"id"`
	Email         string    `json:"email"`
	ProviderAdmin bool      `json:"provider_admin"`
	Disabled      bool      `json:"disabled"`
	CreatedAt     string    `json:"created_at"`
	// Tenants are the user's memberships in the tenants the viewer may see.
	Tenants []Membership `json:"tenants,omitempty"`
	created time.Time
}

// Membership is a user's role in one tenant.
type Membership struct {
	TenantID uuid.UUID   `json:"tenant_id"`
	Tenant   string      `json:"tenant"`
	Role     access.Role `json:"role"`
}

// fromRow drops what must not leave the server.
func fromRow(u dbgen.User) User {
	return User{ID: u.ID, Email: u.Email, ProviderAdmin: u.IsProviderAdmin, Disabled: u.DisabledAt != nil, CreatedAt: u.CreatedAt.UTC().Format("2006-01-02T15:04:05Z"),
		created: u.CreatedAt}
}

// Created is when the user was created.
func (u User) Created() time.Time { return u.created }

// NewUser is what it takes to create a user; with a tenant, the user joins it with the role.
type NewUser struct {
	Email         string      `json:"email"`
	Password      string      `json:"password"`
	ProviderAdmin bool        `json:"provider_admin"`
	TenantID      uuid.UUID   `json:"tenant_id"`
	Role          access.Role `json:"role"`
}

// Service reads and creates users on behalf of a principal.
type Service struct {
	pool *pgxpool.Pool
}

// NewService returns a Service on pool.
func NewService(pool *pgxpool.Pool) *Service { return &Service{pool: pool} }

// List returns the users the actor may see: everyone for provider admins, the members of the
// tenants they administer for tenant admins.
func (s *Service) List(ctx context.Context, actor access.Principal) ([]User, error) {
	if !actor.CanSomewhere(access.UserRead) {
		return nil, problem.ErrForbidden
	}
	q := db.Queries(s.pool)
	rows, err := q.ListUsers(ctx, dbgen.ListUsersParams{AllUsers: actor.ProviderAdmin, AdminTenants: actor.TenantsWithRole(access.TenantAdmin)})
	if err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	out := make([]User, len(rows))
	ids := make([]uuid.UUID, len(rows))
	at := make(map[uuid.UUID]int, len(rows))
	for i, r := range rows {
		out[i], ids[i], at[r.ID] = fromRow(r), r.ID, i
	}
	tenants := actor.TenantsWith(access.UserRead)
	if tenants == nil {
		tenants = []uuid.UUID{}
	}
	memberships, err := q.ListUserMemberships(ctx, dbgen.ListUserMembershipsParams{UserIds: ids, AllTenants: actor.ProviderAdmin, TenantIds: tenants})
	if err != nil {
		return nil, fmt.Errorf("list users' memberships: %w", err)
	}
	for _, m := range memberships {
		u := &out[at[m.UserID]]
		u.Tenants = append(u.Tenants, Membership{TenantID: m.TenantID, Tenant: m.TenantName, Role: access.Role(m.Role)})
	}
	return out, nil
}

// Get returns one user the actor may see; any other is not found.
func (s *Service) Get(ctx context.Context, actor access.Principal, id uuid.UUID) (User, error) {
	q := db.Queries(s.pool)
	if !actor.ProviderAdmin && actor.UserID != id {
		shares, err := q.UserSharesAdminTenant(ctx, dbgen.UserSharesAdminTenantParams{UserID: id, AdminTenants: actor.TenantsWithRole(access.TenantAdmin)})
		if err != nil {
			return User{}, fmt.Errorf("get user: %w", err)
		}
		if !shares {
			return User{}, problem.ErrNotFound
		}
	}
	u, err := q.GetUser(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return User{}, problem.ErrNotFound
	}
	if err != nil {
		return User{}, fmt.Errorf("get user: %w", err)
	}
	out := fromRow(u)
	tenants := actor.TenantsWith(access.UserRead)
	if tenants == nil {
		tenants = []uuid.UUID{}
	}
	memberships, err := q.ListUserMemberships(ctx, dbgen.ListUserMembershipsParams{UserIds: []uuid.UUID{id}, AllTenants: actor.ProviderAdmin, TenantIds: tenants})
	if err != nil {
		return User{}, fmt.Errorf("get user's memberships: %w", err)
	}
	for _, m := range memberships {
		out.Tenants = append(out.Tenants, Membership{TenantID: m.TenantID, Tenant: m.TenantName, Role: access.Role(m.Role)})
	}
	return out, nil
}

// Create adds a user; only provider admins may.
func (s *Service) Create(ctx context.Context, actor access.Principal, in NewUser) (User, error) {
	if !actor.ProviderAdmin {
		return User{}, problem.ErrForbidden
	}
	var out User
	err := db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		var err error
		out, err = create(ctx, q, actor, in)
		return err
	})
	return out, err
}

// Bootstrap creates the first provider admin when there are no users at all, and reports
// whether it did. It runs as the system, at start and from the command line.
func Bootstrap(ctx context.Context, pool *pgxpool.Pool, email, password string) (bool, error) {
	created := false
	err := db.Tx(ctx, pool, func(q *dbgen.Queries) error {
		// Replicas starting together must not both create an admin.
		if _, err := q.LockUsersForBootstrap(ctx); err != nil {
			return err
		}
		n, err := q.CountUsers(ctx)
		if err != nil || n > 0 {
			return err
		}
		_, err = create(ctx, q, audit.System, NewUser{Email: email, Password: password, ProviderAdmin: true})
		created = err == nil
		return err
	})
	return created, err
}

// CreateBySystem adds a user on behalf of an operator at the command line.
func CreateBySystem(ctx context.Context, pool *pgxpool.Pool, in NewUser) (User, error) {
	var out User
	err := db.Tx(ctx, pool, func(q *dbgen.Queries) error {
		var err error
		out, err = create(ctx, q, audit.System, in)
		return err
	})
	return out, err
}

func create(ctx context.Context, q *dbgen.Queries, actor access.Principal, in NewUser) (User, error) {
	in.Email = strings.TrimSpace(in.Email)
	v := &problem.ValidationError{}
	if err := auth.CheckEmail("email", in.Email); err != nil {
		v.Fields = append(v.Fields, err.(*problem.ValidationError).Fields...)
	}
	if err := auth.CheckPassword("password", in.Password); err != nil {
		v.Fields = append(v.Fields, err.(*problem.ValidationError).Fields...)
	}
	if err := v.Err(); err != nil {
		return User{}, err
	}
	if _, err := q.GetUserByEmail(ctx, in.Email); err == nil {
		return User{}, problem.Invalid("email", "unique", "a user with this email already exists")
	} else if !errors.Is(err, pgx.ErrNoRows) {
		return User{}, fmt.Errorf("create user: %w", err)
	}
	hash, err := auth.HashPassword(in.Password)
	if err != nil {
		return User{}, fmt.Errorf("create user: %w", err)
	}
	row, err := q.CreateUser(ctx, dbgen.CreateUserParams{Email: in.Email, PasswordHash: hash, IsProviderAdmin: in.ProviderAdmin})
	if db.IsUniqueViolation(err) {
		return User{}, problem.Invalid("email", "unique", "a user with this email already exists")
	}
	if err != nil {
		return User{}, fmt.Errorf("create user: %w", err)
	}
	err = audit.Record(ctx, q, actor, audit.Event{
		Action: "user.create", TargetType: "user", TargetID: row.ID.String(),
		Diff: map[string]any{"email": row.Email, "provider_admin": row.IsProviderAdmin},
	})
	if err != nil || in.TenantID == uuid.Nil {
		return fromRow(row), err
	}
	m, err := tenant.Join(ctx, q, actor, in.TenantID, row.ID, in.Role)
	out := fromRow(row)
	out.Tenants = []Membership{{TenantID: in.TenantID, Tenant: m.Tenant, Role: m.Role}}
	return out, err
}
