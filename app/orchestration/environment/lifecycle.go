package environment

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
	"nimbus/app/kernel/graph"
	"nimbus/app/kernel/lifecycle"
	"nimbus/app/kernel/problem"
	"nimbus/app/orchestration/deploy"
	"nimbus/app/platform/audit"
	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/jobs"
)

// Lifecycle opens environments from landing zones' templates, provisions them, decommissions
// them and retries what failed. It records the deployments an environment gets and asks the
// graph runner for the steps that run them (see Graph).
type Lifecycle struct {
	pool    *pgxpool.Pool
	jobs    jobs.Queue
	deploys *deploy.Service
}

// NewLifecycle returns a Lifecycle; deploys plans and starts the deployments of the
// environments it provisions, queue queues the environments' steps.
func NewLifecycle(pool *pgxpool.Pool, deploys *deploy.Service, queue jobs.Queue) *Lifecycle {
	return &Lifecycle{pool: pool, jobs: queue, deploys: deploys}
}

// Templates lists the templates of published zones, for the new-environment form.
func (l *Lifecycle) Templates(ctx context.Context) ([]TemplateChoice, error) {
	rows, err := db.Queries(l.pool).PublishedTemplates(ctx)
	if err != nil {
		return nil, fmt.Errorf("templates: %w", err)
	}
	out := make([]TemplateChoice, len(rows))
	for i, r := range rows {
		out[i] = TemplateChoice{ID: r.ID, Name: r.Name, LandingZone: r.LandingZoneName}
	}
	return out, nil
}

// Open creates an environment from a template of a published zone and starts provisioning
// it: its mandatory components are checked now, all of them, against their inputs and the
// tenant's governance, and deployed side by side. It returns the environment's ID.
func (l *Lifecycle) Open(ctx context.Context, actor access.Principal, in New) (uuid.UUID, error) {
	if !actor.Member(in.TenantID) {
		return uuid.Nil, problem.Invalid("tenant_id", "exists", "no tenant with this ID that you can see")
	}
	if !actor.Can(access.EnvironmentManage, in.TenantID) {
		return uuid.Nil, problem.ErrForbidden
	}
	in.Name = strings.TrimSpace(in.Name)
	if !name.MatchString(in.Name) {
		return uuid.Nil, problem.Invalid("name", "pattern", "must be 1–40 lower-case letters, digits and -, starting with a letter, such as dev or prod-eu")
	}
	var id uuid.UUID
	err := db.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		q := db.Queries(tx)
		if tenant, err := q.ShareTenant(ctx, in.TenantID); errors.Is(err, pgx.ErrNoRows) {
			return problem.Invalid("tenant_id", "exists", "no tenant with this ID that you can see")
		} else if err != nil {
			return err
		} else if tenant.System {
			return problem.Invalid("tenant_id", "system", "the system tenant holds landing zones' system services and opens no environments")
		}
		t, err := q.GetTemplate(ctx, in.TemplateID)
		if errors.Is(err, pgx.ErrNoRows) || err == nil && t.System {
			return problem.Invalid("template_id", "exists", "no environment template with this ID")
		}
		if err != nil {
			return err
		}
		if t.WithdrawnAt != nil {
			return problem.Invalid("template_id", "withdrawn", "template %s of %s is withdrawn: choose another", t.Name, t.LandingZoneName)
		}
		// Held until the environment is recorded, so the zone is not retired meanwhile.
		z, err := q.ShareLandingZone(ctx, t.LandingZoneID)
		if err != nil {
			return err
		}
		if lifecycle.ZoneStatus(z.Status) != lifecycle.ZonePublished {
			return problem.Invalid("template_id", "published", "landing zone %s is %s: environments are opened in published zones", z.Name, z.Status)
		}
		system, err := q.GetEnvironment(ctx, z.SystemEnvironmentID.UUID)
		if err != nil {
			return err
		}
		if lifecycle.EnvironmentStatus(system.Status) != lifecycle.EnvironmentActive {
			return problem.Invalid("template_id", "ready", "landing zone %s cannot take environments while its system services are %s", z.Name, system.Status)
		}
		expires, err := expiryOf(z, in.ExpiresAt, in.TTL, time.Now())
		if err != nil {
			return err
		}
		env, err := create(ctx, q, dbgen.CreateEnvironmentParams{TenantID: in.TenantID, Name: in.Name,
			LandingZoneID: nullID(z.ID), TemplateID: nullID(t.ID), CreatedBy: nullID(actor.UserID), ExpiresAt: expires})
		if db.IsUniqueViolation(err) {
			return problem.Invalid("name", "unique", "this tenant already has an environment named %q", in.Name)
		}
		if err != nil {
			return err
		}
		id = env.ID
		if err := l.Provision(ctx, tx, actor, env.ID, "mandatory component "); err != nil {
			return err
		}
		diff := map[string]any{"name": in.Name, "template": t.Name, "landing_zone": z.Name}
		if expires != nil {
			diff["expires_at"] = expires.UTC()
		}
		return audit.Record(ctx, q, actor, audit.Event{Tenant: in.TenantID, Action: "environment.create", TargetType: "environment",
			TargetID: env.ID.String(), Diff: diff})
	})
	if err != nil {
		return uuid.Nil, fmt.Errorf("open environment: %w", err)
	}
	return id, nil
}

