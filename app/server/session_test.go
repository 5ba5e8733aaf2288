package server_test

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestPages_ASessionEndsAtItsMaximumAgeHoweverMuchItIsUsed(t *testing.T) {
	s := newSite(t) // sessions: an hour idle, the default seven days in all
	b := newBrowser(t, s.url)
	if r := b.signIn(t, "admin-a@example.com", "long enough password"); r.status != http.StatusSeeOther {
		t.Fatalf("sign in: %d", r.status)
	}
	wantStatus(t, b.get(t, "/tenants"), http.StatusOK)

	// Six days and 23½ hours in, used a couple of minutes ago: the session still works, and
	// using it extends it only to its seventh day, not by the whole idle hour.
	_, err := s.pool.Exec(t.Context(), `UPDATE sessions SET created_at = now() - interval '167 hours 30 minutes',
		last_seen_at = now() - interval '2 minutes'`)
	must(t, err)
	wantStatus(t, b.get(t, "/tenants"), http.StatusOK)
	var left time.Duration
	must(t, s.pool.QueryRow(t.Context(), `SELECT extract(epoch FROM expires_at - now())::float8 * interval '1 second' FROM sessions`).Scan(&left))
	if left > 31*time.Minute || left < 25*time.Minute {
		t.Fatalf("the session now ends in %s, want about 30 minutes: its seventh day", left)
	}

	// Seven days and a minute in, used every minute until now: it has ended all the same.
	_, err = s.pool.Exec(t.Context(), `UPDATE sessions SET created_at = now() - interval '168 hours 1 minute',
		last_seen_at = now(), expires_at = now() + interval '1 hour'`)
	must(t, err)
	r := b.get(t, "/tenants")
	if r.status != http.StatusSeeOther || !strings.HasPrefix(r.header.Get("Location"), "/login") {
		t.Fatalf("a page after the maximum age: %d %s, want the sign-in form", r.status, r.header.Get("Location"))
	}
	wantStatus(t, b.get(t, "/api/v1/me"), http.StatusUnauthorized)
}
