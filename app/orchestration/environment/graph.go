package environment

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"nimbus/app/domain/auth"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/graph"
	"nimbus/app/kernel/lifecycle"
	"nimbus/app/kernel/secrets"
	"nimbus/app/orchestration/deploy"
	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/jobs"
)

// Graph is an environment as the graph runner sees it while it is provisioned or
// decommissioned: its mandatory components are deployed at once up to the runner's bound, each
// after the earlier members its refers name (a machine after the network it joins);
// decommissioning takes down every deployment, those of the template last, each member before
// those it names.
// Each operation that ends in it asks the runner for the next step (graph.Args with
// graph.ParentEnvironment, queued from app/orchestration/deploy).
type Graph struct {
	pool *pgxpool.Pool
	keys *secrets.Keyring
}

// NewGraph returns the environments' graph.Parent; keys opens the parameters of the
// deployments it starts.
func NewGraph(pool *pgxpool.Pool, keys *secrets.Keyring) *Graph {
	return &Graph{pool: pool, keys: keys}
}

// run is what one step knows of the environment, from Load to Start and End.
type run struct {
	env   dbgen.GetEnvironmentRow
	actor access.Principal
	// kind is the operation each node runs: deploy while provisioning, destroy while
	// decommissioning.
	kind deploy.Kind
	// byNode are the deployments by node name (the deployment's ID); order lists the node
	// names as messages name them: template order, or newest first when taking down.
	byNode map[string]dbgen.EnvironmentDeploymentsRow
	order  []string
	// members are the deployments of the template's members, by member name: what refers name.
	members map[string]dbgen.EnvironmentDeploymentsRow
}

// Load locks the environment and returns its graph while it is provisioned or
// decommissioned, or nil. A node has failed when its operation since the provisioning (or
// decommissioning) started ended without success; one tried before that is tried again.
func (g *Graph) Load(ctx context.Context, tx pgx.Tx, id uuid.UUID) (*graph.Run, error) {
	q := db.Queries(tx)
	if _, err := q.LockEnvironment(ctx, id); errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	env, err := q.GetEnvironment(ctx, id)
	if err != nil {
		return nil, err
	}
	all, err := q.EnvironmentDeployments(ctx, env.ID)
	if err != nil {
		return nil, err
	}
	// The operations a step starts are requested by whoever started the provisioning or
	// decommissioning under way, or else made the environment; approvers see who asked.
	by := env.StatusBy
	if !by.Valid {
		by = env.CreatedBy
	}
	actor, err := auth.Requester(ctx, q, by)
	if err != nil {
		return nil, err
	}
	r := &run{env: env, actor: actor, byNode: map[string]dbgen.EnvironmentDeploymentsRow{}, members: map[string]dbgen.EnvironmentDeploymentsRow{}}
	for _, d := range mandatory(all) {
		r.members[d.Name] = d // a template's deployments are named as its members
	}
	out := &graph.Run{ID: env.ID, Data: r}
	switch lifecycle.EnvironmentStatus(env.Status) {
	case lifecycle.EnvironmentProvisioning:
		r.kind = deploy.KindDeploy
		for _, d := range mandatory(all) {
			n := r.node(d, state(env, d, deploy.Deployed, deploy.KindDeploy))
			n.After = r.after(d)
			out.Nodes = append(out.Nodes, n)
		}
	case lifecycle.EnvironmentDecommissioning:
		r.kind, out.Reverse = deploy.KindDestroy, true
		if out.Nodes, err = r.takeDown(ctx, q, all); err != nil {
			return nil, err
		}
	default:
		return nil, nil
	}
	return out, nil
}

// node records d as the node it is in the graph.
func (r *run) node(d dbgen.EnvironmentDeploymentsRow, s graph.State) graph.Node {
	name := d.ID.String()
	r.byNode[name] = d
	r.order = append(r.order, name)
	return graph.Node{Name: name, State: s}
}

