package ipam

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/db/dbgen"
)

// Request asks a pool for an address (Bits 0) or a subnet of Bits, on behalf of a deployment's
// input, by an operation that gives it back if it is undone. An address may be asked for
// Within a subnet handed out before (its allocation): the subnet of the network a machine joins.
type Request struct {
	PoolID       uuid.UUID
	Bits         int
	Within       uuid.UUID
	DeploymentID uuid.UUID
	OperationID  uuid.UUID
	Input        string
}

// Lease is what a pool handed out.
type Lease struct {
	Address netip.Addr   // the address, or a subnet's first address
	Prefix  netip.Prefix // the subnet, or for an address the subnet or pool it is part of
	Gateway netip.Addr
}

// leaseOf is the lease of an allocation: an address with the prefix it is part of and that
// prefix's gateway, or a subnet with its own.
func leaseOf(allocated, within netip.Prefix, address bool) Lease {
	if address {
		return Lease{Address: allocated.Addr(), Prefix: within, Gateway: gateway(within)}
	}
	return Lease{Address: allocated.Addr(), Prefix: allocated, Gateway: gateway(allocated)}
}

// Allocate hands out the next free address or subnet, in the caller's transaction, or returns
// what the deployment already holds for the input where the request draws from: asking twice
// is asking once. A deployment that now draws from elsewhere (a machine joining another
// network, or leaving its network for the pool) is handed a new allocation there beside the
// one it uses: the operation's success gives the old one back (resolver.SettleOperation), its
// undo the new one.
func Allocate(ctx context.Context, q *dbgen.Queries, r Request) (Lease, error) {
	pool, err := q.LockPool(ctx, r.PoolID)
	if errors.Is(err, pgx.ErrNoRows) {
		return Lease{}, fmt.Errorf("ipam: no pool %s", r.PoolID)
	}
	if err != nil {
		return Lease{}, err
	}
	rows, err := q.DeploymentHoldings(ctx, dbgen.DeploymentHoldingsParams{DeploymentID: uuid.NullUUID{UUID: r.DeploymentID, Valid: true}, Input: r.Input})
	if err != nil {
		return Lease{}, err
	}
	want := place{pool: r.PoolID}
	if r.Bits == 0 {
		want.subnet = r.Within
	}
	held := make([]holding, len(rows))
	for i, a := range rows {
		held[i] = holding{id: a.ID, at: place{pool: a.PoolID, subnet: a.ParentID.UUID}, moving: a.Replaces.Valid}
	}
	c := choose(held, want)
	for _, id := range c.drop {
		if err := q.DropAllocation(ctx, id); err != nil {
			return Lease{}, err
		}
	}
	for _, a := range rows {
		if a.ID != c.keep {
			continue
		}
		// A move's allocation is the operation's that goes on with the move, to give back if it
		// is undone.
		if a.Replaces.Valid && r.OperationID != uuid.Nil && a.OperationID.UUID != r.OperationID {
			if err := q.AdoptAllocation(ctx, dbgen.AdoptAllocationParams{ID: a.ID, OperationID: uuid.NullUUID{UUID: r.OperationID, Valid: true}}); err != nil {
				return Lease{}, err
			}
		}
		return leaseOf(a.Prefix, a.Within, r.Bits == 0), nil
	}
	if want.subnet != uuid.Nil {
		return allocateWithin(ctx, q, pool, r, c.replace)
	}
	taken, err := q.AllocatedPrefixes(ctx, pool.ID)
	if err != nil {
		return Lease{}, err
	}
	taken = append(taken, pool.Reserved...)
	kind, next := "address", netip.Prefix{}
	if r.Bits == 0 {
		var a netip.Addr
		if a, err = nextAddress(pool.Prefix, taken); err == nil {
			next = netip.PrefixFrom(a, a.BitLen())
		}
	} else {
		kind = "subnet"
		next, err = nextSubnet(pool.Prefix, r.Bits, taken)
	}
	if errors.Is(err, ErrFull) {
		what := "address"
		if r.Bits != 0 {
			what = fmt.Sprintf("/%d subnet", r.Bits)
		}
		return Lease{}, fmt.Errorf("%w: pool %s (%s) has no free %s left", ErrFull, pool.Name, pool.Prefix, what)
	}
	if err != nil {
		return Lease{}, err
	}
	if err := record(ctx, q, pool, next, kind, uuid.Nil, c.replace, r); err != nil {
		return Lease{}, err
	}
	return leaseOf(next, pool.Prefix, r.Bits == 0), nil
}

