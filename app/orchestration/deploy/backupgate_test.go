package deploy

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/db/dbtest"
)

func operationStatus(t *testing.T, q *dbgen.Queries, id uuid.UUID) string {
	t.Helper()
	op, err := q.GetOperation(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return op.Status
}

// While a backup copies the states no operation is taken, so none starts writing a state the
// backup's snapshot shows no operation running on; once it is done the claim goes through.
func TestPauseClaims_AnOperationWaitsWhileTheStatesAreCopied(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pool := dbtest.Pool(t)
	d := dbtest.NewDeployment(t, pool)
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	resume, err := PauseClaims(ctx, conn.Conn())
	if err != nil {
		t.Fatal(err)
	}
	claimed := make(chan error, 1)
	go func() {
		claimed <- db.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			_, err := claim(ctx, db.Queries(tx), d.OperationID, uuid.New())
			return err
		})
	}()
	dbtest.WaitForLockWait(ctx, t, pool, claimed)
	if got := operationStatus(t, db.Queries(pool), d.OperationID); got != string(Queued) {
		t.Fatalf("taken while the backup copies the states: %s", got)
	}
	if err := resume(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-claimed; err != nil {
		t.Fatalf("claim after the backup: %v", err)
	}
	if got := operationStatus(t, db.Queries(pool), d.OperationID); got != string(Running) {
		t.Fatalf("after the backup the operation is %s, want running", got)
	}
}

// recordingQueue keeps the jobs it is given.
type recordingQueue struct{ args []river.JobArgs }

func (q *recordingQueue) InsertTx(_ context.Context, _ pgx.Tx, args river.JobArgs, _ *river.InsertOpts) (*rivertype.JobInsertResult, error) {
	q.args = append(q.args, args)
	return &rivertype.JobInsertResult{}, nil
}

// An operation a restored database shows running, though no worker of this installation runs
// it, goes back to the queue with a job to take it up: it is never left running.
func TestResumeRestored_HandsRunningOperationsBack(t *testing.T) {
	ctx := context.Background()
	pool := dbtest.Pool(t)
	d := dbtest.NewDeployment(t, pool)
	if _, err := claim(ctx, db.Queries(pool), d.OperationID, uuid.New()); err != nil {
		t.Fatal(err)
	}
	queue := &recordingQueue{}
	var ids []uuid.UUID
	err := db.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var err error
		ids, err = ResumeRestored(ctx, tx, queue)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 1 || ids[0] != d.OperationID || len(queue.args) != 1 || queue.args[0] != (OperationArgs{OperationID: d.OperationID}) {
		t.Fatalf("resumed %v with jobs %v, want operation %s with its job", ids, queue.args, d.OperationID)
	}
	if got := operationStatus(t, db.Queries(pool), d.OperationID); got != string(Queued) {
		t.Fatalf("after the restore the operation is %s, want queued", got)
	}
}
