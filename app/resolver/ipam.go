package resolver

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/ipam"
	"nimbus/app/problem"
	"nimbus/db/dbgen"
)

// ipamResolver hands out an address (or a subnet) from the environment's pool.
type ipamResolver struct{}

// ipamConfig is an environment's IPAM configuration.
type ipamConfig struct {
	PoolID uuid.UUID `json:"pool_id"`
	// Bits asks for a subnet of that prefix length instead of an address.
	Bits int `json:"bits,omitempty"`
}

func (ipamResolver) Type() string { return "ipam" }

func (ipamResolver) Outputs() []string {
	return []string{"address", "prefix_length", "gateway", "cidr"}
}

func (ipamResolver) Check(ctx context.Context, q *dbgen.Queries, environmentID uuid.UUID, raw json.RawMessage, v *problem.ValidationError) {
	var c ipamConfig
	if err := strictJSON(raw, &c); err != nil {
		v.Add("config", "json", "must be {\"pool_id\": …, \"bits\": optional prefix length}: %v", err)
		return
	}
	pool, err := q.GetPool(ctx, c.PoolID)
	switch {
	case errors.Is(err, pgx.ErrNoRows) || err == nil && pool.EnvironmentID != environmentID:
		v.Add("config.pool_id", "exists", "no pool with this ID in this environment")
	case err != nil:
		v.Add("config.pool_id", "exists", "the pool could not be read: %v", err)
	case c.Bits != 0 && (c.Bits < pool.Prefix.Bits() || c.Bits > pool.Prefix.Addr().BitLen()):
		v.Add("config.bits", "range", "must be between %d and %d for pool %s", pool.Prefix.Bits(), pool.Prefix.Addr().BitLen(), pool.Prefix)
	}
}

func (ipamResolver) Resolve(ctx context.Context, q *dbgen.Queries, c Call) (map[string]any, error) {
	var cfg ipamConfig
	if err := json.Unmarshal(c.Config, &cfg); err != nil {
		return nil, err
	}
	lease, err := ipam.Allocate(ctx, q, ipam.Request{PoolID: cfg.PoolID, Bits: cfg.Bits, DeploymentID: c.Deployment.ID,
		OperationID: c.Operation, Input: c.Input})
	if err != nil {
		return nil, err
	}
	return map[string]any{"address": lease.Address.String(), "prefix_length": float64(lease.Prefix.Bits()),
		"gateway": lease.Gateway.String(), "cidr": lease.Prefix.String()}, nil
}
