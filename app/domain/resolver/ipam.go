package resolver

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/domain/ipam"
	"nimbus/app/kernel/problem"
	"nimbus/db/dbgen"
)

// ipamResolver hands out addresses and subnets from the environment's pool. What the
// component binds decides which: "ipam" (an address, with the pool's gateway, prefix length and
// CIDR beside it) or "ipam.subnet" (a subnet of the configured size). A deployment whose input
// names a network holding a subnet gets its address from that subnet, with the subnet's gateway.
type ipamResolver struct{}

// ipamConfig is an environment's IPAM configuration.
type ipamConfig struct {
	PoolID uuid.UUID `json:"pool_id"`
	// SubnetBits is the prefix length of the subnets handed to inputs bound to ipam.subnet.
	SubnetBits int `json:"subnet_bits,omitempty"`
}

func (ipamResolver) Type() string { return "ipam" }

func (ipamResolver) Outputs() []string {
	return []string{"address", "prefix_length", "gateway", "cidr", "subnet"}
}

// subnetKey is the key under which a deployment holds its subnet, beside its address.
const subnetKey = "ipam.subnet"

func (ipamResolver) Check(ctx context.Context, q *dbgen.Queries, scope Scope, raw json.RawMessage, v *problem.ValidationError) {
	var c ipamConfig
	if err := strictJSON(raw, &c); err != nil {
		v.Add("config", "json", "must be {\"pool_id\": …, \"subnet_bits\": optional prefix length of subnets}: %v", err)
		return
	}
	pool, err := q.GetPool(ctx, c.PoolID)
	switch {
	case errors.Is(err, pgx.ErrNoRows) || err == nil && !inScope(pool, scope):
		v.Add("config.pool_id", "exists", "no pool with this ID in this %s", scope.noun())
	case err != nil:
		v.Add("config.pool_id", "exists", "the pool could not be read: %v", err)
	case c.SubnetBits != 0 && (c.SubnetBits < pool.Prefix.Bits() || c.SubnetBits > pool.Prefix.Addr().BitLen()):
		v.Add("config.subnet_bits", "range", "must be between %d and %d for pool %s", pool.Prefix.Bits(), pool.Prefix.Addr().BitLen(), pool.Prefix)
	}
}

func (ipamResolver) Resolve(ctx context.Context, q *dbgen.Queries, c Call) (map[string]any, error) {
	var cfg ipamConfig
	if err := json.Unmarshal(c.Config, &cfg); err != nil {
		return nil, err
	}
	bits := 0
	if c.Input == subnetKey {
		if cfg.SubnetBits == 0 {
			return nil, errors.New("an input asks for a subnet, and the environment's IPAM configuration sets no Subnet prefix length (subnet_bits)")
		}
		bits = cfg.SubnetBits
	}
	r := ipam.Request{PoolID: cfg.PoolID, Bits: bits, DeploymentID: c.Deployment.ID, OperationID: c.Operation, Input: c.Input}
	if bits == 0 {
		pool, subnet, err := joined(ctx, q, c.Deployment.Refers)
		if err != nil {
			return nil, err
		}
		if subnet != uuid.Nil {
			r.PoolID, r.Within = pool, subnet
		}
	}
	lease, err := ipam.Allocate(ctx, q, r)
	if err != nil {
		return nil, err
	}
	return map[string]any{"address": lease.Address.String(), "prefix_length": float64(lease.Prefix.Bits()),
		"gateway": lease.Gateway.String(), "cidr": lease.Prefix.String(), "subnet": lease.Prefix.String()}, nil
}

// Lacks says that a configuration without a subnet size cannot hand out a subnet.
func (ipamResolver) Lacks(b Binding, raw json.RawMessage) (field, what string) {
	var c ipamConfig
	if b.key() == subnetKey && json.Unmarshal(raw, &c) == nil && c.SubnetBits == 0 {
		return "subnet_bits", "a subnet, and its IPAM configuration sets no Subnet prefix length"
	}
	return "", ""
}

// joined finds the subnet an address is drawn from: that of the first deployment the
// deployment's inputs name that holds one (the network a machine joins), with its pool.
func joined(ctx context.Context, q *dbgen.Queries, refers []uuid.UUID) (pool, subnet uuid.UUID, err error) {
	for _, id := range refers {
		a, err := q.DeploymentAllocation(ctx, dbgen.DeploymentAllocationParams{DeploymentID: uuid.NullUUID{UUID: id, Valid: true}, Input: subnetKey})
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		if err != nil {
			return uuid.Nil, uuid.Nil, err
		}
		return a.PoolID, a.ID, nil
	}
	return uuid.Nil, uuid.Nil, nil
}

// inScope reports whether a configuration of scope may hand out from pool: an environment
// uses its own pools and its landing zone's, a landing zone its own.
func inScope(pool dbgen.GetPoolRow, scope Scope) bool {
	if scope.Environment != uuid.Nil && pool.EnvironmentID.Valid {
		return pool.EnvironmentID.UUID == scope.Environment
	}
	return pool.LandingZoneID.Valid && pool.LandingZoneID.UUID == scope.Zone
}
