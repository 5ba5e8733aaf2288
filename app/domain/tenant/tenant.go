// Package tenant manages tenants and who belongs to them with which role.
package tenant

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/lifecycle"
	"nimbus/app/kernel/outbox"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/audit"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// Tenant is a tenant as the API and pages show it.
type Tenant struct {
	ID          uuid.UUID `json:"id"`
	Name        string    `json:"name"`
	MemberCount int64     `json:"member_count"`
	CreatedAt   time.Time `json:"created_at"`
	// RemovalRequestedAt is when removing the tenant was asked for while its namespaces on
	// clusters were still there: it is removed once they are decommissioned.
	RemovalRequestedAt *time.Time `json:"removal_requested_at,omitempty"`
}

// Member is one user's membership of a tenant.
type Member struct {
	UserID    uuid.UUID   `json:"user_id"`
	Email     string      `json:"email"`
	Role      access.Role `json:"role"`
	CreatedAt time.Time   `json:"created_at"`
	// Tenant is the tenant's name, where the tenant is not plain from the request.
	Tenant string `json:"tenant,omitempty"`
}

// Service reads and changes tenants on behalf of a principal.
type Service struct {
	pool *pgxpool.Pool
	// namespaces gives tenants namespaces on zones' clusters; nil where nothing is provisioned.
	namespaces Namespaces
}

// NewService returns a Service on pool.
func NewService(pool *pgxpool.Pool) *Service { return &Service{pool: pool} }

// WithNamespaces lets tenants be provisioned on zones' clusters as they are created, and
// decommissioned from them as they are removed.
func (s *Service) WithNamespaces(n Namespaces) *Service {
	s.namespaces = n
	return s
}

// List returns the tenants the actor may see: all for provider admins, their own otherwise.
func (s *Service) List(ctx context.Context, actor access.Principal) ([]Tenant, error) {
	rows, err := db.Queries(s.pool).ListTenants(ctx, dbgen.ListTenantsParams{AllTenants: actor.ProviderAdmin, TenantIds: actor.TenantsWithRole(access.ReadOnly)})
	if err != nil {
		return nil, fmt.Errorf("list tenants: %w", err)
	}
	out := make([]Tenant, len(rows))
	for i, r := range rows {
		out[i] = Tenant{ID: r.ID, Name: r.Name, MemberCount: r.MemberCount, CreatedAt: r.CreatedAt}
	}
	return out, nil
}

// Get returns a tenant the actor may see; any other is not found.
func (s *Service) Get(ctx context.Context, actor access.Principal, id uuid.UUID) (Tenant, error) {
	if !actor.Can(access.TenantRead, id) {
		return Tenant{}, problem.ErrNotFound
	}
	t, err := db.Queries(s.pool).GetTenant(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return Tenant{}, problem.ErrNotFound
	}
	if err != nil {
		return Tenant{}, fmt.Errorf("get tenant: %w", err)
	}
	return Tenant{ID: t.ID, Name: t.Name, CreatedAt: t.CreatedAt, RemovalRequestedAt: t.RemovalRequestedAt}, nil
}

// Create adds a tenant; only provider admins may.
func (s *Service) Create(ctx context.Context, actor access.Principal, name string) (Tenant, error) {
	return s.CreateProvisioned(ctx, actor, name, nil)
}

// CreateProvisioned adds a tenant and, when on is given, provisions it on a zone's cluster with
// the zone's tenant factory, in one transaction: a refused provisioning creates no tenant.
func (s *Service) CreateProvisioned(ctx context.Context, actor access.Principal, name string, on *NamespaceRequest) (Tenant, error) {
	if !actor.ProviderAdmin {
		return Tenant{}, problem.ErrForbidden
	}
	name = strings.TrimSpace(name)
	if err := checkName(name); err != nil {
		return Tenant{}, err
	}
	if on != nil && s.namespaces == nil {
		return Tenant{}, problem.Invalid("provision", "available", "this Nimbus provisions no tenants on clusters")
	}
	if on != nil {
		if err := s.namespaces.Vacant(ctx, name, *on); err != nil {
			return Tenant{}, provisionField(err)
		}
	}
	var out Tenant
	err := db.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := db.Queries(tx)
		taken, err := q.TenantNameTaken(ctx, name)
		if err != nil {
			return err
		}
		if taken {
			return problem.Invalid("name", "unique", "a tenant named %q already exists", name)
		}
		t, err := q.CreateTenant(ctx, name)
		if db.IsUniqueViolation(err) {
			return problem.Invalid("name", "unique", "a tenant named %q already exists", name)
		}
		if err != nil {
			return err
		}
		out = Tenant{ID: t.ID, Name: t.Name, CreatedAt: t.CreatedAt}
		if err := audit.Record(ctx, q, actor, audit.Event{
			Tenant: t.ID, Action: "tenant.create", TargetType: "tenant", TargetID: t.ID.String(), Diff: map[string]any{"name": name},
		}); err != nil {
			return err
		}
		if on == nil {
			return nil
		}
		_, err = s.namespaces.ProvisionTx(ctx, tx, actor, t.ID, *on)
		return provisionField(err)
	})
	if err != nil {
		return Tenant{}, fmt.Errorf("create tenant: %w", err)
	}
	return out, nil
}

