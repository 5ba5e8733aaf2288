// Package deploy puts components into environments: deployments, the operations requested on
// them, and the worker that runs each operation as a checkpointed saga.
//
// A deploy reads in three hops. A handler (package deployweb, which holds the pages and the
// API on top of this one) asks the Service (deploy.go, actions.go), which checks the request
// and queues the operation; the Worker (worker.go) claims it and runs the steps its kind lists
// in steps.go, each step calling the engine through pulumix; end (ending.go) decides how it
// ends. The moves of an operation (operation.go names its statuses) are the functions of
// lifecycle.go, the only code that writes operations and their steps.
package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"nimbus/app/domain/cluster"
	"nimbus/app/domain/governance"
	"nimbus/app/domain/proxmox"
	"nimbus/app/domain/resolver"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/lifecycle"
	"nimbus/app/kernel/objstore"
	"nimbus/app/kernel/problem"
	"nimbus/app/kernel/secrets"
	"nimbus/app/platform/audit"
	"nimbus/app/platform/pulumix"
	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/jobs"
)

// Deployment is a component version deployed into an environment.
type Deployment struct {
	ID            uuid.UUID        `json:"id"`
	TenantID      uuid.UUID        `json:"tenant_id"`
	Tenant        string           `json:"tenant"`
	EnvironmentID uuid.UUID        `json:"environment_id"`
	Environment   string           `json:"environment"`
	ComponentID   uuid.UUID        `json:"component_id"`
	Component     string           `json:"component"`
	Version       int              `json:"version"`
	Name          string           `json:"name"`
	Parameters    map[string]any   `json:"parameters"`   // secret ones are left out
	SecretNames   []string         `json:"secret_names"` // the secret parameters set, never their values
	Outputs       map[string]any   `json:"outputs"`
	Status        DeploymentStatus `json:"status"`
	// DriftStatus is in_sync, drifted or unknown (never checked), as the last drift check,
	// reconcile or accept left it at DriftCheckedAt; Drift is what a check found drifted.
	DriftStatus string `json:"drift_status"`
	// Slot is the stack instance slot the deployment holds, if any: the instance changes it.
	Slot string `json:"slot,omitempty"`
	// GitOptIns say what its component's repository may do to it.
	GitOptIns
	DriftCheckedAt *time.Time        `json:"drift_checked_at"`
	Drift          []pulumix.Drifted `json:"drift"`
	CreatedAt      time.Time         `json:"created_at"`
	UpdatedAt      time.Time         `json:"updated_at"`
}

func deploymentFromRow(r dbgen.GetDeploymentRow, secretNames []string) Deployment {
	d := Deployment{ID: r.ID, TenantID: r.TenantID, Tenant: r.TenantName, EnvironmentID: r.EnvironmentID, Environment: r.EnvironmentName,
		ComponentID: r.ComponentID, Component: r.ComponentName, Version: int(r.Version), Name: r.Name,
		Status: DeploymentStatus(r.Status), CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Parameters: map[string]any{}, Outputs: map[string]any{},
		SecretNames: secretNames}
	_ = json.Unmarshal(r.Parameters, &d.Parameters)
	_ = json.Unmarshal(r.Outputs, &d.Outputs)
	d.DriftStatus, d.DriftCheckedAt, d.Drift = r.DriftStatus, r.DriftCheckedAt, []pulumix.Drifted{}
	_ = json.Unmarshal(r.Drift, &d.Drift)
	d.Slot = slotName(r.Slot)
	d.GitOptIns = GitOptIns{PreviewFromGit: r.PreviewFromGit, UpgradeOnPublish: r.UpgradeOnPublish}
	if d.SecretNames == nil {
		d.SecretNames = []string{}
	}
	return d
}

// Request asks for a component to be deployed.
type Request struct {
	ComponentID   uuid.UUID      `json:"component_id"`
	Version       int            `json:"version"` // 0: the latest published
	EnvironmentID uuid.UUID      `json:"environment_id"`
	Name          string         `json:"name"`
	Parameters    map[string]any `json:"parameters"`
	// PreviewOnly records the deployment as pending and previews it; Start deploys it after.
	PreviewOnly bool `json:"preview_only"`
	// owner is what a graph made the deployment for, set by Plan.
	owner Owner
}

// Owner is what a deployment was made for when a graph made it: a template component of an
// environment being provisioned, or a slot of a stack instance.
type Owner struct {
	TemplateComponent uuid.UUID
	StackInstance     uuid.UUID
	Slot              string
}

