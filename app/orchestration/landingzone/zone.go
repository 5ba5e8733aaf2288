// Package landingzone manages landing zones, where tenants deploy: the resolver configuration
// their environments share, the system services deployed once for the zone, and the templates
// environments are opened from.
//
// A zone's system services are the mandatory components of its system template, deployed into
// its system environment (of the system tenant) when the zone is published: the environment's
// own lifecycle provisions it, as it does a tenant's environment opened from a template.
package landingzone

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"nimbus/app/domain/cluster"
	"nimbus/app/domain/component"
	"nimbus/app/domain/proxmox"
	"nimbus/app/domain/resolver"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/lifecycle"
	"nimbus/app/kernel/problem"
	"nimbus/app/orchestration/environment"
	"nimbus/app/platform/audit"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// Zone is a landing zone as the API and pages show it.
type Zone struct {
	ID          uuid.UUID            `json:"id"`
	Name        string               `json:"name"`
	Description string               `json:"description"`
	Provider    string               `json:"provider"`
	Status      lifecycle.ZoneStatus `json:"status"`
	// The system environment holds the system services; its status says how their
	// deployment (or removal) goes.
	SystemEnvironmentID uuid.UUID                   `json:"system_environment_id"`
	SystemStatus        lifecycle.EnvironmentStatus `json:"system_status"`
	SystemReason        string                      `json:"system_reason,omitempty"`
	SystemServices      []Member                    `json:"system_services"`
	Templates           []Template                  `json:"templates"`
	Resolvers           []string                    `json:"resolvers"` // the resolver types it configures
	Environments        []ZoneEnv                   `json:"environments"`
	CreatedAt           time.Time                   `json:"created_at"`
	PublishedAt         *time.Time                  `json:"published_at"`
	RetiredAt           *time.Time                  `json:"retired_at"`
	EnvironmentCount    int                         `json:"environment_count"`
	// Lifetimes of the environments opened in it.
	Lifetimes
}

// ZoneEnv is a tenant environment opened in a zone.
type ZoneEnv struct {
	ID       uuid.UUID `json:"id"`
	TenantID uuid.UUID `json:"tenant_id"`
	Tenant   string    `json:"tenant"`
	Name     string    `json:"name"`
	Status   string    `json:"status"`
}

// NewZone is a landing zone to create.
type NewZone struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Provider    string `json:"provider"`
}

// Service manages landing zones and their templates; their system environments go through
// the environments' lifecycle.
type Service struct {
	pool      *pgxpool.Pool
	lifecycle *environment.Lifecycle
	plugins   Plugins
}

// Plugins says which resource providers the engine has.
type Plugins interface {
	HasProvider(plugin string) bool
}

// NewService returns a Service; lifecycle provisions and decommissions its system
// environments, and plugins says whether a Kubernetes zone's provider is built yet.
func NewService(pool *pgxpool.Pool, lifecycle *environment.Lifecycle, plugins Plugins) *Service {
	return &Service{pool: pool, lifecycle: lifecycle, plugins: plugins}
}

