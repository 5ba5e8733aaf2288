// Package deploy puts components into environments: deployments, the operations requested on
// them, and the worker that runs each operation as a checkpointed saga.
package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"nimbus/app/access"
	"nimbus/app/audit"
	"nimbus/app/component"
	"nimbus/app/cursor"
	"nimbus/app/governance"
	"nimbus/app/objstore"
	"nimbus/app/problem"
	"nimbus/app/pulumix"
	"nimbus/app/resolver"
	"nimbus/app/secrets"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// Deployment is a component version deployed into an environment.
type Deployment struct {
	ID            uuid.UUID      `json:"id"`
	TenantID      uuid.UUID      `json:"tenant_id"`
	EnvironmentID uuid.UUID      `json:"environment_id"`
	Environment   string         `json:"environment"`
	ComponentID   uuid.UUID      `json:"component_id"`
	Component     string         `json:"component"`
	Version       int            `json:"version"`
	Name          string         `json:"name"`
	Parameters    map[string]any `json:"parameters"`   // secret ones are left out
	SecretNames   []string       `json:"secret_names"` // the secret parameters set, never their values
	Outputs       map[string]any `json:"outputs"`
	Status        string         `json:"status"`
	CreatedAt     time.Time      `json:"created_at"`
	UpdatedAt     time.Time      `json:"updated_at"`
}

// Operation is one requested action on a deployment.
type Operation struct {
	ID           uuid.UUID      `json:"id"`
	DeploymentID uuid.UUID      `json:"deployment_id"`
	Deployment   string         `json:"deployment,omitempty"`
	Kind         string         `json:"kind"`
	Status       string         `json:"status"`
	Version      int            `json:"version,omitempty"` // the component version it brings, when it brings one
	Parameters   map[string]any `json:"parameters"`        // the plain parameters it applies
	RequestedBy  string         `json:"requested_by,omitempty"`
	Error        string         `json:"error,omitempty"`
	ExitCode     *int           `json:"exit_code,omitempty"`
	Changes      map[string]int `json:"changes"`
	// Position is how many operations on the same deployment come first, while it waits.
	Position     int        `json:"position,omitempty"`
	LogTruncated bool       `json:"log_truncated,omitempty"`
	CreatedAt    time.Time  `json:"created_at"`
	StartedAt    *time.Time `json:"started_at"`
	FinishedAt   *time.Time `json:"finished_at"`
}

