package deploy

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// backupGate is the advisory lock a backup holds while it copies the stacks' states, and that
// taking an operation waits on, shared: ClaimOperation and StartRestore in
// db/queries/operations.sql spell the same number.
const backupGate = 7369646570

// PauseClaims waits until no operation is being taken, then keeps any from being taken, on
// conn's session, until resume is called or the session ends. Operations already running go
// on: a backup records them running, and a restore resumes them (see ResumeRestored).
func PauseClaims(ctx context.Context, conn *pgx.Conn) (resume func(context.Context) error, err error) {
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", backupGate); err != nil {
		return nil, fmt.Errorf("pause the taking of operations: %w", err)
	}
	return func(ctx context.Context) error {
		if _, err := conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", backupGate); err != nil {
			return fmt.Errorf("let operations be taken again: %w", err)
		}
		return nil
	}, nil
}
