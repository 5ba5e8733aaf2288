package stack

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"nimbus/db/dbgen"
)

// LoadVersion reads a published version's definition with its day-2 operations and routes.
func LoadVersion(ctx context.Context, q *dbgen.Queries, stackID uuid.UUID, version int) (Definition, error) {
	var def Definition
	raw, err := q.StackVersionDefinition(ctx, dbgen.StackVersionDefinitionParams{StackID: stackID, Version: int32(version)})
	if err != nil {
		return def, fmt.Errorf("read version %d of stack %s: %w", version, stackID, err)
	}
	if err := json.Unmarshal(raw, &def); err != nil {
		return def, fmt.Errorf("version %d of stack %s: %w", version, stackID, err)
	}
	ops, err := q.StackVersionOperations(ctx, dbgen.StackVersionOperationsParams{StackID: stackID, Version: int32(version)})
	if err != nil {
		return def, fmt.Errorf("read the day-2 operations of version %d of stack %s: %w", version, stackID, err)
	}
	def.Operations = make([]Operation, len(ops))
	for i, o := range ops {
		op := Operation{Name: o.Name, DisplayName: o.DisplayName, Description: o.Description, InputSchema: json.RawMessage(o.InputSchema),
			RequiredStates: o.RequiredStates, TriggersTransition: o.TriggersTransition}
		if err := json.Unmarshal(o.Actions, &op.Actions); err != nil {
			return def, fmt.Errorf("actions of %s: %w", o.Name, err)
		}
		def.Operations[i] = op
	}
	rules, err := q.EventRules(ctx, dbgen.EventRulesParams{StackID: stackID, Version: int32(version)})
	if err != nil {
		return def, fmt.Errorf("read the routing rules of version %d of stack %s: %w", version, stackID, err)
	}
	for _, r := range rules {
		def.Routes = append(def.Routes, Route{Source: r.SourceKind, Type: r.EventType, Filter: r.Filter, Trigger: r.Trigger})
	}
	return def, nil
}

// Operation returns the day-2 operation named name, or false.
func (d Definition) Operation(name string) (Operation, bool) {
	for _, o := range d.Operations {
		if o.Name == name {
			return o, true
		}
	}
	return Operation{}, false
}

// Slot returns the slot named name, or false.
func (d Definition) Slot(name string) (Slot, bool) {
	for _, s := range d.Slots {
		if s.Name == name {
			return s, true
		}
	}
	return Slot{}, false
}