// Step is one checkpointed step of an operation.
type Step struct {
	Name       string     `json:"name"`
	Status     string     `json:"status"`
	Error      string     `json:"error,omitempty"`
	Attempts   int        `json:"attempts"`
	StartedAt  *time.Time `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
}

// Resource is what an operation plans or does to one resource of the stack.
type Resource struct {
	URN         string           `json:"urn"`
	Type        string           `json:"type"`
	Name        string           `json:"name"`
	Op          string           `json:"op"`
	Status      string           `json:"status"`
	Changes     []pulumix.Change `json:"changes"`
	Diagnostics string           `json:"diagnostics,omitempty"`
	StartedAt   *time.Time       `json:"started_at"`
	FinishedAt  *time.Time       `json:"finished_at"`
}

// Detail is an operation with its steps and resources.
type Detail struct {
	Operation
	Steps     []Step     `json:"steps"`
	Resources []Resource `json:"resources"`
}

func operationFromRow(r dbgen.ListOperationsRow) Operation {
	o := Operation{ID: r.ID, DeploymentID: r.DeploymentID, Deployment: r.DeploymentName, Kind: r.Kind, Status: r.Status,
		RequestedBy: r.RequestedByEmail, Error: r.Error, LogTruncated: r.LogTruncated, CreatedAt: r.CreatedAt,
		StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, Changes: map[string]int{}, Parameters: map[string]any{}}
	if r.TargetVersion.Valid {
		o.Version = int(r.TargetVersion.Int32)
	}
	if r.ExitCode.Valid {
		code := int(r.ExitCode.Int32)
		o.ExitCode = &code
	}
	_ = json.Unmarshal(r.Changes, &o.Changes)
	_ = json.Unmarshal(r.Parameters, &o.Parameters)
	return o
}

func deploymentFromRow(r dbgen.GetDeploymentRow, secretNames []string) Deployment {
	d := Deployment{ID: r.ID, TenantID: r.TenantID, EnvironmentID: r.EnvironmentID, Environment: r.EnvironmentName,
		ComponentID: r.ComponentID, Component: r.ComponentName, Version: int(r.Version), Name: r.Name,
		Status: r.Status, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Parameters: map[string]any{}, Outputs: map[string]any{},
		SecretNames: secretNames}
	_ = json.Unmarshal(r.Parameters, &d.Parameters)
	_ = json.Unmarshal(r.Outputs, &d.Outputs)
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
	// templateComponent is the template component a provisioning deploys, set by Plan.
	templateComponent uuid.UUID
}

// Change is what an operation on an existing deployment brings: parameters laid over the
// current ones (null resets one to its default) and, for an upgrade or a preview of one, a
// version.
type Change struct {
	Parameters map[string]any `json:"parameters"`
	Version    int            `json:"version"`
	// Rotate names secret inputs filled by the secret provisioner that get a new value.
	Rotate []string `json:"rotate"`
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
	jobs    component.JobInserter
	runner  *pulumix.Runner // for state exports and restores; nil without a toolchain
	objects objstore.Store  // whole logs of long operations; may be nil
}

// NewService returns a Service; keys seals secret parameters, jobs queues the operations,
// runner reads and writes stack states, objects holds the whole logs of long operations.
func NewService(pool *pgxpool.Pool, keys *secrets.Keyring, jobs component.JobInserter, runner *pulumix.Runner, objects objstore.Store) *Service {
	return &Service{pool: pool, keys: keys, jobs: jobs, runner: runner, objects: objects}
}

var deploymentName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,39}$`)

