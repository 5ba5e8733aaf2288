package instance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/domain/stack"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/graph"
	"nimbus/app/kernel/lifecycle"
	"nimbus/app/kernel/problem"
	"nimbus/app/orchestration/deploy"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// Get returns an instance the actor may see, with its slots.
func (s *Service) Get(ctx context.Context, actor access.Principal, id uuid.UUID) (Instance, error) {
	q := db.Queries(s.pool)
	r, err := q.GetStackInstance(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && !actor.Can(access.EnvironmentRead, r.TenantID) {
		return Instance{}, problem.ErrNotFound
	}
	if err != nil {
		return Instance{}, err
	}
	inst := fromRow(r)
	if inst.Status == lifecycle.InstanceFailed {
		if inst.Retry, err = retries(ctx, q, id); err != nil {
			return inst, err
		}
	}
	def, err := stack.LoadVersion(ctx, q, r.StackID, int(r.Version))
	if err != nil {
		return inst, err
	}
	rows, err := q.InstanceDeployments(ctx, uuid.NullUUID{UUID: id, Valid: true})
	if err != nil {
		return inst, err
	}
	seen, err := previews(ctx, q, id)
	if err != nil {
		return inst, err
	}
	for _, sl := range def.Slots {
		out := Slot{Name: sl.Name, ComponentID: sl.Component, Version: sl.Version, After: sl.Upstream(), Status: string(deploy.Pending), Outputs: map[string]any{}}
		if out.After == nil {
			out.After = []string{}
		}
		for _, d := range rows {
			if d.Slot != nil && *d.Slot == sl.Name {
				out.DeploymentID, out.Deployment, out.Status = &d.ID, d.Name, d.Status
				_ = json.Unmarshal(d.Outputs, &out.Outputs)
				if p, ok := seen[sl.Name]; ok && p.deployment == d.ID {
					out.Preview = &p
				}
				break
			}
		}
		inst.Slots = append(inst.Slots, out)
	}
	return inst, nil
}

// Filter narrows a list of instances.
type Filter struct {
	EnvironmentID uuid.UUID
	StackID       uuid.UUID
	Status        string
	Limit         int
}

// List returns the instances of the tenants the actor may see, newest first.
func (s *Service) List(ctx context.Context, actor access.Principal, f Filter) ([]Instance, error) {
	if f.Limit <= 0 || f.Limit > 200 {
		f.Limit = 100
	}
	p := dbgen.ListStackInstancesParams{Limit: int32(f.Limit), AllTenants: actor.ProviderAdmin,
		TenantIds: actor.TenantsWith(access.EnvironmentRead)}
	if f.EnvironmentID != uuid.Nil {
		p.EnvironmentID = uuid.NullUUID{UUID: f.EnvironmentID, Valid: true}
	}
	if f.StackID != uuid.Nil {
		p.StackID = uuid.NullUUID{UUID: f.StackID, Valid: true}
	}
	if f.Status != "" {
		p.Status = &f.Status
	}
	rows, err := db.Queries(s.pool).ListStackInstances(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("list stack instances: %w", err)
	}
	out := make([]Instance, len(rows))
	for i, r := range rows {
		out[i] = fromRow(dbgen.GetStackInstanceRow(r))
	}
	return out, nil
}

// Run is one run of an instance, as people and the API see it.
type Run struct {
	ID          uuid.UUID  `json:"id"`
	Kind        string     `json:"kind"`
	Status      string     `json:"status"`
	Trigger     string     `json:"trigger,omitempty"`
	Operation   string     `json:"operation,omitempty"`
	Source      string     `json:"source"`
	RequestedBy string     `json:"requested_by"`
	Error       string     `json:"error"`
	CreatedAt   time.Time  `json:"created_at"`
	StartedAt   *time.Time `json:"started_at"`
	FinishedAt  *time.Time `json:"finished_at"`
	Steps       []RunStep  `json:"steps"`
}

// RunStep is one step of a run: what it did to which slot, and the operation that did it.
type RunStep struct {
	Name        string     `json:"name"`
	Slot        string     `json:"slot"`
	Action      string     `json:"action"`
	After       []string   `json:"after"`
	OperationID *uuid.UUID `json:"operation_id"`
	Status      string     `json:"status"` // the operation's; "waiting" before it starts, "skipped" with nothing to do
}

// Runs returns an instance's runs, newest first, with their steps.
func (s *Service) Runs(ctx context.Context, actor access.Principal, id uuid.UUID) ([]Run, error) {
	if _, err := s.Get(ctx, actor, id); err != nil {
		return nil, err
	}
	q := db.Queries(s.pool)
	rows, err := q.StackRuns(ctx, dbgen.StackRunsParams{InstanceID: id, Limit: 50})
	if err != nil {
		return nil, err
	}
	out := make([]Run, len(rows))
	for i, r := range rows {
		if out[i], err = runView(ctx, q, r); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// runView is a run as people and the API see it, with its steps.
func runView(ctx context.Context, q *dbgen.Queries, r dbgen.StackRunsRow) (Run, error) {
	run := Run{ID: r.ID, Kind: r.Kind, Status: r.Status, Trigger: r.Trigger, Operation: r.Operation, Source: r.Source,
		RequestedBy: deref(r.RequestedByEmail), Error: r.Error, CreatedAt: r.CreatedAt, StartedAt: r.StartedAt,
		FinishedAt: r.FinishedAt, Steps: []RunStep{}}
	steps, err := q.StackRunSteps(ctx, r.ID)
	if err != nil {
		return run, err
	}
	for _, st := range steps {
		step := RunStep{Name: st.Name, Slot: st.Slot, Action: st.Action, After: st.After, Status: stepWord(st)}
		if st.OperationID.Valid {
			step.OperationID = &st.OperationID.UUID
		}
		run.Steps = append(run.Steps, step)
	}
	return run, nil
}

func stepWord(s dbgen.StackRunStepsRow) string {
	if s.OperationStatus != nil {
		return *s.OperationStatus
	}
	if stepState(s) == graph.Succeeded {
		return "skipped"
	}
	return "waiting"
}
