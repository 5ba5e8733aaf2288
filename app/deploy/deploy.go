// Package deploy puts components into environments: deployments, the operations requested on
// them, and the worker that runs each operation as a checkpointed saga.
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

	"nimbus/app/access"
	"nimbus/app/audit"
	"nimbus/app/component"
	"nimbus/app/problem"
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
	Parameters    map[string]any `json:"parameters"` // secret ones are left out
	Outputs       map[string]any `json:"outputs"`
	Status        string         `json:"status"`
	CreatedAt     time.Time      `json:"created_at"`
}

// Operation is one requested action on a deployment.
type Operation struct {
	ID           uuid.UUID      `json:"id"`
	DeploymentID uuid.UUID      `json:"deployment_id"`
	Kind         string         `json:"kind"`
	Status       string         `json:"status"`
	Error        string         `json:"error,omitempty"`
	Changes      map[string]int `json:"changes"`
	CreatedAt    time.Time      `json:"created_at"`
	StartedAt    *time.Time     `json:"started_at"`
	FinishedAt   *time.Time     `json:"finished_at"`
}

func operationFromRow(r dbgen.Operation) Operation {
	o := Operation{ID: r.ID, DeploymentID: r.DeploymentID, Kind: r.Kind, Status: r.Status, Error: r.Error,
		CreatedAt: r.CreatedAt, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, Changes: map[string]int{}}
	_ = json.Unmarshal(r.Changes, &o.Changes)
	return o
}

func deploymentFromRow(r dbgen.GetDeploymentRow) Deployment {
	d := Deployment{ID: r.ID, TenantID: r.TenantID, EnvironmentID: r.EnvironmentID, Environment: r.EnvironmentName,
		ComponentID: r.ComponentID, Component: r.ComponentName, Version: int(r.Version), Name: r.Name,
		Status: r.Status, CreatedAt: r.CreatedAt, Parameters: map[string]any{}, Outputs: map[string]any{}}
	_ = json.Unmarshal(r.Parameters, &d.Parameters)
	_ = json.Unmarshal(r.Outputs, &d.Outputs)
	return d
}

// Request asks for a component to be deployed.
type Request struct {
	ComponentID   uuid.UUID      `json:"component_id"`
	Version       int            `json:"version"` // 0: the latest published
	EnvironmentID uuid.UUID      `json:"environment_id"`
	Name          string         `json:"name"`
	Parameters    map[string]any `json:"parameters"`
}

// OperationArgs asks a worker to run an operation.
type OperationArgs struct {
	OperationID uuid.UUID `json:"operation_id"`
}

// Kind names the job in River.
func (OperationArgs) Kind() string { return "operation" }

// Service requests operations on behalf of a principal.
type Service struct {
	pool *pgxpool.Pool
	keys *secrets.Keyring
	jobs component.JobInserter
}

// NewService returns a Service; keys seals secret parameters, jobs queues the operations.
func NewService(pool *pgxpool.Pool, keys *secrets.Keyring, jobs component.JobInserter) *Service {
	return &Service{pool: pool, keys: keys, jobs: jobs}
}