// Deploy validates the request completely, records the deployment and its first operation, and
// queues the operation, all in one transaction.
func (s *Service) Deploy(ctx context.Context, actor access.Principal, req Request) (Deployment, Operation, error) {
	p, err := s.prepare(ctx, dbgen.New(s.pool), actor, req)
	if err != nil {
		return Deployment{}, Operation{}, err
	}
	var op dbgen.Operation
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
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

// Plan records a deployment of a template component in the caller's transaction, checked as
// Deploy checks it, without deploying it: an environment's provisioning deploys its mandatory
// components one after another with StartTx.
func (s *Service) Plan(ctx context.Context, tx pgx.Tx, actor access.Principal, req Request, templateComponent uuid.UUID) (uuid.UUID, error) {
	req.templateComponent = templateComponent
	p, err := s.prepare(ctx, dbgen.New(tx), actor, req)
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
	kind string
	in   inputs
	req  Request
}

// prepare checks a deploy request: the environment, the component and its version, the name,
// the parameters against the version's inputs, and the tenant's governance.
func (s *Service) prepare(ctx context.Context, q *dbgen.Queries, actor access.Principal, req Request) (prepared, error) {
	env, err := q.GetEnvironment(ctx, req.EnvironmentID)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && !actor.Can("environment:read", env.TenantID) {
		return prepared{}, problem.Invalid("environment_id", "exists", "no environment with this ID that you can see")
	}
	if err != nil {
		return prepared{}, err
	}
	if !actor.Can("component:deploy", env.TenantID) {
		return prepared{}, problem.ErrForbidden
	}
	if err := takes(env.Name, env.Status, req.templateComponent); err != nil {
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
	kind := "deploy"
	if req.PreviewOnly {
		kind = "preview"
	}
	return prepared{env: env, comp: comp, id: id, name: req.Name, kind: kind, in: in, req: req}, nil
}

// takes refuses a new deployment in an environment that is not active, except the mandatory
// components (templateComponent) of one being made.
func takes(env, status string, templateComponent uuid.UUID) error {
	if status == "active" || templateComponent != uuid.Nil && (status == "planned" || status == "provisioning") {
		return nil
	}
	return problem.Invalid("environment_id", "state", "%s is %s: deploy into an active environment", env, status)
}

// record writes a prepared deployment, audited, in the caller's transaction, and queues its
// first operation when queue is set.
func (s *Service) record(ctx context.Context, tx pgx.Tx, actor access.Principal, p prepared, queue bool) (dbgen.Operation, error) {
	q := dbgen.New(tx)
	// Checked again under the environment's share lock: it is not decommissioned meanwhile.
	status, err := q.ShareEnvironment(ctx, p.env.ID)
	if err != nil {
		return dbgen.Operation{}, err
	}
	if err := takes(p.env.Name, status, p.req.templateComponent); err != nil {
		return dbgen.Operation{}, err
	}
	// Under the tenant's lock, so that concurrent deploys cannot pass the limit together.
	if err := governance.CheckInstances(ctx, q, p.env.TenantID, p.comp.ID); err != nil {
		return dbgen.Operation{}, err
	}
	plainJSON, _ := json.Marshal(p.in.Plain)
	_, err = q.CreateDeployment(ctx, dbgen.CreateDeploymentParams{
		ID: p.id, TenantID: p.env.TenantID, EnvironmentID: p.env.ID, ComponentID: p.comp.ID, Version: p.in.Version, Name: p.name,
		Parameters: plainJSON, SecretParameters: p.in.Sealed, SecretKeyID: &p.in.KeyID, Project: p.comp.Name,
		Stack: "d-" + strings.ReplaceAll(p.id.String(), "-", ""), StateLocation: "",
		CreatedBy:           uuid.NullUUID{UUID: actor.UserID, Valid: actor.UserID != uuid.Nil},
		TemplateComponentID: nullID(p.req.templateComponent),
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
func (s *Service) StartTx(ctx context.Context, tx pgx.Tx, actor access.Principal, deploymentID uuid.UUID, kind string) (uuid.UUID, error) {
	q := dbgen.New(tx)
	if err := q.LockDeployment(ctx, deploymentID); err != nil {
		return uuid.Nil, err
	}
	d, err := q.GetDeployment(ctx, deploymentID)
	if err != nil {
		return uuid.Nil, err
	}
	if err := s.allowed(ctx, q, d, kind, Change{}); err != nil {
		return uuid.Nil, err
	}
	in := inputs{Plain: map[string]any{}}
	if kind == "deploy" {
		if in, err = s.target(ctx, q, d, kind, Change{}); err != nil {
			return uuid.Nil, err
		}
	}
	op, err := s.queue(ctx, tx, actor, d.ID, kind, in)
	if err != nil {
		return uuid.Nil, err
	}
	return op.ID, audit.Record(ctx, q, actor, audit.Event{Tenant: d.TenantID, Action: "deployment." + kind,
		TargetType: "deployment", TargetID: d.ID.String(), Diff: map[string]any{"name": d.Name, "kind": kind}})
}

// queue records an operation bringing in and hands it to the workers, in the caller's
// transaction.
func (s *Service) queue(ctx context.Context, tx pgx.Tx, actor access.Principal, deploymentID uuid.UUID, kind string, in inputs) (dbgen.Operation, error) {
	q := dbgen.New(tx)
	plain, _ := json.Marshal(in.Plain)
	params := dbgen.CreateOperationParams{DeploymentID: deploymentID, Kind: kind,
		RequestedBy: uuid.NullUUID{UUID: actor.UserID, Valid: actor.UserID != uuid.Nil}, Parameters: plain, Rotate: []string{}}
	if in.Rotate != nil {
		params.Rotate = in.Rotate
	}
	if in.Version != 0 {
		params.TargetVersion = pgtype.Int4{Int32: in.Version, Valid: true}
		params.SecretParameters, params.SecretKeyID = in.Sealed, &in.KeyID
	}
	op, err := q.CreateOperation(ctx, params)
	if err != nil {
		return op, err
	}
	_, err = s.jobs.InsertTx(ctx, tx, OperationArgs{OperationID: op.ID}, nil)
	return op, err
}

func (s *Service) inserter() (component.JobInserter, error) { return s.jobs, nil }

// Get returns a deployment the actor may see; any other is not found.
func (s *Service) Get(ctx context.Context, actor access.Principal, id uuid.UUID) (Deployment, error) {
	r, err := s.get(ctx, actor, id)
	if err != nil {
		return Deployment{}, err
	}
	secret, err := openSecrets(s.keys, r.ID, r.SecretKeyID, r.SecretParameters)
	if err != nil {
		return Deployment{}, err
	}
	return deploymentFromRow(r, slices.Sorted(maps.Keys(secret))), nil
}

func (s *Service) get(ctx context.Context, actor access.Principal, id uuid.UUID) (dbgen.GetDeploymentRow, error) {
	r, err := dbgen.New(s.pool).GetDeployment(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, problem.ErrNotFound
	}
	if err != nil {
		return r, fmt.Errorf("get deployment: %w", err)
	}
	if !actor.Can("environment:read", r.TenantID) {
		return r, problem.ErrNotFound
	}
	return r, nil
}

// Filter narrows a list of deployments or operations; zero fields do not.
type Filter struct {
	EnvironmentID uuid.UUID
	ComponentID   uuid.UUID
	DeploymentID  uuid.UUID
	Status        string
	Kind          string
	// Before is where the page starts: after the row it names, newest first.
	Before cursor.Cursor
	// Limit is the most rows a page holds; cursor.MaxRows when zero.
	Limit int
}

// maxRows is the size of the page f asks for.
func (f Filter) maxRows() int32 {
	if f.Limit < 1 || f.Limit > cursor.MaxRows {
		return cursor.MaxRows
	}
	return int32(f.Limit)
}

func nullID(id uuid.UUID) uuid.NullUUID { return uuid.NullUUID{UUID: id, Valid: id != uuid.Nil} }

func nullText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// List returns the newest deployments of the tenants the actor may see.
func (s *Service) List(ctx context.Context, actor access.Principal, f Filter) ([]Deployment, error) {
	tenants := append([]uuid.UUID{}, actor.TenantsWith("environment:read")...)
	rows, err := dbgen.New(s.pool).ListDeployments(ctx, dbgen.ListDeploymentsParams{AllTenants: actor.ProviderAdmin, TenantIds: tenants,
		EnvironmentID: nullID(f.EnvironmentID), ComponentID: nullID(f.ComponentID), Status: nullText(f.Status),
		Before: f.Before.Before(), BeforeID: f.Before.BeforeID(), MaxRows: f.maxRows()})
	if err != nil {
		return nil, fmt.Errorf("list deployments: %w", err)
	}
	out := make([]Deployment, len(rows))
	for i, r := range rows {
		out[i] = deploymentFromRow(dbgen.GetDeploymentRow(r), nil)
	}
	return out, nil
}

// Operation returns an operation of a deployment the actor may see, with its place in the
// queue while it waits.
func (s *Service) Operation(ctx context.Context, actor access.Principal, id uuid.UUID) (Operation, error) {
	q := dbgen.New(s.pool)
	r, err := q.OperationView(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return Operation{}, problem.ErrNotFound
	}
	if err != nil {
		return Operation{}, fmt.Errorf("get operation: %w", err)
	}
	if !actor.Can("environment:read", r.TenantID) {
		return Operation{}, problem.ErrNotFound
	}
	op := operationFromRow(dbgen.ListOperationsRow(r))
	if op.Status == "queued" {
		n, err := q.QueuePosition(ctx, dbgen.QueuePositionParams{DeploymentID: r.DeploymentID, CreatedAt: r.CreatedAt, ID: r.ID})
		if err != nil {
			return Operation{}, fmt.Errorf("queue position: %w", err)
		}
		op.Position = int(n)
	}
	return op, nil
}

// Detail returns an operation with its steps and what it did to each resource.
func (s *Service) Detail(ctx context.Context, actor access.Principal, id uuid.UUID) (Detail, error) {
	op, err := s.Operation(ctx, actor, id)
	if err != nil {
		return Detail{}, err
	}
	q := dbgen.New(s.pool)
	steps, err := q.ListOperationSteps(ctx, id)
	if err != nil {
		return Detail{}, fmt.Errorf("operation steps: %w", err)
	}
	resources, err := q.OperationResources(ctx, id)
	if err != nil {
		return Detail{}, fmt.Errorf("operation resources: %w", err)
	}
	d := Detail{Operation: op, Steps: make([]Step, len(steps)), Resources: make([]Resource, len(resources))}
	for i, st := range steps {
		d.Steps[i] = Step{Name: st.Name, Status: st.Status, Error: st.Error, Attempts: int(st.Attempts), StartedAt: st.StartedAt, FinishedAt: st.FinishedAt}
	}
	for i, r := range resources {
		d.Resources[i] = Resource{URN: r.Urn, Type: r.Type, Name: r.Name, Op: r.Op, Status: r.Status, Diagnostics: r.Diagnostics,
			StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, Changes: []pulumix.Change{}}
		_ = json.Unmarshal(r.Changes, &d.Resources[i].Changes)
	}
	return d, nil
}

// Operations lists operations the actor may see, newest first.
func (s *Service) Operations(ctx context.Context, actor access.Principal, f Filter) ([]Operation, error) {
	tenants := append([]uuid.UUID{}, actor.TenantsWith("environment:read")...)
	rows, err := dbgen.New(s.pool).ListOperations(ctx, dbgen.ListOperationsParams{AllTenants: actor.ProviderAdmin, TenantIds: tenants,
		DeploymentID: nullID(f.DeploymentID), Status: nullText(f.Status), Kind: nullText(f.Kind),
		Before: f.Before.Before(), BeforeID: f.Before.BeforeID(), MaxRows: f.maxRows()})
	if err != nil {
		return nil, fmt.Errorf("list operations: %w", err)
	}
	out := make([]Operation, len(rows))
	for i, r := range rows {
		out[i] = operationFromRow(r)
	}
	return out, nil
}

// LogLine is one line of an operation's log.
type LogLine struct {
	ID   int64     `json:"id"`
	At   time.Time `json:"at"`
	Line string    `json:"line"`
}

// Logs returns the operation's log lines after the given line id, at most a thousand.
func (s *Service) Logs(ctx context.Context, actor access.Principal, operationID uuid.UUID, after int64) ([]LogLine, error) {
	if _, err := s.Operation(ctx, actor, operationID); err != nil {
		return nil, err
	}
	return s.logs(ctx, operationID, after)
}

// logs reads log lines for a caller that has authorized the reader already.
func (s *Service) logs(ctx context.Context, operationID uuid.UUID, after int64) ([]LogLine, error) {
	rows, err := dbgen.New(s.pool).OperationLogs(ctx, dbgen.OperationLogsParams{OperationID: operationID, ID: after})
	if err != nil {
		return nil, fmt.Errorf("operation logs: %w", err)
	}
	out := make([]LogLine, len(rows))
	for i, r := range rows {
		out[i] = LogLine{ID: r.ID, At: r.CreatedAt, Line: r.Line}
	}
	return out, nil
}

// Cancel stops an operation: a queued one never starts; a running one is interrupted at its
// next heartbeat and undoes what it did; one awaiting approval ends at once, its request with
// it. Those who may deploy in the tenant may cancel.
func (s *Service) Cancel(ctx context.Context, actor access.Principal, operationID uuid.UUID) (Operation, error) {
	op, err := s.Operation(ctx, actor, operationID)
	if err != nil {
		return Operation{}, err
	}
	d, err := s.get(ctx, actor, op.DeploymentID)
	if err != nil {
		return Operation{}, err
	}
	if !actor.Can("component:deploy", d.TenantID) {
		return Operation{}, problem.ErrForbidden
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// An operation that ends here, not in a worker, lets its environment go on.
		if err := advance(ctx, tx, s.inserter, op.DeploymentID); err != nil {
			return err
		}
		q := dbgen.New(tx)
		n, err := q.CancelQueuedOperation(ctx, operationID)
		if err != nil {
			return err
		}
		if n == 0 {
			if n, err = q.RequestOperationCancel(ctx, operationID); err != nil {
				return err
			}
		}
		if n == 0 && op.Status == "awaiting_approval" {
			if n, err = s.cancelWaiting(ctx, tx, actor, operationID); err != nil {
				return err
			}
		}
		if n == 0 {
			return problem.Invalid("operation", "state", "the operation has already ended (%s)", op.Status)
		}
		return audit.Record(ctx, q, actor, audit.Event{Tenant: d.TenantID, Action: "operation.cancel", TargetType: "operation",
			TargetID: operationID.String(), Diff: map[string]any{"deployment": d.Name, "kind": op.Kind}})
	})
	if err != nil {
		return Operation{}, fmt.Errorf("cancel operation: %w", err)
	}
	return s.Operation(ctx, actor, operationID)
}

// cancelWaiting ends an operation that awaits approval, and its request with it; it reports 0
// when the operation moved on meanwhile.
func (s *Service) cancelWaiting(ctx context.Context, tx pgx.Tx, actor access.Principal, id uuid.UUID) (int64, error) {
	err := EndWaiting(ctx, tx, s.jobs, id, "cancelled", fmt.Sprintf("cancelled by %s while it awaited approval", actor.Email))
	if errors.Is(err, ErrNotWaiting) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return 1, dbgen.New(tx).CancelApprovalRequestOf(ctx, id)
}

// FullLog returns an operation's whole log as text: from the object store when it outgrew the
// database, else from the database.
func (s *Service) FullLog(ctx context.Context, actor access.Principal, operationID uuid.UUID) (io.ReadCloser, error) {
	op, err := s.Operation(ctx, actor, operationID)
	if err != nil {
		return nil, err
	}
	if op.LogTruncated && s.objects != nil {
		r, err := s.objects.Get(ctx, logKey(operationID))
		if err == nil {
			return r, nil
		}
		if !errors.Is(err, objstore.ErrNotFound) {
			return nil, fmt.Errorf("whole log: %w", err)
		}
		// Not stored (the operation has not ended, or its server died): what the database has.
	}
	text, err := storedLog(ctx, dbgen.New(s.pool), operationID)
	if err != nil {
		return nil, fmt.Errorf("operation log: %w", err)
	}
	return io.NopCloser(strings.NewReader(text)), nil
}

// storedLog is every line of an operation's log the database holds, one per line.
func storedLog(ctx context.Context, q *dbgen.Queries, operationID uuid.UUID) (string, error) {
	var b strings.Builder
	for after := int64(0); ; {
		rows, err := q.OperationLogs(ctx, dbgen.OperationLogsParams{OperationID: operationID, ID: after})
		if err != nil {
			return "", err
		}
		if len(rows) == 0 {
			return b.String(), nil
		}
		for _, r := range rows {
			b.WriteString(r.Line)
			b.WriteByte('\n')
		}
		after = rows[len(rows)-1].ID
	}
}
