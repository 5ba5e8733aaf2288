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

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/lifecycle"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/audit"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// Config is a resolver's configuration as one environment or landing zone sees it.
type Config struct {
	Type   string          `json:"type"`
	Config json.RawMessage `json:"config"`
	// Inherited: set on the environment's landing zone, not on the environment itself.
	Inherited bool      `json:"inherited"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Service manages resolver configurations on behalf of a principal.
type Service struct{ pool *pgxpool.Pool }

// NewService returns a Service.
func NewService(pool *pgxpool.Pool) *Service { return &Service{pool: pool} }

// environment returns the environment if the actor may see its resolvers.
func (s *Service) environment(ctx context.Context, actor access.Principal, id uuid.UUID) (dbgen.GetEnvironmentRow, error) {
	env, err := db.Queries(s.pool).GetEnvironment(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && !actor.Can(access.ResolverConfigRead, env.TenantID) {
		return env, problem.ErrNotFound
	}
	return env, err
}

// zone returns a landing zone; only provider admins see them.
func (s *Service) zone(ctx context.Context, actor access.Principal, id uuid.UUID) (dbgen.LandingZone, error) {
	z, err := db.Queries(s.pool).GetLandingZone(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && !actor.ProviderAdmin {
		return z, problem.ErrNotFound
	}
	return z, err
}

// Configs returns what resolves in an environment: its own configurations and those it
// inherits from its landing zone.
func (s *Service) Configs(ctx context.Context, actor access.Principal, environmentID uuid.UUID) ([]Config, error) {
	if _, err := s.environment(ctx, actor, environmentID); err != nil {
		return nil, err
	}
	rows, err := db.Queries(s.pool).EffectiveResolverConfigs(ctx, environmentID)
	if err != nil {
		return nil, fmt.Errorf("resolver configurations: %w", err)
	}
	return configsOf(rows), nil
}

// ZoneConfigs returns a landing zone's resolver configurations.
func (s *Service) ZoneConfigs(ctx context.Context, actor access.Principal, zoneID uuid.UUID) ([]Config, error) {
	if _, err := s.zone(ctx, actor, zoneID); err != nil {
		return nil, err
	}
	rows, err := db.Queries(s.pool).OwnResolverConfigs(ctx, dbgen.OwnResolverConfigsParams{LandingZoneID: nullUUID(zoneID)})
	if err != nil {
		return nil, fmt.Errorf("resolver configurations: %w", err)
	}
	return configsOf(rows), nil
}

func configsOf(rows []dbgen.ResolverConfiguration) []Config {
	out := make([]Config, len(rows))
	for i, r := range rows {
		out[i] = Config{Type: r.Type, Config: r.Config, Inherited: !r.EnvironmentID.Valid, UpdatedAt: r.UpdatedAt}
	}
	return out
}

// SetConfig checks and stores one resolver type's configuration for an environment, overriding
// its landing zone's. Provider admins configure resolvers.
func (s *Service) SetConfig(ctx context.Context, actor access.Principal, environmentID uuid.UUID, typ string, config json.RawMessage) (Config, error) {
	env, err := s.managed(ctx, actor, environmentID)
	if err != nil {
		return Config{}, err
	}
	scope := Scope{Environment: env.ID, Zone: env.LandingZoneID.UUID}
	return s.set(ctx, actor, scope, env.TenantID, typ, config, func(q *dbgen.Queries, by uuid.NullUUID) (dbgen.ResolverConfiguration, error) {
		return q.SetEnvironmentResolverConfig(ctx, dbgen.SetEnvironmentResolverConfigParams{EnvironmentID: nullUUID(env.ID), Type: typ,
			Config: config, UpdatedBy: by})
	})
}

// MaySetConfig answers nil when actor may configure the resolvers of an environment, and
// otherwise the error SetConfig would: the API asks it before it reads a configuration.
func (s *Service) MaySetConfig(ctx context.Context, actor access.Principal, environmentID uuid.UUID) error {
	_, err := s.managed(ctx, actor, environmentID)
	return err
}

// managed returns an environment whose resolvers actor may configure.
func (s *Service) managed(ctx context.Context, actor access.Principal, id uuid.UUID) (dbgen.GetEnvironmentRow, error) {
	env, err := s.environment(ctx, actor, id)
	if err == nil && !actor.Can(access.ResolverConfigManage, env.TenantID) {
		err = problem.ErrForbidden
	}
	return env, err
}

// SetZoneConfig checks and stores one resolver type's configuration for a landing zone, which
// its environments use unless they override it.
func (s *Service) SetZoneConfig(ctx context.Context, actor access.Principal, zoneID uuid.UUID, typ string, config json.RawMessage) (Config, error) {
	z, err := s.zone(ctx, actor, zoneID)
	if err != nil {
		return Config{}, err
	}
	if lifecycle.ZoneStatus(z.Status) == lifecycle.ZoneRetired {
		return Config{}, problem.Invalid("status", "retired", "landing zone %s is retired: its configuration no longer changes", z.Name)
	}
	return s.set(ctx, actor, Scope{Zone: z.ID}, uuid.Nil, typ, config, func(q *dbgen.Queries, by uuid.NullUUID) (dbgen.ResolverConfiguration, error) {
		if err := presetIn(ctx, q, z, typ); err != nil {
			return dbgen.ResolverConfiguration{}, err
		}
		return q.SetZoneResolverConfig(ctx, dbgen.SetZoneResolverConfigParams{LandingZoneID: nullUUID(z.ID), Type: typ,
			Config: config, UpdatedBy: by})
	})
}

func (s *Service) set(ctx context.Context, actor access.Principal, scope Scope, tenant uuid.UUID, typ string, config json.RawMessage,
	store func(*dbgen.Queries, uuid.NullUUID) (dbgen.ResolverConfiguration, error)) (Config, error) {
	r, ok := registry[typ]
	if !ok {
		return Config{}, problem.Invalid("type", "enum", "%q is not a resolver; there are %s", typ, strings.Join(Types(), ", "))
	}
	var row dbgen.ResolverConfiguration
	err := db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		v := &problem.ValidationError{}
		r.Check(ctx, q, scope, config, v)
		if err := v.Err(); err != nil {
			return err
		}
		var err error
		if row, err = store(q, nullUUID(actor.UserID)); err != nil {
			return err
		}
		var diff map[string]any
		_ = json.Unmarshal(config, &diff)
		target, id := "landing_zone", scope.Zone
		if scope.Environment != uuid.Nil {
			target, id = "environment", scope.Environment
		}
		return audit.Record(ctx, q, actor, audit.Event{Tenant: tenant, Action: "resolver.configure", TargetType: target,
			TargetID: id.String(), Diff: map[string]any{"type": typ, "config": diff}})
	})
	if err != nil {
		return Config{}, fmt.Errorf("configure %s: %w", typ, err)
	}
	return configsOf([]dbgen.ResolverConfiguration{row})[0], nil
}

// presetIn refuses to configure typ on a zone one of whose offered templates or system services
// sets an input typ would fill: every deploy of it would then be refused.
func presetIn(ctx context.Context, q *dbgen.Queries, z dbgen.LandingZone, typ string) error {
	members, err := q.ZoneTemplateComponents(ctx, z.ID)
	if err != nil {
		return err
	}
	v := &problem.ValidationError{}
	for _, m := range members {
		if m.Withdrawn {
			continue
		}
		bindings, err := ParseBindings(m.ResolverBindings)
		if err != nil {
			continue // the component's own page says what is wrong with it
		}
		params := map[string]any{}
		_ = json.Unmarshal(m.Parameters, &params)
		for _, b := range Preset(Active(bindings, map[string]bool{typ: true}), params) {
			if m.System {
				v.Add("config", "preset", "system service %s (%s) sets %s, which the %s resolver would fill: remove the service and add it again without %s first",
					m.Name, m.ComponentName, b.Input, Label(typ), b.Input)
			} else {
				v.Add("config", "preset", "template %s sets %s of %s (%s), which the %s resolver would fill: withdraw the template and add it again without %s first",
					m.TemplateName, b.Input, m.Name, m.ComponentName, Label(typ), b.Input)
			}
		}
	}
	return v.Err()
}

// ClearConfig removes an environment's own configuration of one type, so its landing zone's
// applies again (or none, outside a zone).
func (s *Service) ClearConfig(ctx context.Context, actor access.Principal, environmentID uuid.UUID, typ string) error {
	env, err := s.environment(ctx, actor, environmentID)
	if err != nil {
		return err
	}
	if !actor.Can(access.ResolverConfigManage, env.TenantID) {
		return problem.ErrForbidden
	}
	return db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		n, err := q.DeleteEnvironmentResolverConfig(ctx, dbgen.DeleteEnvironmentResolverConfigParams{EnvironmentID: nullUUID(env.ID), Type: typ})
		if err != nil || n == 0 {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{Tenant: env.TenantID, Action: "resolver.clear", TargetType: "environment",
			TargetID: env.ID.String(), Diff: map[string]any{"type": typ}})
	})
}

// NextName previews the name a naming pattern would give next in an environment.
func (s *Service) NextName(ctx context.Context, actor access.Principal, environmentID uuid.UUID, pattern string) (string, error) {
	env, err := s.environment(ctx, actor, environmentID)
	if err != nil {
		return "", err
	}
	d := Deployment{Tenant: env.TenantName, Environment: env.Name, EnvID: env.ID, Component: "component", SemanticType: "virtualmachine", Name: "deployment"}
	return PreviewName(ctx, db.Queries(s.pool), env.ID, pattern, d)
}

// NextZoneName previews the name a landing zone's naming pattern would give next, for an
// environment named "env" of a tenant named "tenant".
func (s *Service) NextZoneName(ctx context.Context, actor access.Principal, zoneID uuid.UUID, pattern string) (string, error) {
	z, err := s.zone(ctx, actor, zoneID)
	if err != nil {
		return "", err
	}
	d := Deployment{Tenant: "tenant", Environment: "env", Component: "component", SemanticType: "virtualmachine", Name: "deployment"}
	return PreviewName(ctx, db.Queries(s.pool), z.ID, pattern, d)
}

func nullUUID(id uuid.UUID) uuid.NullUUID { return uuid.NullUUID{UUID: id, Valid: id != uuid.Nil} }
