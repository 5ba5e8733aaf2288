package jobs_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"

	"nimbus/db/dbtest"
	"nimbus/jobs"
)

// A job queued right after another by the same node starts without waiting for a poll: here the
// workers never poll, and River itself announces no more than the first of the two jobs.
func TestInserter_WakesTheWorkersForEveryJob(t *testing.T) {
	ctx := context.Background()
	pool := dbtest.Pool(t)
	started := make(chan startedJob, 2)
	workers := river.NewWorkers()
	river.AddWorker(workers, &probeWorker{started: started})
	const never = time.Hour
	worker, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Logger:            slog.New(slog.DiscardHandler),
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 2}},
		Workers:           workers,
		FetchCooldown:     time.Millisecond,
		FetchPollInterval: never,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := worker.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = worker.Stop(context.Background()) })
	// The node that queues announces, on its own, one insert an hour.
	node, err := river.NewClient(riverpgxv5.New(pool), &river.Config{Logger: slog.New(slog.DiscardHandler),
		FetchCooldown: never, FetchPollInterval: never})
	if err != nil {
		t.Fatal(err)
	}
	queue := jobs.NewInserter(node)

	for n := range 2 {
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			_, err := queue.InsertTx(ctx, tx, probeArgs{N: n}, nil)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		select {
		case s := <-started:
			if s.n != n {
				t.Fatalf("job %d started, want %d", s.n, n)
			}
		case <-time.After(time.Minute):
			t.Fatalf("job %d did not start within a minute (the workers poll once an hour)", n)
		}
	}
}

type probeArgs struct {
	N int `json:"n"`
}

func (probeArgs) Kind() string { return "pickup_probe" }

type startedJob struct {
	n  int
	at time.Time
}

// probeWorker says when each probe began, and does nothing else.
type probeWorker struct {
	river.WorkerDefaults[probeArgs]
	started chan<- startedJob
}

func (w *probeWorker) Work(_ context.Context, job *river.Job[probeArgs]) error {
	w.started <- startedJob{n: job.Args.N, at: time.Now()}
	return nil
}

// Running queues with the client of the job it is asked from, and refuses outside a job.
func TestRunning_QueuesWithTheJobsClient(t *testing.T) {
	ctx := context.Background()
	pool := dbtest.Pool(t)
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	insert := func(ctx context.Context) error {
		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			_, err := jobs.Running{}.InsertTx(ctx, tx, probeArgs{N: 7}, nil)
			return err
		})
	}
	if err := insert(ctx); err == nil {
		t.Fatal("queued outside a job")
	}
	if err := insert(rivertest.WorkContext(ctx, client)); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind = $1`, probeArgs{}.Kind()).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("%d jobs queued, want 1", n)
	}
}