// Change is what an operation on an existing deployment brings: parameters laid over the
// current ones (null resets one to its default) and, for an upgrade or a preview of one, a
// version.
type Change struct {
	Parameters map[string]any `json:"parameters"`
	Version    int            `json:"version"`
	// Rotate names secret inputs filled by the secret provisioner that get a new value.
	Rotate []string `json:"rotate"`
	// Back lets an upgrade return to an earlier version: a stack instance's failed upgrade rolls
	// its slots back so. People and the API cannot ask for it.
	Back bool `json:"-"`
	// reconcile reads the resources back first, so that the update puts back what drifted.
	reconcile bool
}

// OperationArgs asks a worker to run an operation.
type OperationArgs struct {
	OperationID uuid.UUID `json:"operation_id"`
}

// Kind names the job in River.
func (OperationArgs) Kind() string { return "operation" }

// InsertOpts bounds the retries of passing errors (a database that went away, a stack locked
// by an engine still finishing); the errors that stay fail the operation at once.
func (OperationArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{MaxAttempts: 5} }

// Service requests operations on behalf of a principal.
type Service struct {
	pool    *pgxpool.Pool
	keys    *secrets.Keyring
	jobs    jobs.Queue
	runner  *pulumix.Runner // for state exports and restores; nil without a toolchain
	objects objstore.Store  // whole logs of long operations; may be nil
	// places is the workers' bound on a tenant's operations running at once, for telling why
	// an operation waits.
	places jobs.PerTenant
}

// NewService returns a Service; keys seals secret parameters, queue queues the operations,
// runner reads and writes stack states, objects holds the whole logs of long operations.
func NewService(pool *pgxpool.Pool, keys *secrets.Keyring, queue jobs.Queue, runner *pulumix.Runner, objects objstore.Store) *Service {
	return &Service{pool: pool, keys: keys, jobs: queue, runner: runner, objects: objects, places: operationPlaces(0)}
}

// PerTenant tells the service how many of one tenant's operations the workers run at once (as
// Worker.PerTenant does them); zero keeps DefaultOperationsPerTenant.
func (s *Service) PerTenant(n int) *Service {
	s.places = operationPlaces(n)
	return s
}