// zoneName is also the name of the zone's system environment.
var zoneName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,39}$`)

// Create adds a draft landing zone with its system environment and system template.
func (s *Service) Create(ctx context.Context, actor access.Principal, in NewZone) (Zone, error) {
	if !actor.Can(access.LandingZoneManage, uuid.Nil) {
		return Zone{}, problem.ErrForbidden
	}
	v := &problem.ValidationError{}
	in.Name, in.Provider = strings.TrimSpace(in.Name), strings.TrimSpace(in.Provider)
	if !zoneName.MatchString(in.Name) {
		v.Add("name", "pattern", "must be 1–40 lower-case letters, digits and -, starting with a letter, such as simcloud-eu")
	}
	if len(in.Description) > 2000 {
		v.Add("description", "max_length", "must be at most 2000 characters")
	}
	q := db.Queries(s.pool)
	providers, err := q.ListProviders(ctx)
	if err != nil {
		return Zone{}, err
	}
	var names []string
	for _, p := range providers {
		names = append(names, p.Name)
	}
	if !slices.Contains(names, in.Provider) {
		v.Add("provider", "enum", "must be one of %s", strings.Join(names, ", "))
	}
	if err := v.Err(); err != nil {
		return Zone{}, err
	}
	var id uuid.UUID
	err = db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		z, err := create(ctx, q, dbgen.CreateLandingZoneParams{Name: in.Name, Description: in.Description, Provider: in.Provider,
			CreatedBy: nullID(actor.UserID)})
		if db.IsUniqueViolation(err) {
			return problem.Invalid("name", "unique", "a landing zone named %q exists already", in.Name)
		}
		if err != nil {
			return err
		}
		id = z.ID
		tpl, err := q.CreateTemplate(ctx, dbgen.CreateTemplateParams{LandingZoneID: z.ID, Name: "system services", System: true,
			Description: "Deployed once for the landing zone when it is published", CreatedBy: nullID(actor.UserID)})
		if err != nil {
			return err
		}
		system, err := q.SystemTenant(ctx)
		if err != nil {
			return fmt.Errorf("the system tenant: %w", err)
		}
		env, err := environment.Plan(ctx, q, environment.Planned{Tenant: system, LandingZone: z.ID, Template: tpl.ID, By: actor.UserID, Name: in.Name})
		if err != nil {
			return err
		}
		if err := q.SetSystemEnvironment(ctx, dbgen.SetSystemEnvironmentParams{ID: z.ID, SystemEnvironmentID: nullID(env)}); err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{Action: "landing_zone.create", TargetType: "landing_zone", TargetID: z.ID.String(),
			Diff: map[string]any{"name": in.Name, "provider": in.Provider}})
	})
	if err != nil {
		return Zone{}, fmt.Errorf("create landing zone: %w", err)
	}
	return s.Get(ctx, actor, id)
}

func nullID(id uuid.UUID) uuid.NullUUID { return uuid.NullUUID{UUID: id, Valid: id != uuid.Nil} }

// List returns every landing zone; provider admins see them.
func (s *Service) List(ctx context.Context, actor access.Principal) ([]Zone, error) {
	if !actor.ProviderAdmin {
		return nil, problem.ErrForbidden
	}
	rows, err := db.Queries(s.pool).ListLandingZones(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("list landing zones: %w", err)
	}
	out := make([]Zone, len(rows))
	for i, r := range rows {
		out[i] = zoneOf(dbgen.LandingZone{ID: r.ID, Name: r.Name, Description: r.Description, Provider: r.Provider, Status: r.Status,
			SystemEnvironmentID: r.SystemEnvironmentID, CreatedAt: r.CreatedAt, PublishedAt: r.PublishedAt, RetiredAt: r.RetiredAt})
		out[i].EnvironmentCount = int(r.Environments)
	}
	return out, nil
}

func zoneOf(z dbgen.LandingZone) Zone {
	return Zone{ID: z.ID, Name: z.Name, Description: z.Description, Provider: z.Provider, Status: lifecycle.ZoneStatus(z.Status),
		SystemEnvironmentID: z.SystemEnvironmentID.UUID, CreatedAt: z.CreatedAt, PublishedAt: z.PublishedAt, RetiredAt: z.RetiredAt,
		SystemServices: []Member{}, Templates: []Template{}, Resolvers: []string{}, Environments: []ZoneEnv{}, Lifetimes: lifetimesOf(z)}
}

// Get returns a landing zone with its system services and their status, its templates, the
// resolver types it configures and its environments. Provider admins see zones.
func (s *Service) Get(ctx context.Context, actor access.Principal, id uuid.UUID) (Zone, error) {
	q := db.Queries(s.pool)
	row, err := q.GetLandingZone(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && !actor.ProviderAdmin {
		return Zone{}, problem.ErrNotFound
	}
	if err != nil {
		return Zone{}, fmt.Errorf("get landing zone: %w", err)
	}
	z := zoneOf(row)
	env, err := q.GetEnvironment(ctx, row.SystemEnvironmentID.UUID)
	if err != nil {
		return Zone{}, fmt.Errorf("system environment: %w", err)
	}
	z.SystemStatus, z.SystemReason = lifecycle.EnvironmentStatus(env.Status), env.StatusReason
	deployments, err := q.EnvironmentDeployments(ctx, env.ID)
	if err != nil {
		return Zone{}, err
	}
	templates, err := q.ZoneTemplates(ctx, id)
	if err != nil {
		return Zone{}, err
	}
	for _, t := range templates {
		members, err := members(ctx, q, t.ID, deployments)
		if err != nil {
			return Zone{}, err
		}
		if t.System {
			z.SystemServices = members
			continue
		}
		z.Templates = append(z.Templates, Template{ID: t.ID, Name: t.Name, Description: t.Description, Withdrawn: t.WithdrawnAt != nil,
			Components: members})
	}
	configs, err := q.OwnResolverConfigs(ctx, dbgen.OwnResolverConfigsParams{LandingZoneID: nullID(id)})
	if err != nil {
		return Zone{}, err
	}
	for _, c := range configs {
		z.Resolvers = append(z.Resolvers, c.Type)
	}
	envs, err := q.ZoneLiveEnvironments(ctx, nullID(id))
	if err != nil {
		return Zone{}, err
	}
	for _, e := range envs {
		z.Environments = append(z.Environments, ZoneEnv{ID: e.ID, TenantID: e.TenantID, Tenant: e.TenantName, Name: e.Name, Status: e.Status})
	}
	z.EnvironmentCount = len(envs)
	return z, nil
}

// Publish opens a draft zone to tenants and deploys its system services. Every resolver that a
// component of its templates binds must be configured on the zone: an environment opened here
// would otherwise be asked for, or fail on, what the zone should hand out.
func (s *Service) Publish(ctx context.Context, actor access.Principal, id uuid.UUID) (Zone, error) {
	if !actor.Can(access.LandingZoneManage, uuid.Nil) {
		return Zone{}, problem.ErrForbidden
	}
	err := db.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := db.Queries(tx)
		z, err := zoneFor(ctx, q, id)
		if err != nil {
			return err
		}
		if err := lifecycle.Zones.Check("landing zone "+z.Name, lifecycle.ZoneStatus(z.Status), lifecycle.ZonePublished); err != nil {
			return err
		}
		// The Kubernetes provider may still be building in the background on a new
		// installation; the zone's system services would fail for want of it.
		if z.Provider == cluster.Provider && !s.plugins.HasProvider(cluster.Provider) {
			return problem.Invalid("provider", "toolchain", "the Kubernetes provider is not built yet (the system page shows how its build goes): publish the zone once it is")
		}
		if err := complete(ctx, q, z); err != nil {
			return err
		}
		if err := move(ctx, q, z, lifecycle.ZonePublished); err != nil {
			return err
		}
		if err := s.lifecycle.Provision(ctx, tx, actor, z.SystemEnvironmentID.UUID, "system service "); err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{Action: "landing_zone.publish", TargetType: "landing_zone", TargetID: z.ID.String(),
			Diff: map[string]any{"name": z.Name}})
	})
	if err != nil {
		return Zone{}, fmt.Errorf("publish landing zone: %w", err)
	}
	return s.Get(ctx, actor, id)
}

// complete refuses a zone whose templates leave a required input to a resolver the zone does
// not configure, naming each: an environment opened there could not deploy them. An input the
// template gives a value, or that has a default, needs no resolver. A Kubernetes zone needs its
// cluster, a Proxmox zone its API access.
func complete(ctx context.Context, q *dbgen.Queries, z dbgen.LandingZone) error {
	configs, err := q.OwnResolverConfigs(ctx, dbgen.OwnResolverConfigsParams{LandingZoneID: nullID(z.ID)})
	if err != nil {
		return err
	}
	configured := map[string]json.RawMessage{}
	for _, c := range configs {
		configured[c.Type] = c.Config
	}
	members, err := q.ZoneTemplateComponents(ctx, z.ID)
	if err != nil {
		return err
	}
	v := &problem.ValidationError{}
	if z.Provider == cluster.Provider {
		has, err := q.ZoneHasCluster(ctx, z.ID)
		if err != nil {
			return err
		}
		if !has {
			v.Add("cluster", "required", "landing zone %s has no Kubernetes cluster: set one on its cluster page, where its system services and environments deploy", z.Name)
		}
	}
	if z.Provider == proxmox.Provider {
		has, err := proxmox.Has(ctx, q, z.ID)
		if err != nil {
			return err
		}
		if !has {
			v.Add("proxmox_access", "required", "landing zone %s has no Proxmox API access: set its endpoint and API token on its Proxmox API access page, with which its system services and environments deploy", z.Name)
		}
	}
	for _, m := range members {
		bindings, err := resolver.ParseBindings(m.ResolverBindings)
		if err != nil {
			return err
		}
		schema := component.ParseSchema("input_schema", m.InputSchema, &problem.ValidationError{})
		given := map[string]any{}
		_ = json.Unmarshal(m.Parameters, &given)
		for _, b := range bindings {
			config, ok := configured[b.Type]
			switch {
			case given[b.Input] != nil:
			case ok:
				if field, what := resolver.Lacks(b, config); what != "" {
					v.Add("resolvers."+b.Type+"."+field, "required", "%s %s (%s) needs %s for %s from %s: set it on the zone's resolvers",
						templateLabel(m.TemplateName, m.System), m.Name, m.ComponentName, what, b.Input, resolver.Label(b.Type))
				}
			case needed(schema, b.Input):
				v.Add("resolvers."+b.Type, "configured", "%s %s (%s) needs %s from %s, which landing zone %s does not configure",
					templateLabel(m.TemplateName, m.System), m.Name, m.ComponentName, b.Input, resolver.Label(b.Type), z.Name)
			}
		}
	}
	return v.Err()
}

// needed reports whether an input must have a value: it is required and has no default.
func needed(s *component.Schema, input string) bool {
	if s == nil || !slices.Contains(s.Required, input) {
		return false
	}
	p, ok := s.Properties[input]
	return ok && p.Default == nil
}

func templateLabel(name string, system bool) string {
	if system {
		return "system service"
	}
	return "template " + name + ":"
}

// Retire closes a published zone: no environment may be opened in it any more, and its system
// services are destroyed. Its tenants' environments must be decommissioned first.
func (s *Service) Retire(ctx context.Context, actor access.Principal, id uuid.UUID) (Zone, error) {
	if !actor.Can(access.LandingZoneManage, uuid.Nil) {
		return Zone{}, problem.ErrForbidden
	}
	err := db.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := db.Queries(tx)
		z, err := zoneFor(ctx, q, id)
		if err != nil {
			return err
		}
		if err := lifecycle.Zones.Check("landing zone "+z.Name, lifecycle.ZoneStatus(z.Status), lifecycle.ZoneRetired); err != nil {
			return err
		}
		envs, err := q.ZoneLiveEnvironments(ctx, nullID(z.ID))
		if err != nil {
			return err
		}
		if len(envs) > 0 {
			var names []string
			for _, e := range envs {
				names = append(names, e.TenantName+"/"+e.Name+" ("+e.Status+")")
			}
			return problem.Invalid("environments", "decommissioned", "decommission the environments of %s first: %s", z.Name, strings.Join(names, ", "))
		}
		if err := move(ctx, q, z, lifecycle.ZoneRetired); err != nil {
			return err
		}
		if err := s.lifecycle.StartDecommission(ctx, tx, actor, z.SystemEnvironmentID.UUID); err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{Action: "landing_zone.retire", TargetType: "landing_zone", TargetID: z.ID.String(),
			Diff: map[string]any{"name": z.Name}})
	})
	if err != nil {
		return Zone{}, fmt.Errorf("retire landing zone: %w", err)
	}
	return s.Get(ctx, actor, id)
}
