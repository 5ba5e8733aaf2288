// Package ipam hands out addresses and subnets from pools of IPv4 and IPv6 prefixes, to the
// deployments that ask for them, and takes them back. No address is ever handed out twice:
// allocations from one pool take turns under the pool's row lock, and an exclusion constraint
// refuses any overlap whatever the code does.
package ipam

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/lifecycle"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/audit"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// Pool is a prefix addresses are handed out from. It belongs to one environment of a tenant,
// or to a landing zone whose environments share it.
type Pool struct {
	ID            uuid.UUID      `json:"id"`
	TenantID      *uuid.UUID     `json:"tenant_id"`
	Tenant        string         `json:"tenant"` // none for a landing zone's pool
	EnvironmentID *uuid.UUID     `json:"environment_id"`
	Environment   string         `json:"environment"`
	LandingZoneID *uuid.UUID     `json:"landing_zone_id"`
	LandingZone   string         `json:"landing_zone"`
	Name          string         `json:"name"`
	Prefix        netip.Prefix   `json:"prefix"`
	Gateway       netip.Addr     `json:"gateway"`
	Reserved      []netip.Prefix `json:"reserved"`
	Used          int            `json:"used"` // allocations
	// Utilisation is the share of the pool's usable addresses allocated or reserved, 0 to 1:
	// Taken of Addresses, Reserved of them kept out of use.
	Utilisation       float64      `json:"utilisation"`
	Addresses         float64      `json:"addresses"`
	Taken             float64      `json:"taken"`
	ReservedAddresses float64      `json:"reserved_addresses"`
	Allocations       []Allocation `json:"allocations,omitempty"`
	CreatedAt         time.Time    `json:"created_at"`
}

