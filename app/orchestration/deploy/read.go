package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/domain/policy"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/cursor"
	"nimbus/app/kernel/objstore"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/pulumix"
	"nimbus/db"
	"nimbus/db/dbgen"
)

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

// Peek returns a deployment the actor may see as Get does, but without the names of its secret
// parameters: it opens no secret, for a view that reads the deployment again whenever it
// changes (an operation's page and its stream).
func (s *Service) Peek(ctx context.Context, actor access.Principal, id uuid.UUID) (Deployment, error) {
	r, err := s.get(ctx, actor, id)
	if err != nil {
		return Deployment{}, err
	}
	return deploymentFromRow(r, nil), nil
}

// Destroyers are the people who may destroy a deployment the actor may see, by email (at most
// five): its tenant's admins. Provider admins may too, and are not listed.
func (s *Service) Destroyers(ctx context.Context, actor access.Principal, id uuid.UUID) ([]string, error) {
	r, err := s.get(ctx, actor, id)
	if err != nil {
		return nil, err
	}
	return db.Queries(s.pool).TenantAdminEmails(ctx, r.TenantID)
}

func (s *Service) get(ctx context.Context, actor access.Principal, id uuid.UUID) (dbgen.GetDeploymentRow, error) {
	r, err := db.Queries(s.pool).GetDeployment(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, problem.ErrNotFound
	}
	if err != nil {
		return r, fmt.Errorf("get deployment: %w", err)
	}
	if !actor.Can(access.EnvironmentRead, r.TenantID) {
		return r, problem.ErrNotFound
	}
	return r, nil
}

// lockedDeployment reads the deployment and locks it for the caller's transaction, which
// serialises the requests on one deployment (see LockDeployment).
func lockedDeployment(ctx context.Context, q *dbgen.Queries, id uuid.UUID) (dbgen.GetDeploymentRow, error) {
	d, err := q.LockedDeployment(ctx, id)
	return dbgen.GetDeploymentRow(d), err
}

// Filter narrows a list of deployments or operations; zero fields do not.
type Filter struct {
	EnvironmentID uuid.UUID
	ComponentID   uuid.UUID
	DeploymentID  uuid.UUID
	Status        string
	Kind          string
	// Search keeps the deployments whose name contains it, in any case.
	Search string
	// Sort orders deployments by a column of their list (name, environment, component, status,
	// tenant, created) or a deployment's operations by one of its history (kind, status, by,
	// created), Descending reversed; empty is newest first.
	Sort       string
	Descending bool
	// Before is where the page starts: after the row it names, in the list's order.
	Before cursor.Cursor
	// Limit is the most rows a page holds; cursor.DefaultRows when zero.
	Limit int
}

// DeploymentPlace is where d stands in the list f reads, for the page after it: sorted by a
// column, with d's value there as this page shows it (the time of creation is the cursor's own).
func (f Filter) DeploymentPlace(d Deployment) cursor.Cursor {
	return f.place(d.CreatedAt, d.ID, map[string]string{"name": d.Name, "environment": d.Environment,
		"component": d.Component, "status": string(d.Status), "tenant": d.Tenant})
}

// OperationPlace is where o stands in the list f reads, as DeploymentPlace says.
func (f Filter) OperationPlace(o Operation) cursor.Cursor {
	return f.place(o.CreatedAt, o.ID, map[string]string{"kind": string(o.Kind), "status": string(o.Status), "by": o.RequestedBy})
}

// place is a row's cursor in the list f reads: when f sorts by a column, it carries the row's
// value there, picked from values (by column).
func (f Filter) place(at time.Time, id uuid.UUID, values map[string]string) cursor.Cursor {
	c := cursor.Cursor{At: at, ID: id}
	if f.Sort != "" {
		key := values[f.Sort]
		c.Key = &key
	}
	return c
}

// refuseUnkeyedCursor refuses a cursor made for a list read newest first on a list sorted by a column: it
// does not say where in the column's order the page starts.
func (f Filter) refuseUnkeyedCursor() error {
	if !f.Before.IsZero() && f.Before.Key == nil {
		return problem.Invalid("before", "cursor", "must be the cursor of a page of this list, as its next link gives it")
	}
	return nil
}

// maxRows is the size of the page f asks for.
func (f Filter) maxRows() int32 {
	return int32(cursor.Rows(f.Limit))
}

func nullID(id uuid.UUID) uuid.NullUUID { return uuid.NullUUID{UUID: id, Valid: id != uuid.Nil} }

