package elevation_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"nimbus/app/apptest"
	"nimbus/app/domain/elevation"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
)

// grantReader gives A's reader tenant admin in A for an hour, as the provider admin.
func grantReader(t *testing.T, w *apptest.World) elevation.Elevation {
	t.Helper()
	e, err := w.Elevations.Grant(context.Background(), w.Admin, elevation.Grant{UserID: w.ReaderA.UserID, TenantID: w.A.ID,
		Role: access.TenantAdmin, Duration: time.Hour, Reason: "incident 4711"})
	apptest.Must(t, err)
	return e
}

// statusOf is the elevation's status and why it ended, as the table holds them.
func statusOf(t *testing.T, w *apptest.World, id uuid.UUID) (string, string) {
	t.Helper()
	var status, why string
	apptest.Must(t, w.Pool.QueryRow(context.Background(), `SELECT status, coalesce(ended_why, '') FROM elevations WHERE id = $1`, id).Scan(&status, &why))
	return status, why
}

// audited is the diff of the one audit event of action, which the provider admin or the
// system recorded, about the user.
func audited(t *testing.T, w *apptest.World, action string, user uuid.UUID) (actor string, diff map[string]any) {
	t.Helper()
	var raw []byte
	apptest.Must(t, w.Pool.QueryRow(context.Background(),
		`SELECT coalesce(u.email, 'system'), a.diff FROM audit_events a LEFT JOIN users u ON u.id = a.actor_id
		 WHERE a.action = $1 AND a.target_id = $2`, action, user.String()).Scan(&actor, &raw))
	apptest.Must(t, json.Unmarshal(raw, &diff))
	return actor, diff
}

// told is the data of the one event of typ in the outbox.
func told(t *testing.T, w *apptest.World, typ string) map[string]any {
	t.Helper()
	var raw []byte
	apptest.Must(t, w.Pool.QueryRow(context.Background(), `SELECT payload FROM event_log WHERE type = $1`, typ).Scan(&raw))
	var payload struct{ Data map[string]any }
	apptest.Must(t, json.Unmarshal(raw, &payload))
	return payload.Data
}

func TestElevation_GivesTheRoleAndIsAuditedAndTold(t *testing.T) {
	w := apptest.NewWorld(t)
	e := grantReader(t, w)
	if got := w.Principal(t, "reader-a@example.com").Roles[w.A.ID]; got != access.TenantAdmin {
		t.Fatalf("the reader's role in A while elevated = %s", got)
	}
	if got := w.Principal(t, "reader-a@example.com").Roles[w.B.ID]; got != "" {
		t.Fatalf("the elevation reached tenant B: %s", got)
	}
	actor, diff := audited(t, w, "elevation.grant", w.ReaderA.UserID)
	if actor != "root@example.com" || diff["role"] != "tenant_admin" || diff["tenant_id"] != w.A.ID.String() || diff["reason"] != "incident 4711" ||
		diff["email"] != "reader-a@example.com" {
		t.Fatalf("the grant is audited by %s as %v", actor, diff)
	}
	data := told(t, w, "elevation.granted")
	if data["user_id"] != w.ReaderA.UserID.String() || data["tenant_id"] != w.A.ID.String() || data["role"] != "tenant_admin" ||
		data["ends_at"] != e.EndsAt.UTC().Format(time.RFC3339) {
		t.Fatalf("elevation.granted carries %v", data)
	}
	// Its end is a job scheduled at its end time.
	var at time.Time
	apptest.Must(t, w.Pool.QueryRow(context.Background(),
		`SELECT scheduled_at FROM river_job WHERE kind = 'elevation_end' AND args->>'elevation_id' = $1`, e.ID.String()).Scan(&at))
	if d := at.Sub(e.EndsAt); d > time.Millisecond || d < -time.Millisecond {
		t.Fatalf("the end is scheduled at %s; the elevation ends at %s", at, e.EndsAt)
	}
}

func TestElevation_NeverLowersARole(t *testing.T) {
	w := apptest.NewWorld(t)
	_, err := w.Elevations.Grant(context.Background(), w.Admin, elevation.Grant{UserID: w.AdminA.UserID, TenantID: w.A.ID,
		Role: access.ReadOnly, Duration: time.Hour, Reason: "looking around"})
	apptest.Must(t, err)
	if got := w.Principal(t, "admin-a@example.com").Roles[w.A.ID]; got != access.TenantAdmin {
		t.Fatalf("A's admin, elevated to read-only in A, is %s there", got)
	}
}

