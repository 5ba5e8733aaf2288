package notification_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"nimbus/app/apptest"
	"nimbus/app/domain/notification"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/outbox"
	"nimbus/db"
)

// inbox is what p's inbox holds, newest first.
func inbox(t *testing.T, w *apptest.World, p access.Principal) []notification.Notification {
	t.Helper()
	list, err := w.Notices.List(context.Background(), p, notification.Filter{})
	apptest.Must(t, err)
	return list
}

// TestApprovalRequested_ReachesThoseWhoMayDecideAndNobodyElse: a request waiting for a user of
// A reaches A's admin and the provider admin; not its requester, not A's reader (who may not
// decide), not B's admin.
func TestApprovalRequested_ReachesThoseWhoMayDecideAndNobodyElse(t *testing.T) {
	w := apptest.NewWorld(t)
	req := w.Request(t)
	w.RouteEvents(t)

	for _, p := range []access.Principal{w.AdminA, w.Admin} {
		list := inbox(t, w, p)
		if len(list) != 1 || list[0].Kind != "approval.requested" || list[0].Link != "/approvals/"+req.ID.String() || list[0].ReadAt != nil {
			t.Errorf("%s's inbox: %+v", p.Email, list)
		}
	}
	for _, p := range []access.Principal{w.UserA, w.ReaderA, w.AdminB} {
		if list := inbox(t, w, p); len(list) != 0 {
			t.Errorf("%s was told: %+v", p.Email, list)
		}
	}
}

// TestPreferenceOff_StopsTheKind: an approver who turned waiting approvals off in the inbox
// gets none; the others still do.
func TestPreferenceOff_StopsTheKind(t *testing.T) {
	w := apptest.NewWorld(t)
	ctx := context.Background()
	apptest.Must(t, w.Notices.SetPreferences(ctx, w.AdminA, notification.Preferences{
		Kinds: []notification.Choice{{Kind: "approval.requested", Inbox: false, Email: true}}}))
	w.Request(t)
	w.RouteEvents(t)
	if list := inbox(t, w, w.AdminA); len(list) != 0 {
		t.Errorf("A's admin turned it off and was told: %+v", list)
	}
	if list := inbox(t, w, w.Admin); len(list) != 1 {
		t.Errorf("the provider admin's inbox: %+v", list)
	}
	p, err := w.Notices.Preferences(ctx, w.AdminA)
	apptest.Must(t, err)
	for _, c := range p.Kinds {
		want := c.Kind != "approval.requested" && c.Kind != "deployment.succeeded"
		if c.Kind == "approval.requested" && (c.Inbox || !c.Email) || c.Kind != "approval.requested" && c.Inbox != want {
			t.Errorf("preference %+v", c)
		}
	}
	if err := w.Notices.SetPreferences(ctx, w.AdminA, notification.Preferences{Kinds: []notification.Choice{{Kind: "no.such"}}}); err == nil {
		t.Error("an unknown kind was taken")
	} else {
		apptest.WantField(t, err, "kinds")
	}
}

