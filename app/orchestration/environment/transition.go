package environment

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"nimbus/app/kernel/lifecycle"
	"nimbus/app/kernel/outbox"
	"nimbus/app/kernel/problem"
	"nimbus/db/dbgen"
)

// transition names the change of status that failed, kept with the failed environment so
// that a retry takes up the same one.
type transition string

const (
	provision    transition = "provision"
	decommission transition = "decommission"
)

// The functions below are the only writers of an environment's status. Each change of status
// locks the environment's row in the caller's transaction and refuses a move its status does
// not allow.

// create records a new environment: a bare one is active at once, one opened from a template is
// planned until it is provisioned.
func create(ctx context.Context, q *dbgen.Queries, p dbgen.CreateEnvironmentParams) (dbgen.Environment, error) {
	p.Status = string(lifecycle.EnvironmentActive)
	if p.TemplateID.Valid {
		p.Status = string(lifecycle.EnvironmentPlanned)
	}
	return q.CreateEnvironment(ctx, p)
}

// Planned is an environment to be provisioned from a landing zone's template, made by by.
type Planned struct {
	Tenant, LandingZone, Template, By uuid.UUID
	Name                              string
}

// Plan records a planned environment in the caller's transaction and returns its ID; a landing
// zone records its system environment with it.
func Plan(ctx context.Context, q *dbgen.Queries, p Planned) (uuid.UUID, error) {
	if p.Template == uuid.Nil {
		return uuid.Nil, fmt.Errorf("plan environment %s: it has no template to be provisioned from", p.Name)
	}
	env, err := create(ctx, q, dbgen.CreateEnvironmentParams{TenantID: p.Tenant, Name: p.Name,
		LandingZoneID: nullID(p.LandingZone), TemplateID: nullID(p.Template), CreatedBy: nullID(p.By)})
	return env.ID, err
}

// startProvisioning moves an environment to provisioning for by, whose operations its steps
// will be: a planned one, or one whose provisioning failed and is tried again.
func startProvisioning(ctx context.Context, q *dbgen.Queries, id, by uuid.UUID) error {
	env, err := lockFor(ctx, q, id, lifecycle.EnvironmentProvisioning)
	if err != nil {
		return err
	}
	if lifecycle.EnvironmentStatus(env.Status) == lifecycle.EnvironmentFailed && failedIn(env) == decommission {
		return problem.Invalid("status", "state", "%s failed while it was decommissioned: it is not provisioned again", env.Name)
	}
	return q.StartEnvironmentTransition(ctx, dbgen.StartEnvironmentTransitionParams{ID: id, Status: string(lifecycle.EnvironmentProvisioning), StatusBy: nullID(by)})
}

// startDecommissioning moves an environment to decommissioning for by, whose operations its
// steps will be.
func startDecommissioning(ctx context.Context, q *dbgen.Queries, id, by uuid.UUID) error {
	if _, err := lockFor(ctx, q, id, lifecycle.EnvironmentDecommissioning); err != nil {
		return err
	}
	return q.StartEnvironmentTransition(ctx, dbgen.StartEnvironmentTransitionParams{ID: id, Status: string(lifecycle.EnvironmentDecommissioning), StatusBy: nullID(by)})
}

// retry starts again the transition a failed environment failed in, and returns the status it
// is in now. A failed environment that does not say which failed was failed by hand: it
// provisions.
func retry(ctx context.Context, q *dbgen.Queries, id, by uuid.UUID) (lifecycle.EnvironmentStatus, error) {
	env, err := q.LockEnvironment(ctx, id)
	if err != nil {
		return "", fmt.Errorf("lock environment %s: %w", id, err)
	}
	if lifecycle.EnvironmentStatus(env.Status) != lifecycle.EnvironmentFailed {
		return "", problem.Invalid("status", "failed", "%s is %s: only a failed environment is retried", env.Name, env.Status)
	}
	if failedIn(env) == decommission {
		return lifecycle.EnvironmentDecommissioning, startDecommissioning(ctx, q, id, by)
	}
	return lifecycle.EnvironmentProvisioning, startProvisioning(ctx, q, id, by)
}

// activate ends a provisioning, or a planned environment's that has nothing to deploy.
func activate(ctx context.Context, q *dbgen.Queries, id uuid.UUID) error {
	env, err := lockFor(ctx, q, id, lifecycle.EnvironmentActive)
	if err != nil {
		return err
	}
	return end(ctx, q, env, lifecycle.EnvironmentActive, "")
}

// finishDecommissioning ends a decommissioning with nothing left.
func finishDecommissioning(ctx context.Context, q *dbgen.Queries, id uuid.UUID) error {
	env, err := lockFor(ctx, q, id, lifecycle.EnvironmentDecommissioned)
	if err != nil {
		return err
	}
	return end(ctx, q, env, lifecycle.EnvironmentDecommissioned, "")
}

// fail ends the provisioning or decommissioning under way, saying why in reason, and keeps
// which of the two failed.
func fail(ctx context.Context, q *dbgen.Queries, id uuid.UUID, reason string) error {
	env, err := lockFor(ctx, q, id, lifecycle.EnvironmentFailed)
	if err != nil {
		return err
	}
	return end(ctx, q, env, lifecycle.EnvironmentFailed, reason)
}

// end records how the transition env is in ended; a failed one keeps its name.
func end(ctx context.Context, q *dbgen.Queries, env dbgen.Environment, to lifecycle.EnvironmentStatus, reason string) error {
	var failed *string
	if to == lifecycle.EnvironmentFailed {
		in := string(provision)
		if lifecycle.EnvironmentStatus(env.Status) == lifecycle.EnvironmentDecommissioning {
			in = string(decommission)
		}
		failed = &in
	}
	err := q.SetEnvironmentStatus(ctx, dbgen.SetEnvironmentStatusParams{ID: env.ID, Status: string(to), StatusReason: reason, FailedTransition: failed})
	if err != nil {
		return err
	}
	return outbox.Emit(ctx, q, outbox.Event{Type: "environment." + string(to), Subject: env.Name, Tenant: env.TenantID, Environment: env.ID,
		Data: map[string]any{"from": env.Status, "to": to, "reason": reason, "failed_transition": failed}})
}

// lockFor locks an environment and returns it, or refuses when its status may not become to.
func lockFor(ctx context.Context, q *dbgen.Queries, id uuid.UUID, to lifecycle.EnvironmentStatus) (dbgen.Environment, error) {
	env, err := q.LockEnvironment(ctx, id)
	if err != nil {
		return env, fmt.Errorf("lock environment %s: %w", id, err)
	}
	return env, lifecycle.Environments.Check(env.Name, lifecycle.EnvironmentStatus(env.Status), to)
}

func failedIn(env dbgen.Environment) transition {
	if env.FailedTransition == nil {
		return ""
	}
	return transition(*env.FailedTransition)
}

func nullID(id uuid.UUID) uuid.NullUUID { return uuid.NullUUID{UUID: id, Valid: id != uuid.Nil} }