func TestElevation_EndsByItselfAtItsEndTime(t *testing.T) {
	w := apptest.NewWorld(t)
	e := grantReader(t, w)
	ctx := context.Background()
	// Its time comes: the role is gone at once, before anything records the end.
	_, err := w.Pool.Exec(ctx, `UPDATE elevations SET ends_at = now() - interval '1 second' WHERE id = $1`, e.ID)
	apptest.Must(t, err)
	if got := w.Principal(t, "reader-a@example.com").Roles[w.A.ID]; got != access.ReadOnly {
		t.Fatalf("the reader is %s in A after the elevation's end time", got)
	}
	// The sweep records the end, as the system; a second sweep finds nothing to do.
	n, err := w.Elevations.ExpireDue(ctx)
	apptest.Must(t, err)
	if n != 1 {
		t.Fatalf("the sweep ended %d elevations, want 1", n)
	}
	if status, why := statusOf(t, w, e.ID); status != string(elevation.Ended) || why != string(elevation.Expired) {
		t.Fatalf("the elevation is %s (%s)", status, why)
	}
	if n, err := w.Elevations.ExpireDue(ctx); err != nil || n != 0 {
		t.Fatalf("a second sweep ended %d (%v)", n, err)
	}
	actor, diff := audited(t, w, "elevation.end", w.ReaderA.UserID)
	if actor != "system" || diff["why"] != "expired" || diff["role"] != "tenant_admin" || diff["reason"] != "incident 4711" {
		t.Fatalf("the end is audited by %s as %v", actor, diff)
	}
	if data := told(t, w, "elevation.ended"); data["why"] != "expired" || data["user_id"] != w.ReaderA.UserID.String() {
		t.Fatalf("elevation.ended carries %v", data)
	}
	// Revoking it now is refused on its status.
	err = w.Elevations.Revoke(ctx, w.Admin, e.ID)
	if problem.FieldOf(err) != "status" {
		t.Fatalf("revoking an ended elevation: %v", err)
	}
}

func TestElevation_ItsJobEndsItWhenDue(t *testing.T) {
	s := apptest.NewSite(t)
	root, reader := s.Token(t, s.Admin), s.Token(t, s.ReaderA)
	r := s.Call(t, "POST", "/api/v1/elevations", root, map[string]any{"user_id": s.ReaderA.UserID, "tenant_id": s.A.ID,
		"role": "tenant_admin", "duration": "15m", "reason": "restore the database"})
	apptest.WantStatus(t, r, http.StatusCreated)
	id := r.JSON(t)["id"].(string)
	role := func() any {
		return s.Call(t, "GET", "/api/v1/me", reader, nil).JSON(t)["roles"].(map[string]any)[s.A.ID.String()]
	}
	if got := role(); got != "tenant_admin" {
		t.Fatalf("the reader's token acts as %v in A while elevated", got)
	}
	// The end time comes sooner than asked, and the job with it.
	ctx := context.Background()
	_, err := s.Pool.Exec(ctx, `UPDATE elevations SET ends_at = now() WHERE id = $1`, id)
	apptest.Must(t, err)
	_, err = s.Pool.Exec(ctx, `UPDATE river_job SET scheduled_at = now() WHERE kind = 'elevation_end' AND args->>'elevation_id' = $1`, id)
	apptest.Must(t, err)
	if got := role(); got != "read_only" {
		t.Fatalf("the reader's token acts as %v in A after the end time", got)
	}
	apptest.WaitFor(t, "the elevation's end", func() bool {
		status, _ := statusOf(t, s.World, uuid.MustParse(id))
		return status == string(elevation.Ended)
	})
	if _, why := statusOf(t, s.World, uuid.MustParse(id)); why != string(elevation.Expired) {
		t.Fatalf("the job ended the elevation as %s", why)
	}
}

