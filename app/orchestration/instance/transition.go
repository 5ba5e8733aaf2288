package instance

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"nimbus/app/kernel/lifecycle"
	"nimbus/app/kernel/outbox"
	"nimbus/db/dbgen"
)

// This file holds the moves of an instance's status and state: the only code that writes
// them. A move refuses any the machine does not allow, saying so.

// create records a new instance, pending until its first run deploys it.
func create(ctx context.Context, q *dbgen.Queries, p dbgen.CreateStackInstanceParams) (dbgen.StackInstance, error) {
	return q.CreateStackInstance(ctx, p)
}

// move sets an instance's status, with why it is there (empty but for a failure). A move its
// status does not allow is refused: a run starting finds the instance elsewhere than it was
// asked for.
func move(ctx context.Context, q *dbgen.Queries, inst dbgen.StackInstance, to lifecycle.InstanceStatus, reason string) error {
	if !lifecycle.Instances.Allows(lifecycle.InstanceStatus(inst.Status), to) {
		return refuse("%s is %s: it cannot become %s", inst.Name, inst.Status, to)
	}
	if err := q.SetStackInstanceStatus(ctx, dbgen.SetStackInstanceStatusParams{ID: inst.ID, Status: string(to), Error: reason}); err != nil {
		return err
	}
	if to != lifecycle.InstanceDestroyed {
		return nil
	}
	// What an instance held is gone: a tenant waiting for its last namespace reacts.
	return outbox.Emit(ctx, q, outbox.Event{Type: "stack.destroyed", Subject: inst.Name, Tenant: inst.TenantID, Environment: inst.EnvironmentID,
		Instance: inst.ID, Data: map[string]any{"stack_instance": inst.ID}})
}

// deployed records that every slot of an instance is deployed: it is active.
func deployed(ctx context.Context, q *dbgen.Queries, inst dbgen.StackInstance) error {
	if err := lifecycle.Instances.Check(inst.Name, lifecycle.InstanceStatus(inst.Status), lifecycle.InstanceActive); err != nil {
		return fmt.Errorf("instance %w", err)
	}
	return q.MarkStackInstanceDeployed(ctx, inst.ID)
}

// enter moves an instance's state machine to state, recording the change with what caused it.
func enter(ctx context.Context, q *dbgen.Queries, inst dbgen.StackInstance, state string, c cause) error {
	if _, err := q.EnterStackState(ctx, dbgen.EnterStackStateParams{ID: inst.ID, CurrentState: &state}); err != nil {
		return err
	}
	ops := c.operations
	if ops == nil {
		ops = []uuid.UUID{}
	}
	err := q.InsertStackStateHistory(ctx, dbgen.InsertStackStateHistoryParams{InstanceID: inst.ID, FromState: inst.CurrentState,
		ToState: state, Trigger: c.trigger, Source: c.source, Actor: c.actor, RunID: uuid.NullUUID{UUID: c.run, Valid: c.run != uuid.Nil},
		Operations: ops})
	if err != nil {
		return err
	}
	return outbox.Emit(ctx, q, outbox.Event{Type: "stack.state_changed", Subject: inst.Name, Tenant: inst.TenantID, Environment: inst.EnvironmentID,
		Instance: inst.ID, Data: map[string]any{"from": inst.CurrentState, "to": state, "trigger": c.trigger, "source": c.source, "run": c.run}})
}

// cause is what moved an instance's state: a trigger from a source (a person, the API, a
// timeout, a day-2 operation), who, in which run, and the operations the run ran.
type cause struct {
	trigger    string
	source     string
	actor      uuid.NullUUID
	run        uuid.UUID
	operations []uuid.UUID
}