// TestEvents_ReachThePeopleTheyConcern: each kind of event reaches whom it concerns, by
// default or as they chose, and nobody else.
func TestEvents_ReachThePeopleTheyConcern(t *testing.T) {
	w := apptest.NewWorld(t)
	ctx := context.Background()
	op := w.Web(t).Op // requested by A's user
	sub := w.Subscription(t)
	ends := time.Now().Add(time.Hour).UTC()
	everyone := []access.Principal{w.Admin, w.AdminA, w.UserA, w.ReaderA, w.AdminB}

	cases := []struct {
		name  string
		event outbox.Event
		opted bool // the recipient asked for the kind, which is off by default
		want  []access.Principal
		link  string
	}{
		{"operation failed", outbox.Event{Type: "deployment.failed", Subject: "web", Tenant: w.A.ID,
			Data: map[string]any{"operation": op.ID, "kind": "deploy", "status": "failed"}}, false, []access.Principal{w.UserA}, "/operations/" + op.ID.String()},
		{"operation succeeded, not asked for", outbox.Event{Type: "deployment.succeeded", Subject: "web", Tenant: w.A.ID,
			Data: map[string]any{"operation": op.ID, "kind": "deploy", "status": "succeeded"}}, false, nil, ""},
		{"operation succeeded, asked for", outbox.Event{Type: "deployment.succeeded", Subject: "web", Tenant: w.A.ID,
			Data: map[string]any{"operation": op.ID, "kind": "deploy", "status": "succeeded"}}, true, []access.Principal{w.UserA}, "/operations/" + op.ID.String()},
		{"subscription turned off", outbox.Event{Type: "subscription.disabled", Subject: "hooks", Tenant: w.A.ID,
			Data: map[string]any{"subscription": sub.ID, "reason": "failing"}}, false, []access.Principal{w.AdminA}, "/event-subscriptions/" + sub.ID.String()},
		{"elevation granted", outbox.Event{Type: "elevation.granted", Subject: "Tenant B",
			Data: map[string]any{"user_id": w.UserA.UserID, "tenant_id": w.B.ID, "role": "tenant_admin", "ends_at": ends}}, false, []access.Principal{w.UserA}, "/tenants"},
		{"scheduled backup failed", outbox.Event{Type: "backup.failed", Subject: "backup",
			Data: map[string]any{"error": "no space left on device"}}, false, []access.Principal{w.Admin}, "/admin/system"},
		{"elevation ended", outbox.Event{Type: "elevation.ended", Subject: "Tenant B",
			Data: map[string]any{"user_id": w.UserA.UserID, "tenant_id": w.B.ID, "role": "tenant_admin", "ends_at": ends}}, false, []access.Principal{w.UserA}, "/tenants"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			apptest.Must(t, w.Notices.SetPreferences(ctx, w.UserA, notification.Preferences{
				Kinds: []notification.Choice{{Kind: "deployment.succeeded", Inbox: c.opted, Email: c.opted}}}))
			apptest.Must(t, outbox.Emit(ctx, db.Queries(w.Pool), c.event))
			w.RouteEvents(t)
			for _, p := range everyone {
				list := inbox(t, w, p)
				told := len(list) > 0 && list[0].Kind == c.event.Type && list[0].ReadAt == nil
				want := false
				for _, r := range c.want {
					want = want || r.UserID == p.UserID
				}
				if told != want {
					t.Errorf("%s told %v, want %v: %+v", p.Email, told, want, list)
				}
				if told && (list[0].Link != c.link || strings.Contains(list[0].Title, "Tenant B")) {
					t.Errorf("%s's notification %+v", p.Email, list[0])
				}
				_, err := w.Notices.MarkAllRead(ctx, p)
				apptest.Must(t, err)
			}
		})
	}
}

// TestInbox_PagesCountsAndMarksRead: the inbox pages newest first by cursor, counts the
// unread, and marks one or all read; another's notification is not found.
func TestInbox_PagesCountsAndMarksRead(t *testing.T) {
	w := apptest.NewWorld(t)
	ctx := context.Background()
	for range 3 {
		apptest.Must(t, outbox.Emit(ctx, db.Queries(w.Pool), outbox.Event{Type: "elevation.ended",
			Data: map[string]any{"user_id": w.UserA.UserID, "role": "user"}}))
	}
	w.RouteEvents(t)

	first, err := w.Notices.List(ctx, w.UserA, notification.Filter{Limit: 2})
	apptest.Must(t, err)
	rest, err := w.Notices.List(ctx, w.UserA, notification.Filter{Limit: 2, After: first[1].Place()})
	apptest.Must(t, err)
	if len(first) != 2 || len(rest) != 1 || rest[0].ID == first[0].ID || rest[0].ID == first[1].ID {
		t.Fatalf("pages %+v then %+v", first, rest)
	}
	unread := func(p access.Principal) int {
		n, err := w.Notices.Unread(ctx, p)
		apptest.Must(t, err)
		return n
	}
	if n := unread(w.UserA); n != 3 {
		t.Fatalf("unread %d, want 3", n)
	}
	if _, err := w.Notices.MarkRead(ctx, w.AdminA, first[0].ID); err == nil {
		t.Fatal("A's admin marked A's user's notification read")
	}
	if _, err := w.Notices.MarkRead(ctx, w.UserA, first[0].ID); err != nil {
		t.Fatal(err)
	}
	if n := unread(w.UserA); n != 2 {
		t.Fatalf("unread %d after one was read, want 2", n)
	}
	only, err := w.Notices.List(ctx, w.UserA, notification.Filter{Unread: true})
	apptest.Must(t, err)
	if len(only) != 2 {
		t.Fatalf("unread list %+v", only)
	}
	if n, err := w.Notices.MarkAllRead(ctx, w.UserA); err != nil || n != 2 {
		t.Fatalf("marked %d (%v), want 2", n, err)
	}
	if n := unread(w.UserA); n != 0 {
		t.Fatalf("unread %d after all were read", n)
	}
}

