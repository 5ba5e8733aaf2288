package auth_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"nimbus/app/domain/auth"
	"nimbus/app/domain/user"
	"nimbus/app/kernel/objstore/s3test"
	"nimbus/app/kernel/problem"
	"nimbus/db/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(s3test.Around(m)) }

const (
	email    = "owner@example.com"
	password = "correct horse battery"
)

func newService(t *testing.T) *auth.Service {
	t.Helper()
	pool := dbtest.Pool(t)
	if _, err := user.Bootstrap(context.Background(), pool, email, password); err != nil {
		t.Fatal(err)
	}
	return auth.NewService(pool, slog.New(slog.DiscardHandler), time.Hour)
}

// outcome names what a sign-in came to: "ok", "wrong" or "throttled".
func outcome(t *testing.T, s *auth.Service, email, password, ip string) string {
	t.Helper()
	_, err := s.Login(context.Background(), email, password, ip)
	var limited *problem.TooManyRequests
	switch {
	case err == nil:
		return "ok"
	case problem.FieldOf(err) == "password":
		return "wrong"
	case errors.As(err, &limited):
		return "throttled"
	}
	t.Fatalf("sign-in failed unexpectedly: %v", err)
	return ""
}

func TestLogin_ThrottlesEachEmailAndAddressApart(t *testing.T) {
	s := newService(t)
	for range 5 {
		if got := outcome(t, s, email, "wrong password", "192.0.2.1"); got != "wrong" {
			t.Fatalf("failure under the limit: %s", got)
		}
	}
	if got := outcome(t, s, email, password, "192.0.2.1"); got != "throttled" {
		t.Fatalf("sixth attempt from the same address: %s, want throttled", got)
	}
	// Someone failing on purpose must not lock the owner out everywhere.
	if got := outcome(t, s, email, password, "192.0.2.2"); got != "ok" {
		t.Fatalf("the same email from another address: %s, want ok", got)
	}
	if got := outcome(t, s, "other@example.com", "wrong password", "192.0.2.1"); got != "wrong" {
		t.Fatalf("another email from the throttled address: %s, want wrong", got)
	}
}

func TestLogin_ThrottlesAnAddressAcrossEmails(t *testing.T) {
	s := newService(t)
	for i := range 30 {
		someone := fmt.Sprintf("guess%d@example.com", i/5)
		if got := outcome(t, s, someone, "wrong password", "192.0.2.1"); got != "wrong" {
			t.Fatalf("failure %d under the limit: %s", i+1, got)
		}
	}
	if got := outcome(t, s, email, password, "192.0.2.1"); got != "throttled" {
		t.Fatalf("after 30 failures from one address: %s, want throttled", got)
	}
	if got := outcome(t, s, email, password, "192.0.2.2"); got != "ok" {
		t.Fatalf("another address: %s, want ok", got)
	}
}

func TestLogin_CountsParallelGuesses(t *testing.T) {
	s := newService(t)
	const n = 20
	results := make(chan string, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { results <- outcome(t, s, email, "wrong password", "192.0.2.1") })
	}
	wg.Wait()
	close(results)
	got := map[string]int{}
	for r := range results {
		got[r]++
	}
	if got["wrong"] > 5 || got["wrong"]+got["throttled"] != n {
		t.Fatalf("%d parallel guesses: %v; at most 5 may be checked", n, got)
	}
}

func TestLogin_SuccessForgivesEarlierFailures(t *testing.T) {
	s := newService(t)
	for range 4 {
		outcome(t, s, email, "wrong password", "192.0.2.1")
	}
	if got := outcome(t, s, email, password, "192.0.2.1"); got != "ok" {
		t.Fatalf("right password after four typos: %s", got)
	}
	for i := range 5 {
		if got := outcome(t, s, email, "wrong password", "192.0.2.1"); got != "wrong" {
			t.Fatalf("failure %d after signing in: %s, want wrong (not throttled)", i+1, got)
		}
	}
}