func nullText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// List returns the deployments of the tenants the actor may see, newest first or in the order
// f.Sort names.
func (s *Service) List(ctx context.Context, actor access.Principal, f Filter) ([]Deployment, error) {
	tenants := append([]uuid.UUID{}, actor.TenantsWith(access.EnvironmentRead)...)
	q := db.Queries(s.pool)
	var rows []dbgen.GetDeploymentRow
	if f.Sort == "" {
		found, err := q.ListDeployments(ctx, dbgen.ListDeploymentsParams{AllTenants: actor.ProviderAdmin, TenantIds: tenants,
			EnvironmentID: nullID(f.EnvironmentID), ComponentID: nullID(f.ComponentID), Status: nullText(f.Status),
			Search: nullText(f.Search), Before: f.Before.Before(), BeforeID: f.Before.BeforeID(), MaxRows: f.maxRows()})
		if err != nil {
			return nil, fmt.Errorf("list deployments: %w", err)
		}
		for _, r := range found {
			rows = append(rows, dbgen.GetDeploymentRow(r))
		}
	} else {
		if err := f.refuseUnkeyedCursor(); err != nil {
			return nil, err
		}
		found, err := q.ListDeploymentsBy(ctx, dbgen.ListDeploymentsByParams{SortBy: f.Sort, Descending: f.Descending,
			AllTenants: actor.ProviderAdmin, TenantIds: tenants,
			EnvironmentID: nullID(f.EnvironmentID), ComponentID: nullID(f.ComponentID), Status: nullText(f.Status),
			Search: nullText(f.Search), Before: f.Before.Before(), BeforeID: f.Before.BeforeID(), AfterKey: f.Before.Key, MaxRows: f.maxRows()})
		if err != nil {
			return nil, fmt.Errorf("list deployments: %w", err)
		}
		for _, r := range found {
			rows = append(rows, dbgen.GetDeploymentRow(r))
		}
	}
	out := make([]Deployment, len(rows))
	for i, r := range rows {
		out[i] = deploymentFromRow(r, nil)
	}
	return out, nil
}

// Operation returns an operation of a deployment the actor may see, with what it waits for
// while it waits: the operations on its deployment before it, or its tenant's running ones.
func (s *Service) Operation(ctx context.Context, actor access.Principal, id uuid.UUID) (Operation, error) {
	q := db.Queries(s.pool)
	r, err := q.OperationView(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return Operation{}, problem.ErrNotFound
	}
	if err != nil {
		return Operation{}, fmt.Errorf("get operation: %w", err)
	}
	if !actor.Can(access.EnvironmentRead, r.TenantID) {
		return Operation{}, problem.ErrNotFound
	}
	op := operationFromRow(dbgen.ListOperationsRow(r))
	if op.Status == Queued {
		n, err := q.QueuePosition(ctx, dbgen.QueuePositionParams{DeploymentID: r.DeploymentID, CreatedAt: r.CreatedAt, ID: r.ID})
		if err != nil {
			return Operation{}, fmt.Errorf("queue position: %w", err)
		}
		op.Position = int(n)
	}
	if op.Status == Queued && op.Position == 0 {
		n, err := q.CountRunningOperations(ctx, dbgen.CountRunningOperationsParams{TenantID: r.TenantID, ID: r.ID})
		if err != nil {
			return Operation{}, fmt.Errorf("the tenant's running operations: %w", err)
		}
		if n >= int64(s.places.Limit) {
			op.TenantRunning = int(n)
		}
	}
	return op, nil
}

// Detail returns an operation with its steps and what it did to each resource.
func (s *Service) Detail(ctx context.Context, actor access.Principal, id uuid.UUID) (Detail, error) {
	op, err := s.Operation(ctx, actor, id)
	if err != nil {
		return Detail{}, err
	}
	q := db.Queries(s.pool)
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
		d.Resources[i] = Resource{URN: r.Urn, Type: r.Type, Name: r.Name, Op: r.Op, Status: pulumix.ResourceStatus(r.Status), Diagnostics: r.Diagnostics,
			UndoOp: r.UndoOp, UndoStatus: r.UndoStatus,
			StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, Changes: []pulumix.Change{}}
		_ = json.Unmarshal(r.Changes, &d.Resources[i].Changes)
	}
	wait, err := q.OperationWait(ctx, id)
	if err != nil {
		return Detail{}, fmt.Errorf("operation wait: %w", err)
	}
	d.Timing = timingOf(op, steps, wait.ApprovalAskedAt, wait.ApprovalEndedAt, time.Now())
	if d.Policy, err = policy.OfOperation(ctx, q, id); err != nil {
		return Detail{}, fmt.Errorf("operation policy check: %w", err)
	}
	return d, nil
}