func TestElevation_RevokedEndsAtOnceForSessionsAndTokens(t *testing.T) {
	s := apptest.NewSite(t)
	e := grantReader(t, s.World)
	token := s.Token(t, s.ReaderA)
	b := apptest.NewBrowser(t, s.URL)
	b.SignIn(t, "reader-a@example.com", "long enough password")
	// Tenant admins of A see A's users; readers do not.
	apptest.WantStatus(t, s.Call(t, "GET", "/api/v1/users/"+s.UserA.UserID.String(), token, nil), http.StatusOK)
	apptest.WantStatus(t, b.Get(t, "/users/"+s.UserA.UserID.String()), http.StatusOK)
	// The reader's account page says what they hold and until when.
	if page := b.Get(t, "/account"); !strings.Contains(string(page.Body), "held-elevations") || !strings.Contains(string(page.Body), "incident 4711") {
		t.Fatalf("the account page does not show the elevation: %.2000s", page.Body)
	}

	admin := apptest.NewBrowser(t, s.URL)
	admin.SignIn(t, "root@example.com", "correct horse battery")
	page := admin.Get(t, "/admin/elevations")
	apptest.WantStatus(t, page, http.StatusOK)
	r := admin.Post(t, "/admin/elevations/"+e.ID.String()+"/revoke", url.Values{"_csrf": {admin.CSRF}})
	if r.Status != http.StatusSeeOther {
		t.Fatalf("revoke: %d %.500s", r.Status, r.Body)
	}
	apptest.WantStatus(t, s.Call(t, "GET", "/api/v1/users/"+s.UserA.UserID.String(), token, nil), http.StatusNotFound)
	apptest.WantStatus(t, b.Get(t, "/users/"+s.UserA.UserID.String()), http.StatusNotFound)
	if status, why := statusOf(t, s.World, e.ID); status != string(elevation.Ended) || why != string(elevation.Revoked) {
		t.Fatalf("the elevation is %s (%s)", status, why)
	}
	actor, diff := audited(t, s.World, "elevation.end", s.ReaderA.UserID)
	if actor != "root@example.com" || diff["why"] != "revoked" {
		t.Fatalf("the revocation is audited by %s as %v", actor, diff)
	}
	if data := told(t, s.World, "elevation.ended"); data["why"] != "revoked" {
		t.Fatalf("elevation.ended carries %v", data)
	}
	// The page lists it as revoked.
	if page := admin.Get(t, "/admin/elevations"); !strings.Contains(string(page.Body), `data-testid="elevation-ending">revoked`) {
		t.Fatalf("the elevations page does not show the revocation: %.3000s", page.Body)
	}
}

func TestElevation_BadInputNamesTheField(t *testing.T) {
	s := apptest.NewSite(t)
	root := s.Token(t, s.Admin)
	good := func() map[string]any {
		return map[string]any{"user_id": s.ReaderA.UserID, "tenant_id": s.A.ID, "role": "tenant_admin", "duration": "1h", "reason": "why not"}
	}
	for _, c := range []struct {
		key         string
		value       any
		field, rule string
	}{
		{"duration", "10m", "duration", "min"},
		{"duration", "169h", "duration", "max"},
		{"duration", "a while", "duration", "format"},
		{"reason", "  ", "reason", "required"},
		{"role", "provider_admin", "role", "one_of"},
		{"tenant_id", uuid.New(), "tenant_id", "exists"},
		{"user_id", uuid.New(), "user_id", "exists"},
	} {
		body := good()
		body[c.key] = c.value
		r := s.Call(t, "POST", "/api/v1/elevations", root, body)
		apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
		apptest.WantProblem(t, r, c.field, c.rule)
	}
	// Nobody but a provider admin grants.
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/elevations", s.Token(t, s.AdminA), good()), http.StatusForbidden)
}

func TestElevation_PageGrantsForProviderAdminsOnly(t *testing.T) {
	s := apptest.NewSite(t)
	admin := apptest.NewBrowser(t, s.URL)
	admin.SignIn(t, "root@example.com", "correct horse battery")
	apptest.WantStatus(t, admin.Get(t, "/admin/elevations"), http.StatusOK)
	form := url.Values{"_csrf": {admin.CSRF}, "user_id": {s.UserA.UserID.String()}, "tenant_id": {s.B.ID.String()},
		"role": {"user"}, "duration": {"4h"}, "reason": {""}}
	r := admin.Post(t, "/admin/elevations", form)
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.Body), `data-field-error="reason"`) {
		t.Fatalf("the form does not name the reason: %.3000s", r.Body)
	}
	form.Set("reason", "helping B with a migration")
	if r := admin.Post(t, "/admin/elevations", form); r.Status != http.StatusSeeOther {
		t.Fatalf("grant: %d %.500s", r.Status, r.Body)
	}
	if got := s.Principal(t, "user-a@example.com").Roles[s.B.ID]; got != access.User {
		t.Fatalf("A's user is %q in B once granted from the page", got)
	}
	if page := string(admin.Get(t, "/admin/elevations").Body); !strings.Contains(page, "helping B with a migration") {
		t.Fatalf("the page does not list the grant: %.3000s", page)
	}

	// Nobody else reaches the page, the form or the API.
	other := apptest.NewBrowser(t, s.URL)
	other.SignIn(t, "admin-a@example.com", "long enough password")
	apptest.WantStatus(t, other.Get(t, "/admin/elevations"), http.StatusForbidden)
	other.Get(t, "/tokens")
	form.Set("_csrf", other.CSRF)
	apptest.WantStatus(t, other.Post(t, "/admin/elevations", form), http.StatusForbidden)
	tok := s.Token(t, s.AdminA)
	apptest.WantStatus(t, s.Call(t, "GET", "/api/v1/elevations", tok, nil), http.StatusForbidden)
}