// TestPages_HeaderCountsUnreadAndTheInboxMarksRead: every page's header shows the viewer's
// unread count, the count partial answers htmx with the same part, and the inbox page lists
// and marks read.
func TestPages_HeaderCountsUnreadAndTheInboxMarksRead(t *testing.T) {
	s := apptest.NewSite(t)
	ctx := context.Background()
	for range 2 {
		apptest.Must(t, outbox.Emit(ctx, db.Queries(s.Pool), outbox.Event{Type: "elevation.ended",
			Data: map[string]any{"user_id": s.UserA.UserID, "role": "user"}}))
	}
	s.RouteEvents(t)

	b := apptest.NewBrowser(t, s.URL)
	b.SignIn(t, "user-a@example.com", "long enough password")
	page := b.Get(t, "/deployments")
	apptest.WantStatus(t, page, http.StatusOK)
	if !strings.Contains(string(page.Body), `data-testid="notifications-count" title="unread">2<`) {
		t.Fatalf("the header shows no count of 2:\n%s", page.Body)
	}
	count := b.Get(t, "/notifications/count", "HX-Request", "true")
	if !strings.Contains(string(count.Body), `id="inbox"`) || !strings.Contains(string(count.Body), ">2<") {
		t.Fatalf("count partial: %s", count.Body)
	}
	inboxPage := b.Get(t, "/notifications")
	if n := strings.Count(string(inboxPage.Body), `data-testid="notification"`); n != 2 {
		t.Fatalf("inbox page lists %d notifications", n)
	}
	apptest.WantStatus(t, b.Post(t, "/notifications/read", url.Values{"_csrf": {b.CSRF}}), http.StatusSeeOther)
	if page := b.Get(t, "/deployments"); strings.Contains(string(page.Body), `data-testid="notifications-count"`) {
		t.Fatal("the header still counts after all were read")
	}

	b.Get(t, "/notifications/preferences")
	saved := b.Post(t, "/notifications/preferences", url.Values{"_csrf": {b.CSRF}, "inbox.approval.decided": {"on"}, "daily_digest": {"on"}})
	apptest.WantStatus(t, saved, http.StatusSeeOther)
	p, err := s.Notices.Preferences(ctx, s.UserA)
	apptest.Must(t, err)
	for _, c := range p.Kinds {
		if c.Inbox != (c.Kind == "approval.decided") || c.Email {
			t.Errorf("after the form: %+v", c)
		}
	}
	if !p.Digest {
		t.Error("the form's daily digest was not kept")
	}

	token := s.Token(t, s.AdminB)
	r := s.Call(t, "POST", "/api/v1/notifications/"+uuid.NewString()+"/read", token, nil)
	apptest.WantStatus(t, r, http.StatusNotFound)
	list := s.Call(t, "GET", "/api/v1/notifications?unread=maybe", token, nil)
	apptest.WantStatus(t, list, http.StatusUnprocessableEntity)
	prefs := s.Call(t, "PUT", "/api/v1/notifications/preferences", token, map[string]any{"kinds": []map[string]any{{"kind": "nope"}}})
	apptest.WantStatus(t, prefs, http.StatusUnprocessableEntity)
}
