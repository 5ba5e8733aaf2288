package landingzone

import (
	"cmp"
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
	"github.com/riverqueue/river"

	"nimbus/app/access"
	"nimbus/app/audit"
	"nimbus/app/deploy"
	"nimbus/app/environment"
	"nimbus/app/problem"
	"nimbus/app/secrets"
	"nimbus/db"
	"nimbus/db/dbgen"
)

var environmentName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,39}$`)

// Open creates an environment from a template of a published zone and starts provisioning
// it: its mandatory components are checked now, all of them, against their inputs and the
// tenant's governance, and deployed one after another. It returns the environment's ID.
func (s *Service) Open(ctx context.Context, actor access.Principal, in environment.New) (uuid.UUID, error) {
	if !actor.Member(in.TenantID) {
		return uuid.Nil, problem.Invalid("tenant_id", "exists", "no tenant with this ID that you can see")
	}
	if !actor.Can("environment:manage", in.TenantID) {
		return uuid.Nil, problem.ErrForbidden
	}
	in.Name = strings.TrimSpace(in.Name)
	if !environmentName.MatchString(in.Name) {
		return uuid.Nil, problem.Invalid("name", "pattern", "must be 1–40 lower-case letters, digits and -, starting with a letter, such as dev or prod-eu")
	}
	var id uuid.UUID
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := dbgen.New(tx)
		if tenant, err := q.GetTenant(ctx, in.TenantID); errors.Is(err, pgx.ErrNoRows) {
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
		if z.Status != "published" {
			return problem.Invalid("template_id", "published", "landing zone %s is %s: environments are opened in published zones", z.Name, z.Status)
		}
		system, err := q.GetEnvironment(ctx, z.SystemEnvironmentID.UUID)
		if err != nil {
			return err
		}
		if system.Status != "active" {
			return problem.Invalid("template_id", "ready", "landing zone %s cannot take environments while its system services are %s", z.Name, system.Status)
		}
		env, err := q.CreateEnvironment(ctx, dbgen.CreateEnvironmentParams{TenantID: in.TenantID, Name: in.Name, Status: "planned",
			LandingZoneID: nullID(z.ID), TemplateID: nullID(t.ID), CreatedBy: nullID(actor.UserID)})
		if db.IsUniqueViolation(err) {
			return problem.Invalid("name", "unique", "this tenant already has an environment named %q", in.Name)
		}
		if err != nil {
			return err
		}
		id = env.ID
		if err := s.provision(ctx, tx, actor, env.ID, "mandatory component "); err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{Tenant: in.TenantID, Action: "environment.create", TargetType: "environment",
			TargetID: env.ID.String(), Diff: map[string]any{"name": in.Name, "template": t.Name, "landing_zone": z.Name}})
	})
	if err != nil {
		return uuid.Nil, fmt.Errorf("open environment: %w", err)
	}
	return id, nil
}

// provision records a deployment of each of the environment's template components, in the
// caller's transaction, and starts deploying them. what names them in messages, such as
// "mandatory component ".
func (s *Service) provision(ctx context.Context, tx pgx.Tx, actor access.Principal, envID uuid.UUID, what string) error {
	q := dbgen.New(tx)
	env, err := q.GetEnvironment(ctx, envID)
	if err != nil {
		return err
	}
	list, err := q.TemplateComponents(ctx, env.TemplateID.UUID)
	if err != nil {
		return err
	}
	if len(list) == 0 {
		return q.SetEnvironmentStatus(ctx, dbgen.SetEnvironmentStatusParams{ID: envID, Status: "active"})
	}
	if err := q.StartEnvironmentTransition(ctx, dbgen.StartEnvironmentTransitionParams{ID: envID, Status: "provisioning", StatusBy: nullID(actor.UserID)}); err != nil {
		return err
	}
	for _, m := range list {
		params := map[string]any{}
		if err := json.Unmarshal(m.Parameters, &params); err != nil {
			return err
		}
		_, err := s.deploys.Plan(ctx, tx, actor, deploy.Request{ComponentID: m.ComponentID, EnvironmentID: envID, Name: m.Name, Parameters: params}, m.ID)
		if err != nil {
			return about(what+m.Name+" ("+m.ComponentName+")", err)
		}
	}
	_, err = s.jobs.InsertTx(ctx, tx, deploy.EnvironmentArgs{EnvironmentID: envID}, nil)
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
		out.Add(f.Field, f.Rule, "%s: %s", name, f.Message)
	}
	return out
}

// Decommission destroys every deployment of an environment, newest first, so what came with
// the template goes last, and ends it decommissioned; what the deployments held from
// resolvers is given back with each destroy.
func (s *Service) Decommission(ctx context.Context, actor access.Principal, envID uuid.UUID) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := dbgen.New(tx)
		env, err := environmentFor(ctx, q, actor, envID)
		if err != nil {
			return err
		}
		if env.Status != "active" && env.Status != "failed" {
			return problem.Invalid("status", "state", "%s is %s: only an active or failed environment is decommissioned", env.Name, env.Status)
		}
		if z, err := q.ZoneOfSystemEnvironment(ctx, nullID(env.ID)); err == nil {
			return problem.Invalid("status", "system", "%s holds the system services of landing zone %s: retire the zone instead", env.Name, z.Name)
		} else if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if err := s.startDecommission(ctx, tx, actor, env.ID); err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{Tenant: env.TenantID, Action: "environment.decommission", TargetType: "environment",
			TargetID: env.ID.String(), Diff: map[string]any{"name": env.Name}})
	})
}

func (s *Service) startDecommission(ctx context.Context, tx pgx.Tx, actor access.Principal, envID uuid.UUID) error {
	if err := dbgen.New(tx).StartEnvironmentTransition(ctx, dbgen.StartEnvironmentTransitionParams{ID: envID, Status: "decommissioning",
		StatusBy: nullID(actor.UserID)}); err != nil {
		return err
	}
	_, err := s.jobs.InsertTx(ctx, tx, deploy.EnvironmentArgs{EnvironmentID: envID}, nil)
	return err
}

// Retry takes up a failed provisioning or decommissioning where it stopped: what was deployed
// (or destroyed) stays so, and the deployment that failed is tried again.
func (s *Service) Retry(ctx context.Context, actor access.Principal, envID uuid.UUID) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := dbgen.New(tx)
		env, err := environmentFor(ctx, q, actor, envID)
		if err != nil {
			return err
		}
		if env.Status != "failed" {
			return problem.Invalid("status", "failed", "%s is %s: only a failed environment is retried", env.Name, env.Status)
		}
		next := "provisioning"
		if strings.HasPrefix(env.StatusReason, decommissionStopped) {
			next = "decommissioning"
		}
		if err := q.StartEnvironmentTransition(ctx, dbgen.StartEnvironmentTransitionParams{ID: env.ID, Status: next, StatusBy: nullID(actor.UserID)}); err != nil {
			return err
		}
		if _, err := s.jobs.InsertTx(ctx, tx, deploy.EnvironmentArgs{EnvironmentID: env.ID}, nil); err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{Tenant: env.TenantID, Action: "environment.retry", TargetType: "environment",
			TargetID: env.ID.String(), Diff: map[string]any{"name": env.Name, "status": next}})
	})
}

// environmentFor locks an environment the actor may manage: a tenant's by its admins, a zone's
// system environment by provider admins.
func environmentFor(ctx context.Context, q *dbgen.Queries, actor access.Principal, id uuid.UUID) (dbgen.GetEnvironmentRow, error) {
	env, err := q.GetEnvironment(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && !actor.Can("environment:read", env.TenantID) {
		return env, problem.ErrNotFound
	}
	if err != nil {
		return env, err
	}
	if !actor.Can("environment:manage", env.TenantID) {
		return env, problem.ErrForbidden
	}
	if _, err := q.LockEnvironment(ctx, id); err != nil {
		return env, err
	}
	return q.GetEnvironment(ctx, id)
}

// decommissionStopped starts the reason of an environment whose decommissioning failed, which
// tells a retry what to take up again.
const decommissionStopped = "Decommissioning stopped: "

// Advancer takes an environment being provisioned or decommissioned one step further each time
// an operation in it ends: it deploys the next mandatory component, or destroys the next
// deployment, or records how the environment ended.
type Advancer struct {
	river.WorkerDefaults[deploy.EnvironmentArgs]
	pool *pgxpool.Pool
	keys *secrets.Keyring
}

// NewAdvancer returns the worker; keys opens the parameters of the deployments it starts.
func NewAdvancer(pool *pgxpool.Pool, keys *secrets.Keyring) *Advancer {
	return &Advancer{pool: pool, keys: keys}
}

// Timeout bounds one step, which only reads and queues.
func (a *Advancer) Timeout(*river.Job[deploy.EnvironmentArgs]) time.Duration { return time.Minute }

// Work takes the step, under the environment's row lock: two steps of one environment never
// run together, and a step that finds nothing to do changes nothing.
func (a *Advancer) Work(ctx context.Context, job *river.Job[deploy.EnvironmentArgs]) error {
	jobs, err := river.ClientFromContextSafely[pgx.Tx](ctx)
	if err != nil {
		return err
	}
	deploys := deploy.NewService(a.pool, a.keys, jobs, nil, nil)
	return pgx.BeginFunc(ctx, a.pool, func(tx pgx.Tx) error {
		q := dbgen.New(tx)
		if _, err := q.LockEnvironment(ctx, job.Args.EnvironmentID); errors.Is(err, pgx.ErrNoRows) {
			return nil
		} else if err != nil {
			return err
		}
		env, err := q.GetEnvironment(ctx, job.Args.EnvironmentID)
		if err != nil {
			return err
		}
		deployments, err := q.EnvironmentDeployments(ctx, env.ID)
		if err != nil {
			return err
		}
		actor, err := requester(ctx, q, env)
		if err != nil {
			return err
		}
		switch env.Status {
		case "provisioning":
			return provisionStep(ctx, tx, deploys, actor, env, deployments)
		case "decommissioning":
			return decommissionStep(ctx, tx, deploys, actor, env, deployments)
		}
		return nil
	})
}

// requester is whom the operations a step starts are requested by, and audited as: whoever
// started the provisioning or decommissioning under way. Their permission was checked when
// they asked; approvers see who asked.
func requester(ctx context.Context, q *dbgen.Queries, env dbgen.GetEnvironmentRow) (access.Principal, error) {
	p := access.Principal{Email: "system"}
	by := env.StatusBy
	if !by.Valid {
		by = env.CreatedBy
	}
	if by.Valid {
		u, err := q.GetUser(ctx, by.UUID)
		if err == nil {
			p.UserID, p.Email = u.ID, u.Email
		} else if !errors.Is(err, pgx.ErrNoRows) {
			return p, err
		}
	}
	return p, nil
}

// waiting reports whether a deployment's last operation has not ended.
func waiting(d dbgen.EnvironmentDeploymentsRow) bool {
	return d.LastStatus == "queued" || d.LastStatus == "running" || d.LastStatus == "awaiting_approval"
}

// provisionStep deploys the first mandatory component not deployed yet, or ends the
// provisioning: active when all are deployed, failed when one failed since the provisioning
// (re)started.
func provisionStep(ctx context.Context, tx pgx.Tx, deploys *deploy.Service, actor access.Principal, env dbgen.GetEnvironmentRow, all []dbgen.EnvironmentDeploymentsRow) error {
	q := dbgen.New(tx)
	var done []string
	for _, d := range mandatory(all) {
		switch {
		case d.Status == "deployed":
			done = append(done, d.Name)
			continue
		case waiting(d):
			return nil
		case d.LastKind == "deploy" && d.LastAt.After(env.UpdatedAt):
			// Its deploy since the provisioning (re)started ended without deploying it.
			reason := fmt.Sprintf("%s (%s) did not deploy: %s. ", d.Name, d.ComponentName, orUnknown(d.LastError, d.LastStatus))
			if len(done) > 0 {
				reason += "Kept: " + strings.Join(done, ", ") + ", deployed before it and left as they are, so that a retry deploys only what is missing; decommissioning removes them."
			} else {
				reason += "Nothing was deployed."
			}
			return q.SetEnvironmentStatus(ctx, dbgen.SetEnvironmentStatusParams{ID: env.ID, Status: "failed", StatusReason: reason})
		}
		_, err := deploys.StartTx(ctx, tx, actor, d.ID, "deploy")
		if refusal(err) {
			reason := fmt.Sprintf("%s (%s) cannot be deployed: %v", d.Name, d.ComponentName, err)
			return q.SetEnvironmentStatus(ctx, dbgen.SetEnvironmentStatusParams{ID: env.ID, Status: "failed", StatusReason: reason})
		}
		return err
	}
	return q.SetEnvironmentStatus(ctx, dbgen.SetEnvironmentStatusParams{ID: env.ID, Status: "active"})
}

// refusal reports whether err is a rule saying no, which trying again would only repeat: the
// environment fails, saying so, rather than its step being retried until it is dropped.
func refusal(err error) bool {
	var denied *problem.Denied
	return err != nil && (problem.FieldOf(err) != "" || errors.As(err, &denied))
}

// mandatory are the deployments made for the environment's template, in template order.
func mandatory(all []dbgen.EnvironmentDeploymentsRow) []dbgen.EnvironmentDeploymentsRow {
	var out []dbgen.EnvironmentDeploymentsRow
	for _, d := range all {
		if d.TemplateComponentID.Valid {
			out = append(out, d)
		}
	}
	slices.SortStableFunc(out, func(a, b dbgen.EnvironmentDeploymentsRow) int { return cmp.Compare(a.Position, b.Position) })
	return out
}

func orUnknown(msg, status string) string {
	if msg != "" {
		return msg
	}
	return "it was " + status
}

// decommissionStep destroys the newest deployment still there, or ends the decommissioning.
// A deployment that never had resources is let go without running the engine.
func decommissionStep(ctx context.Context, tx pgx.Tx, deploys *deploy.Service, actor access.Principal, env dbgen.GetEnvironmentRow, all []dbgen.EnvironmentDeploymentsRow) error {
	q := dbgen.New(tx)
	var left []string
	for i := len(all) - 1; i >= 0; i-- {
		if all[i].Status != "destroyed" {
			left = append(left, all[i].Name)
		}
	}
	for i := len(all) - 1; i >= 0; i-- {
		d := all[i]
		switch {
		case d.Status == "destroyed":
			continue
		case waiting(d):
			return nil
		case d.LastKind == "destroy" && d.LastAt.After(env.UpdatedAt):
			reason := fmt.Sprintf("%sdestroying %s failed: %s. Still there: %s.", decommissionStopped, d.Name, orUnknown(d.LastError, d.LastStatus), strings.Join(left, ", "))
			return q.SetEnvironmentStatus(ctx, dbgen.SetEnvironmentStatusParams{ID: env.ID, Status: "failed", StatusReason: reason})
		}
		gone, err := deploy.Discard(ctx, q, d.ID)
		if err != nil {
			return err
		}
		if gone {
			continue
		}
		_, err = deploys.StartTx(ctx, tx, actor, d.ID, "destroy")
		if refusal(err) {
			reason := fmt.Sprintf("%s%s cannot be destroyed: %v. Still there: %s.", decommissionStopped, d.Name, err, strings.Join(left, ", "))
			return q.SetEnvironmentStatus(ctx, dbgen.SetEnvironmentStatusParams{ID: env.ID, Status: "failed", StatusReason: reason})
		}
		return err
	}
	return q.SetEnvironmentStatus(ctx, dbgen.SetEnvironmentStatusParams{ID: env.ID, Status: "decommissioned"})
}
