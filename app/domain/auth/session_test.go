package auth_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"nimbus/app/apptest"
)

func TestPages_ASessionEndsAtItsMaximumAgeHoweverMuchItIsUsed(t *testing.T) {
	s := apptest.NewSite(t) // sessions: an hour idle, the default seven days in all
	b := apptest.NewBrowser(t, s.URL)
	if r := b.SignIn(t, "admin-a@example.com", "long enough password"); r.Status != http.StatusSeeOther {
		t.Fatalf("sign in: %d", r.Status)
	}
	apptest.WantStatus(t, b.Get(t, "/tenants"), http.StatusOK)

	// Six days and 23½ hours in, used a couple of minutes ago: the session still works, and
	// using it extends it only to its seventh day, not by the whole idle hour.
	_, err := s.Pool.Exec(t.Context(), `UPDATE sessions SET created_at = now() - interval '167 hours 30 minutes',
		last_seen_at = now() - interval '2 minutes'`)
	apptest.Must(t, err)
	apptest.WantStatus(t, b.Get(t, "/tenants"), http.StatusOK)
	var left time.Duration
	apptest.Must(t, s.Pool.QueryRow(t.Context(), `SELECT extract(epoch FROM expires_at - now())::float8 * interval '1 second' FROM sessions`).Scan(&left))
	if left > 31*time.Minute || left < 25*time.Minute {
		t.Fatalf("the session now ends in %s, want about 30 minutes: its seventh day", left)
	}

	// Seven days and a minute in, used every minute until now: it has ended all the same.
	_, err = s.Pool.Exec(t.Context(), `UPDATE sessions SET created_at = now() - interval '168 hours 1 minute',
		last_seen_at = now(), expires_at = now() + interval '1 hour'`)
	apptest.Must(t, err)
	r := b.Get(t, "/tenants")
	if r.Status != http.StatusSeeOther || !strings.HasPrefix(r.Header.Get("Location"), "/login") {
		t.Fatalf("a page after the maximum age: %d %s, want the sign-in form", r.Status, r.Header.Get("Location"))
	}
	apptest.WantStatus(t, b.Get(t, "/api/v1/me"), http.StatusUnauthorized)
}