// Rename gives a tenant a new name; only provider admins may.
func (s *Service) Rename(ctx context.Context, actor access.Principal, id uuid.UUID, name string) (Tenant, error) {
	before, err := s.Get(ctx, actor, id)
	if err != nil {
		return Tenant{}, err
	}
	if !actor.ProviderAdmin {
		return Tenant{}, problem.ErrForbidden
	}
	name = strings.TrimSpace(name)
	if err := checkName(name); err != nil {
		return Tenant{}, err
	}
	out := before
	err = db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		if !strings.EqualFold(name, before.Name) {
			taken, err := q.TenantNameTaken(ctx, name)
			if err != nil {
				return err
			}
			if taken {
				return problem.Invalid("name", "unique", "a tenant named %q already exists", name)
			}
		}
		t, err := q.RenameTenant(ctx, dbgen.RenameTenantParams{ID: id, Name: name})
		if db.IsUniqueViolation(err) {
			return problem.Invalid("name", "unique", "a tenant named %q already exists", name)
		}
		if errors.Is(err, pgx.ErrNoRows) {
			return problem.ErrNotFound
		}
		if err != nil {
			return err
		}
		out.Name = t.Name
		return audit.Record(ctx, q, actor, audit.Event{
			Tenant: id, Action: "tenant.rename", TargetType: "tenant", TargetID: id.String(),
			Diff: map[string]any{"name": name, "previous_name": before.Name},
		})
	})
	if err != nil {
		return Tenant{}, fmt.Errorf("rename tenant: %w", err)
	}
	return out, nil
}

// Delete removes a tenant with nothing in it: no members, no environment that is not
// decommissioned, no deployment that is not destroyed, no component of its own. Only provider
// admins may; a tenant that is not empty is refused, saying what it still holds.
func (s *Service) Delete(ctx context.Context, actor access.Principal, id uuid.UUID) error {
	t, err := s.Get(ctx, actor, id)
	if err != nil {
		return err
	}
	if !actor.ProviderAdmin {
		return problem.ErrForbidden
	}
	decommission := false
	err = db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		// Held until the end, so that nobody joins the tenant between the count and the delete:
		// whoever adds to a tenant shares its row first (ShareTenant), and so either waits for
		// the delete and finds the tenant gone, or is counted.
		if _, err := q.LockTenant(ctx, id); err != nil {
			return err
		}
		c, err := q.TenantContents(ctx, id)
		if err != nil {
			return err
		}
		if c.Namespaces > 0 && c.Members+c.Environments+c.Deployments+c.Components == 0 && s.namespaces != nil {
			decommission = true
			if err := q.RequestTenantRemoval(ctx, id); err != nil {
				return err
			}
			return audit.Record(ctx, q, actor, audit.Event{Tenant: id, Action: "tenant.remove", TargetType: "tenant", TargetID: id.String(),
				Diff: map[string]any{"name": t.Name, "after": "its namespaces are decommissioned"}})
		}
		if held := holds(c); held != "" {
			return problem.Invalid("tenant", "empty", "%s still has %s: remove them first", t.Name, held)
		}
		return remove(ctx, q, actor, id, t.Name, nil)
	})
	if err != nil {
		return fmt.Errorf("delete tenant: %w", err)
	}
	if decommission {
		err := s.decommission(ctx, actor, t)
		var d *Decommissioning
		if !errors.As(err, &d) {
			// Nothing is being decommissioned, so nothing would end the removal: it is asked
			// for again.
			if drop := db.Queries(s.pool).DropTenantRemoval(ctx, id); drop != nil {
				return errors.Join(err, drop)
			}
		}
		return err
	}
	return nil
}