var deploymentName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,39}$`)

// Deploy validates the request completely, records the deployment and its first operation, and
// queues the operation, all in one transaction, which a worker may take before the disk has it
// (db.ToldTx).
func (s *Service) Deploy(ctx context.Context, actor access.Principal, req Request) (Deployment, Operation, error) {
	p, err := s.prepare(ctx, db.Queries(s.pool), actor, req)
	if err != nil {
		return Deployment{}, Operation{}, err
	}
	var op dbgen.Operation
	err = db.ToldTx(ctx, s.pool, func(tx pgx.Tx) error {
		op, err = s.record(ctx, tx, actor, p, true)
		return err
	})
	if err != nil {
		return Deployment{}, Operation{}, fmt.Errorf("deploy: %w", err)
	}
	d, err := s.Get(ctx, actor, p.id)
	if err != nil {
		return Deployment{}, Operation{}, err
	}
	o, err := s.Operation(ctx, actor, op.ID)
	return d, o, err
}

// Plan records a deployment for its owner (a template component, a stack slot) in the caller's
// transaction, checked as Deploy checks it, without deploying it: the graph that made it
// deploys it with StartTx.
func (s *Service) Plan(ctx context.Context, tx pgx.Tx, actor access.Principal, req Request, owner Owner) (uuid.UUID, error) {
	req.owner = owner
	p, err := s.prepare(ctx, db.Queries(tx), actor, req)
	if err != nil {
		return uuid.Nil, err
	}
	_, err = s.record(ctx, tx, actor, p, false)
	return p.id, err
}

// prepared is a deploy request checked against everything known before it is recorded.
type prepared struct {
	env  dbgen.GetEnvironmentRow
	comp dbgen.GetComponentRow
	id   uuid.UUID
	name string
	kind Kind
	in   inputs
	req  Request
}

// prepare checks a deploy request: the environment, the component and its version, the name,
// the parameters against the version's inputs, and the tenant's governance.
func (s *Service) prepare(ctx context.Context, q *dbgen.Queries, actor access.Principal, req Request) (prepared, error) {
	env, err := q.GetEnvironment(ctx, req.EnvironmentID)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && !actor.Can(access.EnvironmentRead, env.TenantID) {
		return prepared{}, problem.Invalid("environment_id", "exists", "no environment with this ID that you can see")
	}
	if err != nil {
		return prepared{}, err
	}
	if !actor.Can(access.ComponentDeploy, env.TenantID) {
		return prepared{}, problem.ErrForbidden
	}
	if err := takes(env.Name, env.Status, req.owner.TemplateComponent); err != nil {
		return prepared{}, err
	}
	comp, err := q.GetComponent(ctx, req.ComponentID)
	visible := err == nil && (!comp.TenantID.Valid || comp.TenantID.UUID == env.TenantID)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && !visible {
		return prepared{}, problem.Invalid("component_id", "exists", "no component with this ID that this environment's tenant can use")
	}
	if err != nil {
		return prepared{}, err
	}
	if err := offered(actor, env, comp); err != nil {
		return prepared{}, err
	}
	if comp.Provider == cluster.Provider {
		if err := onCluster(ctx, q, env); err != nil {
			return prepared{}, err
		}
	}
	if comp.Provider == proxmox.Provider {
		if err := onProxmox(ctx, q, env); err != nil {
			return prepared{}, err
		}
	}
	ver, err := version(ctx, q, comp, int32(req.Version))
	if err != nil {
		return prepared{}, err
	}
	v := &problem.ValidationError{}
	req.Name = strings.TrimSpace(req.Name)
	if !deploymentName.MatchString(req.Name) {
		v.Add("name", "pattern", "must be 1–40 lower-case letters, digits and -, starting with a letter")
	}
	id := uuid.New()
	configured, err := resolver.Configured(ctx, q, env.ID)
	if err != nil {
		return prepared{}, err
	}
	in, err := s.resolve(ver, id, configured, req.Parameters, v)
	if err != nil {
		return prepared{}, err
	}
	// The tenant's rules, on what is known now; the govern step checks again once resolvers
	// have filled the rest.
	if err := governance.Check(ctx, q, env.TenantID, comp.ID, in.Plain); err != nil {
		return prepared{}, err
	}
	kind := KindDeploy
	if req.PreviewOnly {
		kind = KindPreview
	}
	return prepared{env: env, comp: comp, id: id, name: req.Name, kind: kind, in: in, req: req}, nil
}

// offered refuses a component the environment cannot take: one of another provider than its
// landing zone deploys to, or, for anyone but a provider admin, a part Nimbus deploys itself.
func offered(actor access.Principal, env dbgen.GetEnvironmentRow, comp dbgen.GetComponentRow) error {
	if env.LandingZoneProvider != "" && comp.Provider != env.LandingZoneProvider {
		return problem.Invalid("component_id", "provider", "%s is a %s component, and environment %s deploys to %s (landing zone %s): choose a %s component",
			comp.Name, comp.Provider, env.Name, env.LandingZoneProvider, env.LandingZoneName, env.LandingZoneProvider)
	}
	if comp.SystemOnly && !actor.ProviderAdmin {
		return problem.Invalid("component_id", "system_only", "%s is one of the parts Nimbus deploys itself (the tenant factory's): a provider admin deploys it", comp.Name)
	}
	return nil
}

// takes refuses a new deployment in an environment that is not active, except the mandatory
// components (templateComponent) of one being made.
func takes(env, status string, templateComponent uuid.UUID) error {
	s := lifecycle.EnvironmentStatus(status)
	if s == lifecycle.EnvironmentActive || templateComponent != uuid.Nil && (s == lifecycle.EnvironmentPlanned || s == lifecycle.EnvironmentProvisioning) {
		return nil
	}
	return problem.Invalid("environment_id", "state", "%s is %s: deploy into an active environment", env, status)
}

// record writes a prepared deployment, audited, in the caller's transaction, and queues its
// first operation when queue is set.
func (s *Service) record(ctx context.Context, tx pgx.Tx, actor access.Principal, p prepared, queue bool) (dbgen.Operation, error) {
	q := db.Queries(tx)
	// Checked again under the environment's share lock: it is not decommissioned meanwhile.
	status, err := q.ShareEnvironment(ctx, p.env.ID)
	if err != nil {
		return dbgen.Operation{}, err
	}
	if err := takes(p.env.Name, status, p.req.owner.TemplateComponent); err != nil {
		return dbgen.Operation{}, err
	}
	// Under the tenant's lock, so that concurrent deploys cannot pass the limit together.
	if err := governance.CheckInstances(ctx, q, p.env.TenantID, p.comp.ID); err != nil {
		return dbgen.Operation{}, err
	}
	if p.req.owner == (Owner{}) {
		if err := takeOver(ctx, q, actor, p.env.ID, p.name); err != nil {
			return dbgen.Operation{}, err
		}
	}
	plainJSON, _ := json.Marshal(p.in.Plain)
	_, err = createDeployment(ctx, q, dbgen.CreateDeploymentParams{
		ID: p.id, TenantID: p.env.TenantID, EnvironmentID: p.env.ID, ComponentID: p.comp.ID, Version: p.in.Version, Name: p.name,
		Parameters: plainJSON, SecretParameters: p.in.Sealed, SecretKeyID: &p.in.KeyID, Project: p.comp.Name,
		Stack: "d-" + strings.ReplaceAll(p.id.String(), "-", ""), StateLocation: "",
		CreatedBy:           uuid.NullUUID{UUID: actor.UserID, Valid: actor.UserID != uuid.Nil},
		TemplateComponentID: nullID(p.req.owner.TemplateComponent),
		StackInstanceID:     nullID(p.req.owner.StackInstance),
		Slot:                nullText(p.req.owner.Slot),
	})
	if db.IsUniqueViolation(err) {
		return dbgen.Operation{}, problem.Invalid("name", "unique", "%s already has a deployment named %q", p.env.Name, p.name)
	}
	if err != nil {
		return dbgen.Operation{}, err
	}
	var op dbgen.Operation
	diff := map[string]any{"name": p.name, "component": p.comp.Name, "version": p.in.Version, "parameters": p.in.Plain}
	if queue {
		if op, err = s.queue(ctx, tx, actor, p.id, p.kind, p.in); err != nil {
			return op, err
		}
		diff["operation"] = p.kind
	}
	return op, audit.Record(ctx, q, actor, audit.Event{Tenant: p.env.TenantID, Action: "deployment.create", TargetType: "deployment",
		TargetID: p.id.String(), Diff: diff})
}

// StartTx queues, in the caller's transaction, the deploy of a deployment recorded by Plan, or
// the destroy of one, on behalf of the user whose request led to it.
func (s *Service) StartTx(ctx context.Context, tx pgx.Tx, actor access.Principal, deploymentID uuid.UUID, kind Kind) (uuid.UUID, error) {
	return s.RequestTx(ctx, tx, actor, deploymentID, kind, Change{})
}

// RequestTx queues an operation of any kind, with the change it brings, in the caller's
// transaction, on behalf of the user whose request led to it: a step of a graph, whose
// permission was checked when the graph was asked for.
func (s *Service) RequestTx(ctx context.Context, tx pgx.Tx, actor access.Principal, deploymentID uuid.UUID, kind Kind, c Change) (uuid.UUID, error) {
	q := db.Queries(tx)
	d, err := lockedDeployment(ctx, q, deploymentID)
	if err != nil {
		return uuid.Nil, err
	}
	if err := s.allowed(ctx, q, d, kind, c); err != nil {
		return uuid.Nil, err
	}
	in := inputs{Plain: map[string]any{}}
	if kind != KindDestroy && kind != KindRefresh && kind != KindDriftCheck {
		if in, err = s.target(ctx, q, d, kind, c); err != nil {
			return uuid.Nil, err
		}
	}
	op, err := s.queue(ctx, tx, actor, d.ID, kind, in)
	if err != nil {
		return uuid.Nil, err
	}
	diff := map[string]any{"name": d.Name, "kind": kind}
	if in.Version != 0 && kind != KindDeploy {
		diff["version"], diff["parameters"] = in.Version, in.Plain
	}
	return op.ID, audit.Record(ctx, q, actor, audit.Event{Tenant: d.TenantID, Action: "deployment." + string(kind),
		TargetType: "deployment", TargetID: d.ID.String(), Diff: diff})
}

// queue records an operation bringing in and hands it to the workers, in the caller's
// transaction.
func (s *Service) queue(ctx context.Context, tx pgx.Tx, actor access.Principal, deploymentID uuid.UUID, kind Kind, in inputs) (dbgen.Operation, error) {
	return queueOperation(ctx, tx, s.jobs, deploymentID, kind, actor.UserID, in)
}

func (s *Service) inserter() (jobs.Queue, error) { return s.jobs, nil }