// Provision records a deployment of each of a planned environment's template components, in
// the caller's transaction, and starts deploying them; an environment with none is active at
// once. what names them in messages, such as "mandatory component ". The caller has checked
// that actor may: a landing zone provisions its system environment with it.
func (l *Lifecycle) Provision(ctx context.Context, tx pgx.Tx, actor access.Principal, envID uuid.UUID, what string) error {
	q := db.Queries(tx)
	env, err := q.GetEnvironment(ctx, envID)
	if err != nil {
		return err
	}
	list, err := q.TemplateComponents(ctx, env.TemplateID.UUID)
	if err != nil {
		return err
	}
	if len(list) == 0 {
		return activate(ctx, q, envID)
	}
	if err := startProvisioning(ctx, q, envID, actor.UserID); err != nil {
		return err
	}
	for _, m := range list {
		params := map[string]any{}
		if err := json.Unmarshal(m.Parameters, &params); err != nil {
			return err
		}
		_, err := l.deploys.Plan(ctx, tx, actor, deploy.Request{ComponentID: m.ComponentID, EnvironmentID: envID, Name: m.Name, Parameters: params}, deploy.Owner{TemplateComponent: m.ID})
		if err != nil {
			return about(what+m.Name+" ("+m.ComponentName+")", err)
		}
	}
	return l.step(ctx, tx, envID)
}

// step queues the environment's next step, in the caller's transaction.
func (l *Lifecycle) step(ctx context.Context, tx pgx.Tx, envID uuid.UUID) error {
	_, err := l.jobs.InsertTx(ctx, tx, graph.Args{Parent: graph.ParentEnvironment, ID: envID}, nil)
	return err
}

// about says which component a refusal is about, in each message.
func about(name string, err error) error {
	var denied *problem.Denied
	if errors.As(err, &denied) {
		return &problem.Denied{Message: name + ": " + denied.Message}
	}
	var v *problem.ValidationError
	if !errors.As(err, &v) {
		return fmt.Errorf("%s: %w", name, err)
	}
	out := &problem.ValidationError{}
	for _, f := range v.Fields {
		// The form shows it away from any field of its own: the input is named in the message.
		if input, ok := strings.CutPrefix(f.Field, "parameters."); ok {
			out.Add(f.Field, f.Rule, "%s: %s %s", name, input, f.Message)
			continue
		}
		out.Add(f.Field, f.Rule, "%s: %s", name, f.Message)
	}
	return out
}

// Decommission destroys every deployment of an environment, what came with the template last,
// and ends it decommissioned; what the deployments held from
// resolvers is given back with each destroy.
func (l *Lifecycle) Decommission(ctx context.Context, actor access.Principal, envID uuid.UUID) error {
	return db.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		q := db.Queries(tx)
		env, err := environmentFor(ctx, q, actor, envID)
		if err != nil {
			return err
		}
		if s := lifecycle.EnvironmentStatus(env.Status); s != lifecycle.EnvironmentActive && s != lifecycle.EnvironmentFailed {
			return problem.Invalid("status", "state", "%s is %s: only an active or failed environment is decommissioned", env.Name, env.Status)
		}
		if live, err := q.LiveStackInstancesIn(ctx, env.ID); err != nil {
			return err
		} else if len(live) > 0 {
			return problem.Invalid("status", "stacks", "%s holds stack instances %s: destroy them first", env.Name, strings.Join(live, ", "))
		}
		if z, err := q.ZoneOfSystemEnvironment(ctx, nullID(env.ID)); err == nil {
			return problem.Invalid("status", "system", "%s holds the system services of landing zone %s: retire the zone instead", env.Name, z.Name)
		} else if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if err := l.StartDecommission(ctx, tx, actor, env.ID); err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{Tenant: env.TenantID, Action: "environment.decommission", TargetType: "environment",
			TargetID: env.ID.String(), Diff: map[string]any{"name": env.Name}})
	})
}

// StartDecommission starts destroying an environment's deployments, in the caller's
// transaction. The caller has checked that actor may: a landing zone takes down its system
// environment with it when it is retired.
func (l *Lifecycle) StartDecommission(ctx context.Context, tx pgx.Tx, actor access.Principal, envID uuid.UUID) error {
	if err := startDecommissioning(ctx, db.Queries(tx), envID, actor.UserID); err != nil {
		return err
	}
	return l.step(ctx, tx, envID)
}

// Retry takes up a failed provisioning or decommissioning where it stopped: what was deployed
// (or destroyed) stays so, and the deployment that failed is tried again.
func (l *Lifecycle) Retry(ctx context.Context, actor access.Principal, envID uuid.UUID) error {
	return db.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		q := db.Queries(tx)
		env, err := environmentFor(ctx, q, actor, envID)
		if err != nil {
			return err
		}
		next, err := retry(ctx, q, env.ID, actor.UserID)
		if err != nil {
			return err
		}
		if err := l.step(ctx, tx, env.ID); err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{Tenant: env.TenantID, Action: "environment.retry", TargetType: "environment",
			TargetID: env.ID.String(), Diff: map[string]any{"name": env.Name, "status": string(next)}})
	})
}

// environmentFor locks an environment the actor may manage: a tenant's by its admins, a zone's
// system environment by provider admins.
func environmentFor(ctx context.Context, q *dbgen.Queries, actor access.Principal, id uuid.UUID) (dbgen.GetEnvironmentRow, error) {
	env, err := q.GetEnvironment(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && !actor.Can(access.EnvironmentRead, env.TenantID) {
		return env, problem.ErrNotFound
	}
	if err != nil {
		return env, err
	}
	if !actor.Can(access.EnvironmentManage, env.TenantID) {
		return env, problem.ErrForbidden
	}
	if _, err := q.LockEnvironment(ctx, id); err != nil {
		return env, err
	}
	return q.GetEnvironment(ctx, id)
}
