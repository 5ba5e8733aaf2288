package provision

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

	"nimbus/app/domain/cluster"
	"nimbus/app/domain/stack"
	"nimbus/app/domain/tenant"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/lifecycle"
	"nimbus/app/kernel/problem"
	"nimbus/app/kernel/secrets"
	"nimbus/app/orchestration/instance"
	"nimbus/app/platform/audit"
	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/views"
)

// Service provisions tenants on zones' clusters and decommissions them, for provider admins.
type Service struct {
	pool      *pgxpool.Pool
	keys      *secrets.Keyring
	stacks    *stack.Service
	instances *instance.Service
}

// NewService returns the service: keys opens zones' kubeconfigs, stacks creates the factory's
// stack, instances deploys and destroys the factory's instances.
func NewService(pool *pgxpool.Pool, keys *secrets.Keyring, stacks *stack.Service, instances *instance.Service) *Service {
	return &Service{pool: pool, keys: keys, stacks: stacks, instances: instances}
}

var namespaceName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,18}$`)

// reserved are the namespaces Kubernetes and its add-ons keep for themselves: a factory
// adopting one would hand a tenant the cluster's own.
func reserved(ns string) bool {
	return ns == "default" || strings.HasPrefix(ns, "kube-") || strings.HasPrefix(ns, "nimbus-")
}

// NamespaceFor makes a tenant's name a namespace name: lower case, runs of anything else
// turned to -, at most 19 characters, starting with a letter.
func NamespaceFor(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9' && b.Len() > 0:
			b.WriteRune(r)
			dash = false
		case b.Len() > 0 && !dash:
			b.WriteByte('-')
			dash = true
		}
	}
	s := b.String()
	if len(s) > 19 {
		s = s[:19]
	}
	return strings.TrimRight(s, "-")
}

func fromRow(id, tenantID, zone uuid.UUID, zoneName, ns string, inst uuid.NullUUID, status, msg string, at time.Time) tenant.Namespace {
	n := tenant.Namespace{ID: id, TenantID: tenantID, LandingZoneID: zone, ZoneName: zoneName, Namespace: ns, Status: lifecycle.InstanceStatus(status), Error: msg, CreatedAt: at}
	if inst.Valid {
		n.InstanceID = &inst.UUID
	}
	return n
}

// List returns a tenant's namespaces on clusters, to provider admins.
func (s *Service) List(ctx context.Context, actor access.Principal, tenantID uuid.UUID) ([]tenant.Namespace, error) {
	if !actor.ProviderAdmin {
		return nil, problem.ErrNotFound
	}
	rows, err := db.Queries(s.pool).TenantNamespaces(ctx, tenantID)
	if err != nil {
		return nil, fmt.Errorf("tenant namespaces: %w", err)
	}
	out := make([]tenant.Namespace, len(rows))
	for i, r := range rows {
		out[i] = fromRow(r.ID, r.TenantID, r.LandingZoneID, r.ZoneName, r.Namespace, r.StackInstanceID, r.InstanceStatus, r.InstanceError, r.CreatedAt)
	}
	return out, nil
}

// Get returns one of a tenant's namespaces, to provider admins.
func (s *Service) Get(ctx context.Context, actor access.Principal, id uuid.UUID) (tenant.Namespace, error) {
	if !actor.ProviderAdmin {
		return tenant.Namespace{}, problem.ErrNotFound
	}
	r, err := db.Queries(s.pool).GetTenantNamespace(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return tenant.Namespace{}, problem.ErrNotFound
	}
	if err != nil {
		return tenant.Namespace{}, err
	}
	return fromRow(r.ID, r.TenantID, r.LandingZoneID, r.ZoneName, r.Namespace, r.StackInstanceID, r.InstanceStatus, r.InstanceError, r.CreatedAt), nil
}

// Provision runs the zone's tenant factory for a tenant: an instance of the factory's stack,
// named after the namespace, in the zone's system environment, where it deploys with the
// zone's credentials. The namespace and the instance are recorded in one transaction.
func (s *Service) Provision(ctx context.Context, actor access.Principal, tenantID uuid.UUID, in tenant.NamespaceRequest) (tenant.Namespace, error) {
	if !actor.ProviderAdmin {
		return tenant.Namespace{}, problem.ErrForbidden
	}
	t, err := db.Queries(s.pool).GetTenant(ctx, tenantID)
	if errors.Is(err, pgx.ErrNoRows) {
		return tenant.Namespace{}, problem.ErrNotFound
	}
	if err != nil {
		return tenant.Namespace{}, err
	}
	if err := s.Vacant(ctx, t.Name, in); err != nil {
		return tenant.Namespace{}, err
	}
	var id uuid.UUID
	err = db.BeginFunc(ctx, s.pool, func(tx pgx.Tx) (err error) {
		id, err = s.ProvisionTx(ctx, tx, actor, tenantID, in)
		return err
	})
	if err != nil {
		return tenant.Namespace{}, fmt.Errorf("provision tenant: %w", err)
	}
	return s.Get(ctx, actor, id)
}

// Vacant refuses a namespace that the zone's cluster has already, which the factory would
// adopt and delete with everything in it on decommissioning. It asks the API server, and so is
// called before the transaction that provisions: name is the tenant's name, whose namespace
// name is the default. Anything else wrong with the request is left to ProvisionTx to say.
func (s *Service) Vacant(ctx context.Context, name string, in tenant.NamespaceRequest) error {
	ns := strings.TrimSpace(in.Namespace)
	if ns == "" {
		ns = NamespaceFor(name)
	}
	if !namespaceName.MatchString(ns) || reserved(ns) {
		return nil
	}
	raw, err := cluster.Open(ctx, db.Queries(s.pool), s.keys, in.LandingZoneID)
	if errors.Is(err, cluster.ErrNoCluster) {
		return nil
	}
	if err != nil {
		return err
	}
	kc, err := cluster.ParseKubeconfig(raw)
	if err != nil {
		return err
	}
	exists, err := kc.NamespaceExists(ctx, ns)
	switch {
	case err != nil:
		return problem.Invalid("landing_zone_id", "reachable", "%v", err)
	case exists:
		return problem.Invalid("namespace", "vacant", "the cluster has a namespace %s already: a tenant is given a namespace the factory makes, never one it would take over", ns)
	}
	return nil
}

// ProvisionTx is Provision within the caller's transaction, for a tenant created in it; it
// returns the namespace's ID. The caller has asked Vacant first.
func (s *Service) ProvisionTx(ctx context.Context, tx pgx.Tx, actor access.Principal, tenantID uuid.UUID, in tenant.NamespaceRequest) (uuid.UUID, error) {
	if !actor.ProviderAdmin {
		return uuid.Nil, problem.ErrForbidden
	}
	q := db.Queries(tx)
	var id uuid.UUID
	err := func() error {
		t, err := q.ShareTenant(ctx, tenantID)
		if errors.Is(err, pgx.ErrNoRows) || err == nil && t.System {
			return problem.ErrNotFound
		}
		if err != nil {
			return err
		}
		if t.RemovalRequestedAt != nil {
			return problem.Invalid("tenant", "state", "%s is being removed: it is given no new namespace", t.Name)
		}
		in.Namespace = strings.TrimSpace(in.Namespace)
		if in.Namespace == "" {
			in.Namespace = NamespaceFor(t.Name)
		}
		v := &problem.ValidationError{}
		switch {
		case !namespaceName.MatchString(in.Namespace):
			v.Add("namespace", "pattern", "a namespace's name is 1–19 lower-case letters, digits and -, starting with a letter")
		case reserved(in.Namespace):
			v.Add("namespace", "reserved", "%s is the cluster's own: default, kube-* and nimbus-* are not given to tenants", in.Namespace)
		}
		z, err := q.ShareLandingZone(ctx, in.LandingZoneID)
		if errors.Is(err, pgx.ErrNoRows) {
			v.Add("landing_zone_id", "exists", "no landing zone with this ID")
			return v
		}
		if err != nil {
			return err
		}
		switch has, err := q.ZoneHasCluster(ctx, z.ID); {
		case err != nil:
			return err
		case z.Provider != cluster.Provider:
			v.Add("landing_zone_id", "provider", "%s is a %s zone: tenants are provisioned on Kubernetes zones", z.Name, z.Provider)
		case lifecycle.ZoneStatus(z.Status) != lifecycle.ZonePublished:
			v.Add("landing_zone_id", "state", "%s is %s: tenants are provisioned on published zones", z.Name, z.Status)
		case !has:
			v.Add("landing_zone_id", "cluster", "%s has no cluster: set one on its cluster page", z.Name)
		case !z.TenantStackID.Valid:
			v.Add("landing_zone_id", "factory", "%s has no tenant factory: choose its stack on the zone's tenant factory page", z.Name)
		}
		if err := v.Err(); err != nil {
			return err
		}
		if err := q.ForgetDecommissionedNamespaces(ctx, dbgen.ForgetDecommissionedNamespacesParams{TenantID: t.ID, LandingZoneID: z.ID, Namespace: in.Namespace}); err != nil {
			return err
		}
		switch held, err := q.TenantNamespace(ctx, dbgen.TenantNamespaceParams{TenantID: t.ID, LandingZoneID: z.ID}); {
		case err == nil:
			return problem.Invalid("landing_zone_id", "unique", "%s has namespace %s on %s already", t.Name, held.Namespace, z.Name)
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		params := map[string]any{"namespace": in.Namespace}
		if in.Tier != "" {
			params["tier"] = in.Tier
		}
		if err := governed(ctx, q, t.ID, z.TenantStackID.UUID, params); err != nil {
			return err
		}
		inst, err := s.instances.DeployTx(ctx, tx, actor, instance.Request{StackID: z.TenantStackID.UUID,
			EnvironmentID: z.SystemEnvironmentID.UUID, Name: in.Namespace, Parameters: params})
		if err != nil {
			return asked(err)
		}
		n, err := q.CreateTenantNamespace(ctx, dbgen.CreateTenantNamespaceParams{TenantID: t.ID, LandingZoneID: z.ID,
			Namespace: in.Namespace, StackInstanceID: uuid.NullUUID{UUID: inst, Valid: true},
			CreatedBy: uuid.NullUUID{UUID: actor.UserID, Valid: actor.UserID != uuid.Nil}})
		if db.IsUniqueViolation(err) {
			return problem.Invalid("namespace", "unique", "namespace %s on %s is another tenant's", in.Namespace, z.Name)
		}
		if err != nil {
			return err
		}
		id = n.ID
		return audit.Record(ctx, q, actor, audit.Event{Tenant: t.ID, Action: "tenant.provision", TargetType: "tenant_namespace",
			TargetID: n.ID.String(), Diff: map[string]any{"landing_zone": z.Name, "namespace": in.Namespace, "tier": in.Tier,
				"stack_instance_id": inst.String()}})
	}()
	return id, err
}

// asked names a refusal of the factory's instance by the fields of a Request: the instance is
// named after the namespace, and its parameters are the namespace and the tier.
func asked(err error) error {
	var v *problem.ValidationError
	if !errors.As(err, &v) {
		return err
	}
	out := &problem.ValidationError{}
	for _, f := range v.Fields {
		input, parameter := problem.Within(f.Field, "parameters")
		switch {
		case f.Field == "name":
			f.Field = "namespace"
			if f.Rule == "unique" {
				f.Message = "the zone's system environment holds a factory instance of this name already: the namespace is taken"
			}
		case parameter && input != "":
			f.Field = input
		}
		out.Fields = append(out.Fields, f)
	}
	return out
}

// Decommission destroys the factory's instance that made a tenant's namespace: the namespace and
// everything in it are deleted from the cluster. The record goes once the instance is destroyed.
func (s *Service) Decommission(ctx context.Context, actor access.Principal, id uuid.UUID) (tenant.Namespace, error) {
	n, err := s.Get(ctx, actor, id)
	if err != nil {
		return tenant.Namespace{}, err
	}
	if n.InstanceID == nil || n.Status == lifecycle.InstanceDestroyed {
		return tenant.Namespace{}, problem.Invalid("namespace", "state", "%s on %s is decommissioned already", n.Namespace, n.ZoneName)
	}
	err = db.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := db.Queries(tx)
		// The tenant's deployments live in the namespace and are destroyed with its account's
		// token: taken down first, they would be left where nothing can destroy them.
		live, err := q.TenantZoneDeployments(ctx, dbgen.TenantZoneDeploymentsParams{TenantID: n.TenantID, LandingZoneID: uuid.NullUUID{UUID: n.LandingZoneID, Valid: true}})
		if err != nil {
			return err
		}
		if live > 0 {
			return problem.Invalid("namespace", "in_use", "%s still has %d %s on %s: destroy them first", n.Namespace, live, views.Plural(int(live), "deployment", "deployments"), n.ZoneName)
		}
		if err := s.instances.DestroyTx(ctx, tx, actor, *n.InstanceID); err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{Tenant: n.TenantID, Action: "tenant.decommission", TargetType: "tenant_namespace",
			TargetID: n.ID.String(), Diff: map[string]any{"landing_zone": n.ZoneName, "namespace": n.Namespace}})
	})
	if err != nil {
		return tenant.Namespace{}, fmt.Errorf("decommission: %w", err)
	}
	return s.Get(ctx, actor, id)
}

// DecommissionTenant decommissions every namespace of a tenant's that is not being or has not
// been already, and returns those it started on: removing a tenant takes its namespaces first.
func (s *Service) DecommissionTenant(ctx context.Context, actor access.Principal, tenantID uuid.UUID) ([]tenant.Namespace, error) {
	all, err := s.List(ctx, actor, tenantID)
	if err != nil {
		return nil, err
	}
	var started []tenant.Namespace
	for _, n := range all {
		if n.InstanceID == nil || n.Status == lifecycle.InstanceDestroyed || n.Status == lifecycle.InstanceDestroying {
			continue
		}
		d, err := s.Decommission(ctx, actor, n.ID)
		if err != nil {
			return started, err
		}
		started = append(started, d)
	}
	return started, nil
}
