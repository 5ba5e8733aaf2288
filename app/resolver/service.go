package resolver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// Config is a resolver's configuration for one environment.
type Config struct {
	Type      string          `json:"type"`
	Config    json.RawMessage `json:"config"`
	UpdatedAt time.Time       `json:"updated_at"`
}

// Service manages resolver configurations on behalf of a principal.
type Service struct{ pool *pgxpool.Pool }

// NewService returns a Service.
func NewService(pool *pgxpool.Pool) *Service { return &Service{pool: pool} }

// environment returns the environment if the actor may see its resolvers.
func (s *Service) environment(ctx context.Context, actor access.Principal, id uuid.UUID) (dbgen.GetEnvironmentRow, error) {
	env, err := dbgen.New(s.pool).GetEnvironment(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && !actor.Can("resolver:config:read", env.TenantID) {
		return env, problem.ErrNotFound
	}
	return env, err
}

// Configs returns an environment's resolver configurations.
func (s *Service) Configs(ctx context.Context, actor access.Principal, environmentID uuid.UUID) ([]Config, error) {
	if _, err := s.environment(ctx, actor, environmentID); err != nil {
		return nil, err
	}
	rows, err := dbgen.New(s.pool).ResolverConfigs(ctx, environmentID)
	if err != nil {
		return nil, fmt.Errorf("resolver configurations: %w", err)
	}
	out := make([]Config, len(rows))
	for i, r := range rows {
		out[i] = Config{Type: r.Type, Config: r.Config, UpdatedAt: r.UpdatedAt}
	}
	return out, nil
}

// SetConfig checks and stores the configuration of one resolver type for an environment.
// Provider admins configure resolvers.
func (s *Service) SetConfig(ctx context.Context, actor access.Principal, environmentID uuid.UUID, typ string, config json.RawMessage) (Config, error) {
	env, err := s.environment(ctx, actor, environmentID)
	if err != nil {
		return Config{}, err
	}
	if !actor.Can("resolver:config:manage", env.TenantID) {
		return Config{}, problem.ErrForbidden
	}
	r, ok := registry[typ]
	if !ok {
		return Config{}, problem.Invalid("type", "enum", "%q is not a resolver; there are %s", typ, strings.Join(Types(), ", "))
	}
	var row dbgen.ResolverConfiguration
	err = db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		v := &problem.ValidationError{}
		r.Check(ctx, q, env.ID, config, v)
		if err := v.Err(); err != nil {
			return err
		}
		if row, err = q.SetResolverConfig(ctx, dbgen.SetResolverConfigParams{EnvironmentID: env.ID, Type: typ, Config: config,
			UpdatedBy: uuid.NullUUID{UUID: actor.UserID, Valid: actor.UserID != uuid.Nil}}); err != nil {
			return err
		}
		var diff map[string]any
		_ = json.Unmarshal(config, &diff)
		return audit.Record(ctx, q, actor, audit.Event{Tenant: env.TenantID, Action: "resolver.configure", TargetType: "environment",
			TargetID: env.ID.String(), Diff: map[string]any{"type": typ, "config": diff}})
	})
	if err != nil {
		return Config{}, fmt.Errorf("configure %s: %w", typ, err)
	}
	return Config{Type: row.Type, Config: row.Config, UpdatedAt: row.UpdatedAt}, nil
}

// NextName previews the name a naming pattern would give next in an environment.
func (s *Service) NextName(ctx context.Context, actor access.Principal, environmentID uuid.UUID, pattern string) (string, error) {
	env, err := s.environment(ctx, actor, environmentID)
	if err != nil {
		return "", err
	}
	d := Deployment{Tenant: env.TenantName, Environment: env.Name, EnvID: env.ID, Component: "component", SemanticType: "virtualmachine", Name: "deployment"}
	return PreviewName(ctx, dbgen.New(s.pool), pattern, d)
}

func nullUUID(id uuid.UUID) uuid.NullUUID { return uuid.NullUUID{UUID: id, Valid: id != uuid.Nil} }