// remove deletes a tenant, with the audit event that says so; why, when given, says what it
// waited for.
func remove(ctx context.Context, q *dbgen.Queries, actor access.Principal, id uuid.UUID, name string, why map[string]any) error {
	if _, err := q.DeleteTenant(ctx, id); err != nil {
		return err
	}
	diff := map[string]any{"name": name}
	maps.Copy(diff, why)
	return audit.Record(ctx, q, actor, audit.Event{Tenant: id, Action: "tenant.delete", TargetType: "tenant", TargetID: id.String(), Diff: diff})
}

// RemoveWhenDecommissioned is the tenants' reaction to a stack instance destroyed
// (stack.destroyed): when it is the factory instance of the last namespace of a tenant whose
// removal was asked for, the tenant goes with it, removed by Nimbus. A tenant that came to hold
// something else meanwhile stays, and is no longer being removed: removing it is asked for
// again once it is empty.
func RemoveWhenDecommissioned(ctx context.Context, tx pgx.Tx, e outbox.Logged) error {
	q, actor := db.Queries(tx), audit.System
	n, err := q.InstanceTenantNamespace(ctx, uuid.NullUUID{UUID: e.Instance, Valid: e.Instance != uuid.Nil})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	t, err := q.LockTenantRemoval(ctx, n.TenantID)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && t.RemovalRequestedAt == nil {
		return nil
	}
	if err != nil {
		return err
	}
	c, err := q.TenantContents(ctx, t.ID)
	if err != nil {
		return err
	}
	if c.Namespaces > 0 {
		return nil // the others are still being decommissioned; the last one removes it
	}
	if held := holds(c); held != "" {
		if err := q.DropTenantRemoval(ctx, t.ID); err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{Tenant: t.ID, Action: "tenant.remove_stopped", TargetType: "tenant", TargetID: t.ID.String(),
			Diff: map[string]any{"name": t.Name, "holds": held}})
	}
	return remove(ctx, q, actor, t.ID, t.Name, map[string]any{"after": "decommissioning " + n.Namespace})
}

// Decommissioning says that a tenant's removal began with its namespaces on clusters: the
// tenant is removed once the last is gone.
type Decommissioning struct {
	Tenant     string   `json:"tenant"`
	Namespaces []string `json:"namespaces"`
}

func (d *Decommissioning) Error() string {
	return fmt.Sprintf("%s's namespaces (%s) are being decommissioned: the tenant is removed once they are gone", d.Tenant, strings.Join(d.Namespaces, ", "))
}

// decommission starts decommissioning a tenant's namespaces, the last of what it holds.
func (s *Service) decommission(ctx context.Context, actor access.Principal, t Tenant) error {
	if _, err := s.namespaces.DecommissionTenant(ctx, actor, t.ID); err != nil {
		return fmt.Errorf("decommission tenant: %w", err)
	}
	all, err := s.namespaces.List(ctx, actor, t.ID)
	if err != nil {
		return err
	}
	d := &Decommissioning{Tenant: t.Name}
	for _, n := range all {
		if n.Status != lifecycle.InstanceDestroyed {
			d.Namespaces = append(d.Namespaces, n.Namespace+" on "+n.ZoneName)
		}
	}
	return d
}

// provisionField names the fields of a refused provisioning as the request to create a tenant
// holds them, under provision.
func provisionField(err error) error {
	var v *problem.ValidationError
	if !errors.As(err, &v) {
		return err
	}
	out := &problem.ValidationError{}
	for _, f := range v.Fields {
		f.Field = "provision." + f.Field
		out.Fields = append(out.Fields, f)
	}
	return out
}

// holds says what a tenant still holds, as a sentence lists it; "" when nothing.
func holds(c dbgen.TenantContentsRow) string {
	var parts []string
	for _, n := range []struct {
		count     int64
		one, many string
	}{
		{c.Members, "member", "members"},
		{c.Environments, "environment", "environments"},
		{c.Deployments, "deployment", "deployments"},
		{c.Components, "component", "components"},
		{c.Namespaces, "namespace on a cluster", "namespaces on clusters"},
	} {
		switch {
		case n.count == 1:
			parts = append(parts, "1 "+n.one)
		case n.count > 1:
			parts = append(parts, fmt.Sprintf("%d %s", n.count, n.many))
		}
	}
	switch len(parts) {
	case 0:
		return ""
	case 1:
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

func checkName(name string) error {
	switch n := utf8.RuneCountInString(name); {
	case n == 0:
		return problem.Invalid("name", "required", "enter a name")
	case n > 100:
		return problem.Invalid("name", "max_length", "must be at most 100 characters")
	}
	return nil
}