var deploymentName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,39}$`)

// Deploy validates the request completely, records the deployment and its first operation, and
// queues the operation, all in one transaction.
func (s *Service) Deploy(ctx context.Context, actor access.Principal, req Request) (Deployment, Operation, error) {
	q := dbgen.New(s.pool)
	env, err := q.GetEnvironment(ctx, req.EnvironmentID)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && !actor.Can("environment:read", env.TenantID) {
		return Deployment{}, Operation{}, problem.Invalid("environment_id", "exists", "no environment with this ID that you can see")
	}
	if err != nil {
		return Deployment{}, Operation{}, err
	}
	if !actor.Can("component:deploy", env.TenantID) {
		return Deployment{}, Operation{}, problem.ErrForbidden
	}
	comp, err := q.GetComponent(ctx, req.ComponentID)
	visible := err == nil && (!comp.TenantID.Valid || comp.TenantID.UUID == env.TenantID)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && !visible {
		return Deployment{}, Operation{}, problem.Invalid("component_id", "exists", "no component with this ID that this environment's tenant can use")
	}
	if err != nil {
		return Deployment{}, Operation{}, err
	}
	version := int32(req.Version)
	if version == 0 {
		version = comp.LatestVersion
	}
	ver, err := q.GetComponentVersion(ctx, dbgen.GetComponentVersionParams{ComponentID: comp.ID, Version: version})
	switch {
	case errors.Is(err, pgx.ErrNoRows) || version == 0:
		return Deployment{}, Operation{}, problem.Invalid("version", "exists", "%s has no published version %d", comp.Name, version)
	case err != nil:
		return Deployment{}, Operation{}, err
	case ver.ArchivedAt != nil:
		return Deployment{}, Operation{}, problem.Invalid("version", "archived", "version %d of %s is archived; choose another", version, comp.Name)
	}
	v := &problem.ValidationError{}
	req.Name = strings.TrimSpace(req.Name)
	if !deploymentName.MatchString(req.Name) {
		v.Add("name", "pattern", "must be 1–40 lower-case letters, digits and -, starting with a letter")
	}
	schema := component.ParseSchema("input_schema", ver.InputSchema, v)
	params := map[string]any{}
	if schema != nil {
		params = schema.Apply("parameters", req.Parameters, v)
	}
	if err := v.Err(); err != nil {
		return Deployment{}, Operation{}, err
	}
	plain, secret := map[string]any{}, map[string]any{}
	for k, val := range params {
		if schema.Secret(k) {
			secret[k] = val
		} else {
			plain[k] = val
		}
	}
	id := uuid.New()
	plainJSON, _ := json.Marshal(plain)
	var sealed []byte
	keyID := s.keys.CurrentKeyID()
	if len(secret) > 0 {
		raw, _ := json.Marshal(secret)
		// Bound to the deployment, so a sealed value cannot be moved to another.
		if keyID, sealed, err = s.keys.Seal(raw, id[:]); err != nil {
			return Deployment{}, Operation{}, fmt.Errorf("seal secret parameters: %w", err)
		}
	}
	var op dbgen.Operation
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := dbgen.New(tx)
		_, err := q.CreateDeployment(ctx, dbgen.CreateDeploymentParams{
			ID: id, TenantID: env.TenantID, EnvironmentID: env.ID, ComponentID: comp.ID, Version: version, Name: req.Name,
			Parameters: plainJSON, SecretParameters: sealed, SecretKeyID: &keyID, Project: comp.Name,
			Stack: "d-" + strings.ReplaceAll(id.String(), "-", ""), StateLocation: "",
			CreatedBy: uuid.NullUUID{UUID: actor.UserID, Valid: actor.UserID != uuid.Nil},
		})
		if db.IsUniqueViolation(err) {
			return problem.Invalid("name", "unique", "%s already has a deployment named %q", env.Name, req.Name)
		}
		if err != nil {
			return err
		}
		op, err = q.CreateOperation(ctx, dbgen.CreateOperationParams{DeploymentID: id, Kind: "deploy",
			RequestedBy: uuid.NullUUID{UUID: actor.UserID, Valid: actor.UserID != uuid.Nil}, Parameters: plainJSON})
		if err != nil {
			return err
		}
		if _, err := s.jobs.InsertTx(ctx, tx, OperationArgs{OperationID: op.ID}, nil); err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{Tenant: env.TenantID, Action: "deployment.create", TargetType: "deployment",
			TargetID: id.String(), Diff: map[string]any{"name": req.Name, "component": comp.Name, "version": version, "parameters": plain}})
	})
	if err != nil {
		return Deployment{}, Operation{}, fmt.Errorf("deploy: %w", err)
	}
	d, err := s.Get(ctx, actor, id)
	return d, operationFromRow(op), err
}

// Destroy queues the destruction of a deployment; tenant admins may.
func (s *Service) Destroy(ctx context.Context, actor access.Principal, id uuid.UUID) (Operation, error) {
	d, err := s.Get(ctx, actor, id)
	if err != nil {
		return Operation{}, err
	}
	if !actor.Can("component:destroy", d.TenantID) {
		return Operation{}, problem.ErrForbidden
	}
	if d.Status == "destroyed" {
		return Operation{}, problem.Invalid("deployment", "state", "%s is already destroyed", d.Name)
	}
	var op dbgen.Operation
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := dbgen.New(tx)
		var err error
		op, err = q.CreateOperation(ctx, dbgen.CreateOperationParams{DeploymentID: id, Kind: "destroy",
			RequestedBy: uuid.NullUUID{UUID: actor.UserID, Valid: actor.UserID != uuid.Nil}, Parameters: []byte("{}")})
		if err != nil {
			return err
		}
		if _, err := s.jobs.InsertTx(ctx, tx, OperationArgs{OperationID: op.ID}, nil); err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{Tenant: d.TenantID, Action: "deployment.destroy", TargetType: "deployment",
			TargetID: id.String(), Diff: map[string]any{"name": d.Name}})
	})
	if err != nil {
		return Operation{}, fmt.Errorf("destroy: %w", err)
	}
	return operationFromRow(op), nil
}

// Get returns a deployment the actor may see; any other is not found.
func (s *Service) Get(ctx context.Context, actor access.Principal, id uuid.UUID) (Deployment, error) {
	r, err := dbgen.New(s.pool).GetDeployment(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return Deployment{}, problem.ErrNotFound
	}
	if err != nil {
		return Deployment{}, fmt.Errorf("get deployment: %w", err)
	}
	if !actor.Can("environment:read", r.TenantID) {
		return Deployment{}, problem.ErrNotFound
	}
	return deploymentFromRow(r), nil
}

// List returns the newest deployments of the tenants the actor may see.
func (s *Service) List(ctx context.Context, actor access.Principal) ([]Deployment, error) {
	tenants := append([]uuid.UUID{}, actor.TenantsWith("environment:read")...)
	rows, err := dbgen.New(s.pool).ListDeployments(ctx, dbgen.ListDeploymentsParams{AllTenants: actor.ProviderAdmin, TenantIds: tenants})
	if err != nil {
		return nil, fmt.Errorf("list deployments: %w", err)
	}
	out := make([]Deployment, len(rows))
	for i, r := range rows {
		out[i] = deploymentFromRow(dbgen.GetDeploymentRow(r))
	}
	return out, nil
}

// Operation returns an operation of a deployment the actor may see.
func (s *Service) Operation(ctx context.Context, actor access.Principal, id uuid.UUID) (Operation, error) {
	r, err := dbgen.New(s.pool).GetOperation(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return Operation{}, problem.ErrNotFound
	}
	if err != nil {
		return Operation{}, fmt.Errorf("get operation: %w", err)
	}
	if _, err := s.Get(ctx, actor, r.DeploymentID); err != nil {
		return Operation{}, err
	}
	return operationFromRow(r), nil
}

// Operations lists a deployment's operations, newest first.
func (s *Service) Operations(ctx context.Context, actor access.Principal, deploymentID uuid.UUID) ([]Operation, error) {
	if _, err := s.Get(ctx, actor, deploymentID); err != nil {
		return nil, err
	}
	rows, err := dbgen.New(s.pool).ListOperations(ctx, deploymentID)
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
// next heartbeat and undoes what it did. Those who may deploy in the tenant may cancel.
func (s *Service) Cancel(ctx context.Context, actor access.Principal, operationID uuid.UUID) (Operation, error) {
	op, err := s.Operation(ctx, actor, operationID)
	if err != nil {
		return Operation{}, err
	}
	d, err := s.Get(ctx, actor, op.DeploymentID)
	if err != nil {
		return Operation{}, err
	}
	if !actor.Can("component:deploy", d.TenantID) {
		return Operation{}, problem.ErrForbidden
	}
	err = db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		n, err := q.CancelQueuedOperation(ctx, operationID)
		if err != nil {
			return err
		}
		if n == 0 {
			if n, err = q.RequestOperationCancel(ctx, operationID); err != nil {
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