// place is where an allocation lies: its pool, and the subnet it was handed out in (none for
// the pool's own addresses and subnets).
type place struct{ pool, subnet uuid.UUID }

// holding is an allocation a deployment holds for an input: the one it uses, or one an
// operation is moving it to.
type holding struct {
	id     uuid.UUID
	at     place
	moving bool
}

// choice is what a request gets from what the deployment holds: the allocation to keep, or none
// (a new one, in place of replace when it uses one elsewhere); drop are moves' allocations
// the request no longer wants.
type choice struct {
	keep, replace uuid.UUID
	drop          []uuid.UUID
}

// choose decides what a request drawing from want gets, given what the deployment holds for
// the input. What lies where it draws from is kept, whether in use or handed out for a move
// (by a preview of this move, or by this operation before a crash); the allocation in use
// elsewhere is replaced, never given back here, as the machine still has it until the
// operation succeeds.
func choose(held []holding, want place) choice {
	var c choice
	for _, h := range held {
		switch {
		case h.at == want && c.keep == uuid.Nil:
			c.keep = h.id
		case h.moving:
			c.drop = append(c.drop, h.id)
		default:
			c.replace = h.id
		}
	}
	if c.keep != uuid.Nil {
		c.replace = uuid.Nil
	}
	return c
}

// allocateWithin hands out the next free address of a subnet: not its network address, its
// gateway or its broadcast address, nor one of its addresses already out. The pool's row lock,
// taken by the caller, keeps allocations inside its subnets taking turns too.
func allocateWithin(ctx context.Context, q *dbgen.Queries, pool dbgen.IpamPool, r Request, replace uuid.UUID) (Lease, error) {
	subnet, err := q.GetAllocation(ctx, r.Within)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && (subnet.PoolID != pool.ID || subnet.Kind != "subnet") {
		return Lease{}, fmt.Errorf("ipam: no subnet %s in pool %s", r.Within, pool.Name)
	}
	if err != nil {
		return Lease{}, err
	}
	taken, err := q.ChildPrefixes(ctx, uuid.NullUUID{UUID: subnet.ID, Valid: true})
	if err != nil {
		return Lease{}, err
	}
	a, err := nextAddress(subnet.Prefix, taken)
	if errors.Is(err, ErrFull) {
		return Lease{}, fmt.Errorf("%w: subnet %s of pool %s has no free address left", ErrFull, subnet.Prefix, pool.Name)
	}
	if err != nil {
		return Lease{}, err
	}
	next := netip.PrefixFrom(a, a.BitLen())
	if err := record(ctx, q, pool, next, "address", subnet.ID, replace, r); err != nil {
		return Lease{}, err
	}
	return leaseOf(next, subnet.Prefix, true), nil
}

// record writes an allocation down against the deployment, the operation, its parent and the
// allocation it replaces once the operation succeeds.
func record(ctx context.Context, q *dbgen.Queries, pool dbgen.IpamPool, p netip.Prefix, kind string, parent, replaces uuid.UUID, r Request) error {
	_, err := q.CreateAllocation(ctx, dbgen.CreateAllocationParams{PoolID: pool.ID, Prefix: p, Kind: kind,
		DeploymentID: uuid.NullUUID{UUID: r.DeploymentID, Valid: true}, OperationID: uuid.NullUUID{UUID: r.OperationID, Valid: r.OperationID != uuid.Nil},
		Input: r.Input, ParentID: uuid.NullUUID{UUID: parent, Valid: parent != uuid.Nil},
		Replaces: uuid.NullUUID{UUID: replaces, Valid: replaces != uuid.Nil}})
	if err != nil {
		return fmt.Errorf("ipam: allocate %s from %s: %w", p, pool.Name, err)
	}
	return nil
}
