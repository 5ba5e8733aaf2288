package saga

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"nimbus/db"
	"nimbus/db/dbgen"
)

// PGStore keeps an operation's checkpoints in operation_steps.
type PGStore struct {
	pool      *pgxpool.Pool
	operation uuid.UUID
}

// NewPGStore returns the store of one operation's checkpoints.
func NewPGStore(pool *pgxpool.Pool, operation uuid.UUID) *PGStore {
	return &PGStore{pool: pool, operation: operation}
}

// Load creates the missing step rows and returns every step's checkpoint in order.
func (s *PGStore) Load(ctx context.Context, names []string) ([]State, error) {
	var rows []dbgen.OperationStep
	err := db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		for i, n := range names {
			if err := q.EnsureOperationStep(ctx, dbgen.EnsureOperationStepParams{OperationID: s.operation, Position: int32(i), Name: n}); err != nil {
				return err
			}
		}
		var err error
		rows, err = q.ListOperationSteps(ctx, s.operation)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("load steps of %s: %w", s.operation, err)
	}
	byName := make(map[string]dbgen.OperationStep, len(rows))
	for _, r := range rows {
		byName[r.Name] = r
	}
	out := make([]State, len(names))
	for i, n := range names {
		r := byName[n]
		out[i] = State{Name: n, Status: Status(r.Status), Result: json.RawMessage(r.Result), Error: r.Error}
	}
	return out, nil
}

// Mark records one transition of one step.
func (s *PGStore) Mark(ctx context.Context, name string, status Status, result json.RawMessage, errMsg string) error {
	n, err := dbgen.New(s.pool).MarkOperationStep(ctx, dbgen.MarkOperationStepParams{
		OperationID: s.operation, Name: name, Status: string(status), Result: result, Error: errMsg,
	})
	if err != nil {
		return fmt.Errorf("mark step %s %s: %w", name, status, err)
	}
	if n != 1 {
		return fmt.Errorf("mark step %s %s: no such step of operation %s", name, status, s.operation)
	}
	return nil
}