// Operations lists operations the actor may see, newest first; a deployment's history also in
// the order f.Sort names (kind, status, by, created).
func (s *Service) Operations(ctx context.Context, actor access.Principal, f Filter) ([]Operation, error) {
	if f.Sort != "" && f.DeploymentID != uuid.Nil {
		return s.history(ctx, actor, f)
	}
	tenants := append([]uuid.UUID{}, actor.TenantsWith(access.EnvironmentRead)...)
	rows, err := db.Queries(s.pool).ListOperations(ctx, dbgen.ListOperationsParams{AllTenants: actor.ProviderAdmin, TenantIds: tenants,
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

// history is a deployment's operations sorted by a column.
func (s *Service) history(ctx context.Context, actor access.Principal, f Filter) ([]Operation, error) {
	if _, err := s.get(ctx, actor, f.DeploymentID); err != nil {
		return nil, err
	}
	if err := f.refuseUnkeyedCursor(); err != nil {
		return nil, err
	}
	rows, err := db.Queries(s.pool).ListDeploymentOperationsBy(ctx, dbgen.ListDeploymentOperationsByParams{SortBy: f.Sort, Descending: f.Descending,
		DeploymentID: f.DeploymentID, Before: f.Before.Before(), BeforeID: f.Before.BeforeID(), AfterKey: f.Before.Key, MaxRows: f.maxRows()})
	if err != nil {
		return nil, fmt.Errorf("list operations: %w", err)
	}
	out := make([]Operation, len(rows))
	for i, r := range rows {
		out[i] = operationFromRow(dbgen.ListOperationsRow(r))
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

// LogOf returns the log lines of an operation the caller has read with Detail, after the line
// with id after: the reader was authorized by that read.
func (s *Service) LogOf(ctx context.Context, d Detail, after int64) ([]LogLine, error) {
	return s.logs(ctx, d.ID, after)
}

// logs reads log lines for a caller that has authorized the reader already.
func (s *Service) logs(ctx context.Context, operationID uuid.UUID, after int64) ([]LogLine, error) {
	rows, err := db.Queries(s.pool).OperationLogs(ctx, dbgen.OperationLogsParams{OperationID: operationID, ID: after})
	if err != nil {
		return nil, fmt.Errorf("operation logs: %w", err)
	}
	out := make([]LogLine, len(rows))
	for i, r := range rows {
		out[i] = LogLine{ID: r.ID, At: r.CreatedAt, Line: r.Line}
	}
	return out, nil
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
	text, err := storedLog(ctx, db.Queries(s.pool), operationID)
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

// Choice is an environment or a component the deployments list offers to filter by.
type Choice struct {
	ID   uuid.UUID
	Name string
	// Tenant is an environment's tenant: several tenants name theirs alike (dev, prod).
	Tenant string
}

// Choice kinds: what a deployments list filter picks.
const (
	EnvironmentChoice = "environment"
	ComponentChoice   = "component"
)

// ChoicesShown is how many choices a filter offers at once; a search narrows them.
const ChoicesShown = 25

// FilterChoices are the environments or components (kind) of the deployments the actor may see
// that the deployments list offers to filter by: the first ChoicesShown by name whose name holds
// search (or, for an environment, whose tenant's does), and chosen, when the actor may see it,
// whatever its name. Offering every one would list thousands.
func (s *Service) FilterChoices(ctx context.Context, actor access.Principal, kind, search string, chosen uuid.UUID) ([]Choice, error) {
	tenants := append([]uuid.UUID{}, actor.TenantsWith(access.EnvironmentRead)...)
	var find *string
	if search = strings.TrimSpace(search); search != "" {
		find = &search
	}
	pick := uuid.NullUUID{UUID: chosen, Valid: chosen != uuid.Nil}
	q := db.Queries(s.pool)
	var out []Choice
	switch kind {
	case EnvironmentChoice:
		rows, err := q.DeploymentEnvironmentChoices(ctx, dbgen.DeploymentEnvironmentChoicesParams{AllTenants: actor.ProviderAdmin,
			TenantIds: tenants, Search: find, Chosen: pick, MaxRows: ChoicesShown})
		if err != nil {
			return nil, fmt.Errorf("list environments to filter by: %w", err)
		}
		for _, r := range rows {
			out = append(out, Choice{ID: r.ID, Name: r.Name, Tenant: r.TenantName})
		}
	case ComponentChoice:
		rows, err := q.DeploymentComponentChoices(ctx, dbgen.DeploymentComponentChoicesParams{AllTenants: actor.ProviderAdmin,
			TenantIds: tenants, Search: find, Chosen: pick, MaxRows: ChoicesShown})
		if err != nil {
			return nil, fmt.Errorf("list components to filter by: %w", err)
		}
		for _, r := range rows {
			out = append(out, Choice{ID: r.ID, Name: r.Name})
		}
	default:
		return nil, problem.Invalid("kind", "enum", "must be %s or %s", EnvironmentChoice, ComponentChoice)
	}
	return out, nil
}