// Allocation is an address or a subnet handed out.
type Allocation struct {
	ID           uuid.UUID    `json:"id"`
	Prefix       netip.Prefix `json:"prefix"`
	Kind         string       `json:"kind"` // address or subnet
	DeploymentID *uuid.UUID   `json:"deployment_id"`
	Deployment   string       `json:"deployment"`
	Input        string       `json:"input"`  // the resolver's key it is held under: ipam or ipam.subnet
	Inputs       string       `json:"inputs"` // the deployment's inputs it fills, by name
	// ParentID is the subnet allocation an address was handed out in: the network its machine
	// joins. None for an address or subnet of the pool itself.
	ParentID *uuid.UUID `json:"parent_id,omitempty"`
	// Replaces is the allocation this one takes the place of when the operation moving its
	// deployment here succeeds; until then the deployment holds both.
	Replaces  *uuid.UUID `json:"replaces,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
}

// NewPool is a pool to create, in an environment or a landing zone.
type NewPool struct {
	Name          string    `json:"name"`
	Prefix        string    `json:"prefix"`
	EnvironmentID uuid.UUID `json:"environment_id"`
	LandingZoneID uuid.UUID `json:"landing_zone_id"`
	Reserved      []string  `json:"reserved"`
}

// scope is where a new pool goes, as the database and the messages name it. family is the
// landing zone whose environments may share addresses with it: the pool's own, or its
// environment's.
type scope struct {
	tenant, environment, zone, family uuid.NullUUID
	name                              string
}

// scopeOf finds the environment or landing zone a new pool names; exactly one must be named.
func scopeOf(ctx context.Context, q *dbgen.Queries, actor access.Principal, in NewPool) (scope, error) {
	switch {
	case in.EnvironmentID != uuid.Nil && in.LandingZoneID != uuid.Nil:
		return scope{}, problem.Invalid("landing_zone_id", "one_of", "give environment_id or landing_zone_id, not both")
	case in.LandingZoneID != uuid.Nil:
		z, err := q.GetLandingZone(ctx, in.LandingZoneID)
		if errors.Is(err, pgx.ErrNoRows) || err == nil && !actor.ProviderAdmin {
			return scope{}, problem.Invalid("landing_zone_id", "exists", "no landing zone with this ID that you can see")
		}
		if err != nil {
			return scope{}, err
		}
		if lifecycle.ZoneStatus(z.Status) == lifecycle.ZoneRetired {
			return scope{}, problem.Invalid("landing_zone_id", "retired", "landing zone %s is retired", z.Name)
		}
		id := uuid.NullUUID{UUID: z.ID, Valid: true}
		return scope{zone: id, family: id, name: "landing zone " + z.Name}, nil
	case in.EnvironmentID != uuid.Nil:
		env, err := q.GetEnvironment(ctx, in.EnvironmentID)
		if errors.Is(err, pgx.ErrNoRows) || err == nil && !actor.Can(access.ResolverConfigRead, env.TenantID) {
			return scope{}, problem.Invalid("environment_id", "exists", "no environment with this ID that you can see")
		}
		if err != nil {
			return scope{}, err
		}
		if !actor.Can(access.ResolverConfigManage, env.TenantID) {
			return scope{}, problem.ErrForbidden
		}
		return scope{tenant: uuid.NullUUID{UUID: env.TenantID, Valid: true}, environment: uuid.NullUUID{UUID: env.ID, Valid: true},
			family: env.LandingZoneID, name: env.Name}, nil
	}
	return scope{}, problem.Invalid("environment_id", "required", "give the environment or the landing zone (landing_zone_id) the pool belongs to")
}

// Service manages pools on behalf of a principal.
type Service struct{ pool *pgxpool.Pool }

// NewService returns a Service.
func NewService(pool *pgxpool.Pool) *Service { return &Service{pool: pool} }

// CreatePool adds a pool to an environment or a landing zone. Provider admins configure
// resolvers.
func (s *Service) CreatePool(ctx context.Context, actor access.Principal, in NewPool) (Pool, error) {
	where, err := scopeOf(ctx, db.Queries(s.pool), actor, in)
	if err != nil {
		return Pool{}, err
	}
	v := &problem.ValidationError{}
	in.Name = strings.TrimSpace(in.Name)
	if in.Name == "" || len(in.Name) > 100 {
		v.Add("name", "length", "must be 1–100 characters")
	}
	prefix := parsePrefix("prefix", in.Prefix, v)
	var reserved []netip.Prefix
	for i, r := range in.Reserved {
		field := fmt.Sprintf("reserved[%d]", i)
		p := parsePrefix(field, r, v)
		if p.IsValid() && prefix.IsValid() && (!prefix.Contains(p.Addr()) || p.Bits() < prefix.Bits()) {
			v.Add(field, "within", "%s is not inside %s", p, prefix)
		}
		reserved = append(reserved, p)
	}
	if err := v.Err(); err != nil {
		return Pool{}, err
	}
	if reserved == nil {
		reserved = []netip.Prefix{}
	}
	var row dbgen.IpamPool
	err = db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		if where.family.Valid {
			// A zone's environments may hand out from its pools and their own: none may share an
			// address. Pools of one zone are made one at a time.
			if _, err := q.LockLandingZone(ctx, where.family.UUID); err != nil {
				return err
			}
			other, err := q.OverlappingPool(ctx, dbgen.OverlappingPoolParams{Prefix: prefix, LandingZoneID: where.family.UUID})
			if err == nil {
				return problem.Invalid("prefix", "overlap", "%s overlaps pool %s, which the same landing zone's environments use", prefix, other)
			}
			if !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
		}
		row, err = q.CreatePool(ctx, dbgen.CreatePoolParams{TenantID: where.tenant, EnvironmentID: where.environment, LandingZoneID: where.zone,
			Name: in.Name, Prefix: prefix, Reserved: reserved, CreatedBy: uuid.NullUUID{UUID: actor.UserID, Valid: actor.UserID != uuid.Nil}})
		switch {
		case db.IsExclusionViolation(err):
			return problem.Invalid("prefix", "overlap", "%s overlaps another pool of %s", prefix, where.name)
		case db.IsUniqueViolation(err):
			return problem.Invalid("name", "unique", "%s already has a pool named %q", where.name, in.Name)
		case err != nil:
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{Tenant: where.tenant.UUID, Action: "ipam_pool.create", TargetType: "ipam_pool",
			TargetID: row.ID.String(), Diff: map[string]any{"name": in.Name, "prefix": prefix.String(), "scope": where.name}})
	})
	if err != nil {
		return Pool{}, fmt.Errorf("create pool: %w", err)
	}
	return s.Get(ctx, actor, row.ID)
}

// parsePrefix reads a prefix in CIDR notation, refusing one with host bits set, which is
// almost always a typo for the network it names.
func parsePrefix(field, text string, v *problem.ValidationError) netip.Prefix {
	p, err := netip.ParsePrefix(strings.TrimSpace(text))
	switch {
	case err != nil:
		v.Add(field, "cidr", "%q is not a prefix such as 10.0.0.0/24 or 2001:db8::/64", text)
		return netip.Prefix{}
	case p != p.Masked():
		v.Add(field, "cidr", "%s has host bits set: did you mean %s?", p, p.Masked())
		return netip.Prefix{}
	}
	return p
}

// Get returns a pool the actor may see, with its allocations and their owners.
func (s *Service) Get(ctx context.Context, actor access.Principal, id uuid.UUID) (Pool, error) {
	q := db.Queries(s.pool)
	r, err := q.GetPool(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && !canRead(actor, r.TenantID) {
		return Pool{}, problem.ErrNotFound
	}
	if err != nil {
		return Pool{}, fmt.Errorf("get pool: %w", err)
	}
	rows, err := q.PoolAllocations(ctx, id)
	if err != nil {
		return Pool{}, fmt.Errorf("pool allocations: %w", err)
	}
	p := poolOf(dbgen.IpamPool{ID: r.ID, TenantID: r.TenantID, EnvironmentID: r.EnvironmentID, LandingZoneID: r.LandingZoneID,
		Name: r.Name, Prefix: r.Prefix, Reserved: r.Reserved, CreatedAt: r.CreatedAt}, r.EnvironmentName, r.LandingZoneName)
	p.Tenant = r.TenantName
	p.Allocations = make([]Allocation, len(rows))
	taken := append([]netip.Prefix{}, r.Reserved...)
	for i, a := range rows {
		p.Allocations[i] = Allocation{ID: a.ID, Prefix: a.Prefix, Kind: a.Kind, Deployment: a.DeploymentName, Input: a.Input, Inputs: a.Inputs, CreatedAt: a.CreatedAt}
		p.Allocations[i].DeploymentID, p.Allocations[i].ParentID, p.Allocations[i].Replaces = idOf(a.DeploymentID), idOf(a.ParentID), idOf(a.Replaces)
		taken = append(taken, a.Prefix)
	}
	p.Used, p.Utilisation = len(rows), utilisation(r.Prefix, taken)
	p.Addresses, p.Taken, p.ReservedAddresses = usable(r.Prefix), covered(taken), covered(r.Reserved)
	return p, nil
}

// canRead reports whether the actor may see a pool of tenantID; a landing zone's pool (no
// tenant) is shared by many tenants, and only provider admins see it whole.
func canRead(actor access.Principal, tenantID uuid.NullUUID) bool {
	if !tenantID.Valid {
		return actor.ProviderAdmin
	}
	return actor.Can(access.ResolverConfigRead, tenantID.UUID)
}

func poolOf(r dbgen.IpamPool, env, zone string) Pool {
	return Pool{ID: r.ID, TenantID: idOf(r.TenantID), EnvironmentID: idOf(r.EnvironmentID), Environment: env,
		LandingZoneID: idOf(r.LandingZoneID), LandingZone: zone, Name: r.Name, Prefix: r.Prefix,
		Gateway: gateway(r.Prefix), Reserved: r.Reserved, CreatedAt: r.CreatedAt}
}

func idOf(id uuid.NullUUID) *uuid.UUID {
	if !id.Valid {
		return nil
	}
	return &id.UUID
}

// utilisation is the share of the pool's addresses taken, counting overlapping ranges once.
func utilisation(pool netip.Prefix, taken []netip.Prefix) float64 {
	return min(covered(taken)/usable(pool), 1)
}

// covered is how many addresses taken covers, each counted once.
func covered(taken []netip.Prefix) float64 {
	var n float64
	var end netip.Addr // the last address counted so far
	for _, b := range blocked(taken) {
		if end.IsValid() && b.last.Compare(end) <= 0 {
			continue
		}
		first := b.first
		if end.IsValid() && first.Compare(end) <= 0 {
			first = end.Next()
		}
		n += count(first, b.last)
		end = b.last
	}
	return n
}

// usable is how many addresses of a pool may be handed out or reserved: all but an IPv4
// subnet's own address and its broadcast address.
func usable(p netip.Prefix) float64 {
	n := size(p)
	if p.Addr().Is4() && p.Bits() < 31 {
		n -= 2
	}
	return n
}

// count is how many addresses lie from first to last, for ranges inside one prefix.
func count(first, last netip.Addr) float64 {
	a, b := first.As16(), last.As16()
	var d float64
	for i := range 16 {
		d = d*256 + float64(int(b[i])-int(a[i]))
	}
	return d + 1
}

// Filter narrows a list of pools to one environment's or one landing zone's.
type Filter struct{ EnvironmentID, LandingZoneID uuid.UUID }

// List returns the pools the actor may see.
func (s *Service) List(ctx context.Context, actor access.Principal, f Filter) ([]Pool, error) {
	rows, err := db.Queries(s.pool).ListPools(ctx, dbgen.ListPoolsParams{AllTenants: actor.ProviderAdmin,
		TenantIds:     actor.TenantsWith(access.ResolverConfigRead),
		EnvironmentID: uuid.NullUUID{UUID: f.EnvironmentID, Valid: f.EnvironmentID != uuid.Nil},
		LandingZoneID: uuid.NullUUID{UUID: f.LandingZoneID, Valid: f.LandingZoneID != uuid.Nil}})
	if err != nil {
		return nil, fmt.Errorf("list pools: %w", err)
	}
	out := make([]Pool, len(rows))
	for i, r := range rows {
		out[i] = poolOf(dbgen.IpamPool{ID: r.ID, TenantID: r.TenantID, EnvironmentID: r.EnvironmentID, LandingZoneID: r.LandingZoneID,
			Name: r.Name, Prefix: r.Prefix, Reserved: r.Reserved, CreatedAt: r.CreatedAt}, r.EnvironmentName, r.LandingZoneName)
		out[i].Used, out[i].Tenant = int(r.Allocations), r.TenantName
	}
	return out, nil
}
