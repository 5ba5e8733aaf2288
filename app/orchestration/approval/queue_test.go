package approval_test

import (
	"context"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/orchestration/approval"
)

// The approvals page's queue lists a pending request however many were decided after it (the
// newest 200 of any status once left it out), and the latest decided ones, as many as asked.
func TestQueue_KeepsAPendingRequestBehindManyDecidedOnes(t *testing.T) {
	w := apptest.NewWorld(t)
	ctx := context.Background()
	req := w.Request(t)
	_, err := w.Pool.Exec(ctx, `INSERT INTO approval_requests (operation_id, tenant_id, requested_by, approvals_required,
		approver_role, status, previewed_at, expires_at, decided_at, created_at)
		SELECT operation_id, tenant_id, requested_by, approvals_required, approver_role, 'void', previewed_at, expires_at, now(),
			created_at + i * interval '1 second'
		FROM approval_requests, generate_series(1, 220) i WHERE id = $1`, req.ID)
	apptest.Must(t, err)
	pending, decided, err := w.Approvals.Queue(ctx, w.Admin, 20)
	apptest.Must(t, err)
	if len(pending) != 1 || pending[0].ID != req.ID {
		t.Fatalf("pending: %v, want the one request", pending)
	}
	if len(decided) != 20 || decided[0].Status != approval.Void || !decided[0].CreatedAt.After(decided[19].CreatedAt) {
		t.Fatalf("decided: %d requests, want the newest 20 void ones, newest first", len(decided))
	}
}
