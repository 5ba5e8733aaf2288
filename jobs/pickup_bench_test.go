package jobs_test

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"nimbus/db"
	"nimbus/db/dbtest"
	"nimbus/jobs"
)

// BenchmarkPickup measures how long a job queued as a request queues one waits for its Work to
// begin: from the commit of the transaction that inserts it to the first line of Work, with the
// client and queue settings the server runs with. (From the commit, so that 50 transactions
// waiting for the test pool's few connections do not count.)
//
// "one-after-another" queues 100 jobs, each after the one before began, at random moments (a
// pause of up to 50 ms between them) so that they fall anywhere between the workers' fetches
// and polls, as requests do. "burst-50" queues 50 at once, each in a transaction of its own,
// as 50 people asking at the same moment would: none may wait for a poll.
func BenchmarkPickup(b *testing.B) {
	ctx := context.Background()
	pool := dbtest.Pool(b)
	riverPool, err := db.LazySessions(ctx, pool) // as the server runs River
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(riverPool.Close)
	started := make(chan startedJob, 100)
	client, err := jobs.NewClient(riverPool, slog.New(slog.DiscardHandler), jobs.Config{
		Register: func(w *river.Workers) { river.AddWorker(w, &probeWorker{started: started}) },
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = client.Stop(context.Background()) })
	queue := jobs.NewInserter(client)

	// insert queues probe n and returns when its transaction committed.
	insert := func(n int) (time.Time, error) {
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			_, err := queue.InsertTx(ctx, tx, probeArgs{N: n}, nil)
			return err
		})
		return time.Now(), err
	}
	// await waits for n probes to begin and returns when each did.
	await := func(b *testing.B, n int) map[int]time.Time {
		got := map[int]time.Time{}
		timeout := time.After(time.Minute)
		for len(got) < n {
			select {
			case s := <-started:
				got[s.n] = s.at
			case <-timeout:
				b.Fatalf("%d of %d jobs began within a minute", len(got), n)
			}
		}
		return got
	}
	report := func(b *testing.B, waits []time.Duration) {
		b.StopTimer()
		slices.Sort(waits)
		at := func(p float64) float64 {
			return float64(waits[int(p*float64(len(waits)-1))].Microseconds()) / 1000
		}
		b.ReportMetric(at(0.50), "p50-ms")
		b.ReportMetric(at(0.99), "p99-ms")
		b.ReportMetric(at(1), "max-ms")
		b.Logf("commit to Work, %d jobs: p50 %.1f ms, p99 %.1f ms, max %.1f ms", len(waits), at(0.50), at(0.99), at(1))
	}

	b.Run("one-after-another", func(b *testing.B) {
		const jobsPerRound = 100
		var waits []time.Duration
		for range b.N {
			for i := range jobsPerRound {
				b.StopTimer()
				time.Sleep(rand.N(50 * time.Millisecond))
				b.StartTimer()
				committed, err := insert(i)
				if err != nil {
					b.Fatal(err)
				}
				waits = append(waits, await(b, 1)[i].Sub(committed))
			}
		}
		report(b, waits)
	})

	b.Run("burst-50", func(b *testing.B) {
		const burst = 50
		var waits []time.Duration
		for range b.N {
			committed := make([]time.Time, burst)
			errs := make([]error, burst)
			var wg sync.WaitGroup
			for i := range burst {
				wg.Go(func() { committed[i], errs[i] = insert(i) })
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				b.Fatal(err)
			}
			began := await(b, burst)
			for i, at := range began {
				waits = append(waits, at.Sub(committed[i]))
			}
		}
		report(b, waits)
	})
}