// takeDown is the graph of every deployment as it was built up, for Reverse to take down: what
// the tenant deployed comes after the template's components, so those go last. A deployment
// never deployed nor tried is let go here, without running the engine: it needs no step.
func (r *run) takeDown(ctx context.Context, q *dbgen.Queries, all []dbgen.EnvironmentDeploymentsRow) ([]graph.Node, error) {
	var base []string
	for _, d := range all {
		if d.TemplateComponentID.Valid {
			base = append(base, d.ID.String())
		}
	}
	var nodes []graph.Node
	for i := len(all) - 1; i >= 0; i-- {
		d := all[i]
		s := state(r.env, d, deploy.Destroyed, deploy.KindDestroy)
		if s == graph.Waiting {
			gone, err := deploy.Discard(ctx, q, d.ID)
			if err != nil {
				return nil, err
			}
			if gone {
				s = graph.Succeeded
			}
		}
		n := r.node(d, s)
		if d.TemplateComponentID.Valid {
			n.After = r.after(d)
		} else {
			n.After = base
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

// state is where d stands in a graph whose operations are of kind and end with d in status
// done. An operation of that kind which ended without it since the transition (re)started
// failed the node.
func state(env dbgen.GetEnvironmentRow, d dbgen.EnvironmentDeploymentsRow, done deploy.DeploymentStatus, kind deploy.Kind) graph.State {
	switch {
	case deploy.DeploymentStatus(d.Status) == done:
		return graph.Succeeded
	case !deploy.Status(d.LastStatus).Ended():
		return graph.Running
	case d.LastKind == string(kind) && d.LastAt.After(env.UpdatedAt):
		return graph.Failed
	}
	return graph.Waiting
}

// Start queues one deployment's deploy or destroy, requested by whoever started the
// transition; a deploy takes the outputs of the members its refers name.
func (g *Graph) Start(ctx context.Context, tx pgx.Tx, gr *graph.Run, node string) error {
	r := gr.Data.(*run)
	queue, err := jobs.FromContext(ctx)
	if err != nil {
		return err
	}
	d, c := r.byNode[node], deploy.Change{}
	if r.kind == deploy.KindDeploy {
		if c.Parameters, err = r.referred(ctx, db.Queries(tx), d); err != nil {
			return err
		}
	}
	_, err = deploy.NewService(g.pool, g.keys, queue, nil, nil).RequestTx(ctx, tx, r.actor, d.ID, r.kind, c)
	return err
}

// End records how the provisioning or decommissioning ended, through the transitions: when it
// failed, the reason names each deployment that failed (or the one refused) and what is kept,
// or still there.
func (g *Graph) End(ctx context.Context, tx pgx.Tx, gr *graph.Run, step graph.Step, refused error) error {
	r := gr.Data.(*run)
	q := db.Queries(tx)
	switch {
	case step.Done && r.kind == deploy.KindDeploy:
		return activate(ctx, q, r.env.ID)
	case step.Done:
		return finishDecommissioning(ctx, q, r.env.ID)
	case r.kind == deploy.KindDeploy:
		return fail(ctx, q, r.env.ID, r.provisionFailure(step.Failed, refused, gr.Nodes))
	}
	return fail(ctx, q, r.env.ID, r.decommissionFailure(step.Failed, refused, gr.Nodes))
}

// provisionFailure says which mandatory components did not deploy, or could not be, and
// which were kept.
func (r *run) provisionFailure(failed []string, refused error, nodes []graph.Node) string {
	var why []string
	for _, n := range failed {
		d := r.byNode[n]
		if refused != nil {
			why = append(why, fmt.Sprintf("%s (%s) cannot be deployed: %v", d.Name, d.ComponentName, refused))
			continue
		}
		why = append(why, fmt.Sprintf("%s (%s) did not deploy: %s", d.Name, d.ComponentName, orUnknown(d.LastError, d.LastStatus)))
	}
	reason := strings.Join(why, "; ") + ". "
	if kept := r.named(nodes, graph.Succeeded); len(kept) > 0 {
		return reason + "Kept: " + strings.Join(kept, ", ") + ", deployed and left as they are, so that a retry deploys only what is missing; decommissioning removes them."
	}
	return reason + "Nothing was deployed."
}

// decommissionFailure says which destroys failed, or could not start, and what is still there.
func (r *run) decommissionFailure(failed []string, refused error, nodes []graph.Node) string {
	var why []string
	for _, n := range failed {
		d := r.byNode[n]
		if refused != nil {
			why = append(why, fmt.Sprintf("%s cannot be destroyed: %v", d.Name, refused))
			continue
		}
		why = append(why, fmt.Sprintf("destroying %s failed: %s", d.Name, orUnknown(d.LastError, d.LastStatus)))
	}
	left := r.named(nodes, graph.Waiting, graph.Running, graph.Failed)
	return "Decommissioning stopped: " + strings.Join(why, "; ") + ". Still there: " + strings.Join(left, ", ") + "."
}

// named are the names of the deployments whose nodes are in one of states, in r's order.
func (r *run) named(nodes []graph.Node, states ...graph.State) []string {
	in := map[string]bool{}
	for _, n := range nodes {
		if slices.Contains(states, n.State) {
			in[n.Name] = true
		}
	}
	var out []string
	for _, n := range r.order {
		if in[n] {
			out = append(out, r.byNode[n].Name)
		}
	}
	return out
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
