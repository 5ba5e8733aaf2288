package environment

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"nimbus/app/access"
	"nimbus/app/deploy"
	"nimbus/app/problem"
	"nimbus/app/secrets"
	"nimbus/db/dbgen"
	"nimbus/jobs"
)

// Advancer takes an environment being provisioned or decommissioned one step further each time
// an operation in it ends: it deploys the next mandatory component, or destroys the next
// deployment, or records how the environment ended. The job is deploy.EnvironmentArgs, which
// the end of an operation queues from app/deploy.
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
	queue, err := jobs.FromContext(ctx)
	if err != nil {
		return err
	}
	deploys := deploy.NewService(a.pool, a.keys, queue, nil, nil)
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
		switch Status(env.Status) {
		case Provisioning:
			return provisionStep(ctx, tx, deploys, actor, env, deployments)
		case Decommissioning:
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
			return fail(ctx, q, env.ID, reason)
		}
		_, err := deploys.StartTx(ctx, tx, actor, d.ID, "deploy")
		if refusal(err) {
			return fail(ctx, q, env.ID, fmt.Sprintf("%s (%s) cannot be deployed: %v", d.Name, d.ComponentName, err))
		}
		return err
	}
	return activate(ctx, q, env.ID)
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
			return fail(ctx, q, env.ID, fmt.Sprintf("Decommissioning stopped: destroying %s failed: %s. Still there: %s.",
				d.Name, orUnknown(d.LastError, d.LastStatus), strings.Join(left, ", ")))
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
			return fail(ctx, q, env.ID, fmt.Sprintf("Decommissioning stopped: %s cannot be destroyed: %v. Still there: %s.", d.Name, err, strings.Join(left, ", ")))
		}
		return err
	}
	return finishDecommissioning(ctx, q, env.ID)
}
