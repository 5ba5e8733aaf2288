package policy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/component"
	"nimbus/app/problem"
	"nimbus/app/stack"
	"nimbus/db/dbgen"
)

// Declared is the op of a resource that another slot of the same stack instance declares: it
// is planned by that slot's own operation, and so has no inputs here.
const Declared = "declared"

// stackPlan completes the plan of an operation on a stack instance's slot with what the
// instance's other slots declare in their programs: the slots deploy one by one, each after
// those it reads, so no one preview plans the whole instance, yet a policy such as "every
// Namespace has a ResourceQuota in the same plan" is about the instance. It returns the slot
// the operation's own resources are in, and nothing for a deployment of no stack instance.
func stackPlan(ctx context.Context, q *dbgen.Queries, op uuid.UUID) (string, []Resource, error) {
	at, err := q.OperationStackSlot(ctx, op)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil, nil
	}
	if err != nil {
		return "", nil, fmt.Errorf("the stack slot of operation %s: %w", op, err)
	}
	def, err := stack.LoadVersion(ctx, q, at.StackID, int(at.Version))
	if err != nil {
		return "", nil, err
	}
	var out []Resource
	for _, sl := range def.Slots {
		if sl.Name == at.Slot {
			continue
		}
		v, err := q.GetComponentVersion(ctx, dbgen.GetComponentVersionParams{ComponentID: sl.Component, Version: int32(sl.Version)})
		if err != nil {
			return "", nil, fmt.Errorf("the program of slot %s: %w", sl.Name, err)
		}
		// The program was checked when it was published; only its resources are read here.
		prog := component.ParseYAML(v.Code, component.Scope{ProviderLevel: true}, &problem.ValidationError{})
		if prog == nil {
			continue
		}
		for _, name := range slices.Sorted(maps.Keys(prog.Resources)) {
			out = append(out, Resource{Type: prog.Resources[name], Name: name, Op: Declared, Slot: sl.Name, Inputs: map[string]any{}})
		}
	}
	return at.Slot, out, nil
}
