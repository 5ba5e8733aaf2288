package jobs_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"nimbus/app/domain/user"
	"nimbus/db/dbtest"
	"nimbus/jobs"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

func TestHousekeeping_RunsOnStartAndDeletesExpiredSessions(t *testing.T) {
	ctx := context.Background()
	pool := dbtest.Pool(t)
	if _, err := user.Bootstrap(ctx, pool, "root@example.com", "correct horse battery"); err != nil {
		t.Fatal(err)
	}
	_, err := pool.Exec(ctx, `
		INSERT INTO sessions (token_hash, user_id, csrf_token, expires_at)
		SELECT 'expired', id, 'x', now() - interval '1 minute' FROM users;
		INSERT INTO sessions (token_hash, user_id, csrf_token, expires_at)
		SELECT 'live', id, 'x', now() + interval '1 hour' FROM users;
		INSERT INTO login_failures (email, client_ip, created_at) VALUES
			('a@example.com', '192.0.2.1', now() - interval '2 days'),
			('a@example.com', '192.0.2.1', now());`)
	if err != nil {
		t.Fatal(err)
	}

	client, err := jobs.NewClient(pool, slog.New(slog.NewTextHandler(io.Discard, nil)), jobs.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Stop(context.Background()) })

	deadline := time.Now().Add(30 * time.Second)
	for {
		var sessions, failures int
		err := pool.QueryRow(ctx, "SELECT (SELECT count(*) FROM sessions), (SELECT count(*) FROM login_failures)").Scan(&sessions, &failures)
		if err != nil {
			t.Fatal(err)
		}
		if sessions == 1 && failures == 1 {
			return // the live session and the recent failure remain
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30s: %d sessions and %d failures, want 1 and 1", sessions, failures)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
