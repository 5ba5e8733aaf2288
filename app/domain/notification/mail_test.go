package notification_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"nimbus/app/apptest"
	"nimbus/app/domain/notification"
	"nimbus/app/kernel/freeport"
	"nimbus/app/kernel/outbox"
	"nimbus/db"
)

const base = "https://nimbus.example.com"

// setMail points the site's mail at host:port, as the operator does through the API.
func setMail(t *testing.T, s *apptest.Site, root, host string, port int) {
	t.Helper()
	r := s.Call(t, "PUT", "/api/v1/mail-settings", root, map[string]any{"host": host, "port": strconv.Itoa(port), "tls": "none",
		"username": "nimbus", "password": "smtp secret", "from_address": "nimbus@example.com", "base_url": base + "/"})
	apptest.WantStatus(t, r, http.StatusOK)
}

// TestApprovalRequested_MailsEachApproverAndNobodyElse: a destroy waiting for a tenant admin of
// A is mailed to those who may decide it, linking to the request, and to nobody else; an
// approver who turned its mail off gets none, and still finds it in the inbox.
func TestApprovalRequested_MailsEachApproverAndNobodyElse(t *testing.T) {
	g := apptest.NewGated(t, apptest.SiteConfig{Backend: "file"})
	smtp := apptest.StartMailServer(t)
	setMail(t, g.Site, g.As.Root, smtp.Host, smtp.Port)
	prefs := g.Call(t, "PUT", "/api/v1/notifications/preferences", g.As.Admin2,
		map[string]any{"kinds": []map[string]any{{"kind": "approval.requested", "inbox": true, "email": false}}})
	apptest.WantStatus(t, prefs, http.StatusOK)

	g.Policy(t, g.As.Admin, map[string]any{"scope": "environment", "scope_id": g.Env, "operations": []string{"destroy"},
		"approver_role": "tenant_admin"})
	_, request := g.Destroy(t)
	link := base + "/approvals/" + request["id"].(string)

	var mails []apptest.Mail
	apptest.WaitFor(t, "the provider admin's mail", func() bool {
		mails = smtp.Mails(t)
		return len(mails) > 0
	})
	if len(mails) != 1 || len(mails[0].To) != 1 || mails[0].To[0] != "root@example.com" {
		t.Fatalf("mails: %+v", mails)
	}
	if m := mails[0]; !strings.Contains(m.Subject, "destroy of web") || !strings.Contains(m.Text, link) ||
		strings.Contains(m.Text, "smtp secret") || strings.Contains(m.Text, "Tenant B") {
		t.Fatalf("the mail: %+v", m)
	}
	// Every mail the request made is the one that arrived: none waits to go to anyone else.
	var made int
	apptest.Must(t, g.Pool.QueryRow(context.Background(), `SELECT count(*) FROM notification_mails`).Scan(&made))
	if made != 1 {
		t.Fatalf("%d mails were made, want 1", made)
	}
	list := g.Call(t, "GET", "/api/v1/notifications", g.As.Admin2, nil).JSON(t)["notifications"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["link"] != "/approvals/"+request["id"].(string) {
		t.Fatalf("the second admin's inbox: %v", list)
	}
}

// TestMail_AnUnreachableServerLeavesAFailedDeliveryInView: a mail whose every attempt fails
// ends failed, said on its notification (which stays in the inbox) and on the operator's page.
func TestMail_AnUnreachableServerLeavesAFailedDeliveryInView(t *testing.T) {
	s := apptest.NewSiteWith(t, apptest.SiteConfig{Backend: "file", MailAttempts: 2})
	root := s.Token(t, s.Admin)
	closed, err := freeport.Pick(1)
	apptest.Must(t, err)
	setMail(t, s, root, "127.0.0.1", closed[0])
	apptest.Must(t, outbox.Emit(context.Background(), db.Queries(s.Pool), outbox.Event{Type: "elevation.ended",
		Data: map[string]any{"user_id": s.UserA.UserID, "role": "tenant_admin"}}))

	user := s.Token(t, s.UserA)
	var n map[string]any
	apptest.WaitFor(t, "the mail to end failed", func() bool {
		list := s.Call(t, "GET", "/api/v1/notifications", user, nil).JSON(t)["notifications"].([]any)
		if len(list) == 1 {
			n = list[0].(map[string]any)
		}
		return n != nil && n["mail_failed"] != nil
	})
	if n["read_at"] != nil || !strings.Contains(n["mail_failed"].(string), "127.0.0.1") {
		t.Fatalf("the notification: %v", n)
	}
	failed := s.Call(t, "GET", "/api/v1/mail-settings/failed", root, nil).JSON(t)["failed"].([]any)
	if len(failed) != 1 || failed[0].(map[string]any)["to"] != "user-a@example.com" || failed[0].(map[string]any)["attempts"] != 2.0 {
		t.Fatalf("failed deliveries: %v", failed)
	}
	b := apptest.NewBrowser(t, s.URL)
	b.SignIn(t, "root@example.com", "correct horse battery")
	if page := b.Get(t, "/admin/mail"); !strings.Contains(string(page.Body), `data-testid="failed-mails"`) || !strings.Contains(string(page.Body), "user-a@example.com") {
		t.Fatalf("the mail page shows no failed delivery: %s", page.Body)
	}
	ua := apptest.NewBrowser(t, s.URL)
	ua.SignIn(t, "user-a@example.com", "long enough password")
	if page := ua.Get(t, "/notifications"); !strings.Contains(string(page.Body), `data-testid="mail-failed"`) {
		t.Fatalf("the inbox shows no failed mail: %s", page.Body)
	}
}

// TestMailPage_BadInputAndAnUnreachableServerNameTheField: the settings page answers bad input
// and a test mail the server cannot take with the field at fault, never a 500; a test mail to
// a server that takes it arrives.
func TestMailPage_BadInputAndAnUnreachableServerNameTheField(t *testing.T) {
	s := apptest.NewSite(t)
	smtp := apptest.StartMailServer(t)
	b := apptest.NewBrowser(t, s.URL)
	b.SignIn(t, "root@example.com", "correct horse battery")
	b.Get(t, "/admin/mail")
	form := url.Values{"_csrf": {b.CSRF}, "host": {"127.0.0.1"}, "port": {"99999"}, "tls": {"none"}, "from_address": {"not an address"},
		"base_url": {"nimbus.example.com"}}
	r := b.Post(t, "/admin/mail", form)
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	for _, field := range []string{"port", "from_address", "base_url"} {
		if !strings.Contains(string(r.Body), `data-field-error="`+field+`"`) {
			t.Errorf("the page names no error on %s", field)
		}
	}

	closed, err := freeport.Pick(1)
	apptest.Must(t, err)
	for _, port := range []int{closed[0], smtp.Port} {
		form = url.Values{"_csrf": {b.CSRF}, "host": {"127.0.0.1"}, "port": {strconv.Itoa(port)}, "tls": {"none"},
			"from_address": {"nimbus@example.com"}, "base_url": {base}}
		apptest.WantStatus(t, b.Post(t, "/admin/mail", form), http.StatusSeeOther)
		b.Get(t, "/admin/mail")
		r = b.Post(t, "/admin/mail/test", url.Values{"_csrf": {b.CSRF}, "to": {"ops@example.com"}})
		if port == closed[0] {
			apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
			if !strings.Contains(string(r.Body), "cannot reach 127.0.0.1:"+strconv.Itoa(port)) {
				t.Fatalf("the page does not say the host cannot be reached: %s", r.Body)
			}
			continue
		}
		apptest.WantStatus(t, r, http.StatusSeeOther)
	}
	if got := smtp.To(t, "ops@example.com"); len(got) != 1 || !strings.Contains(got[0].Text, base+"/notifications") {
		t.Fatalf("test mails: %+v", got)
	}
	user := s.Token(t, s.UserA)
	apptest.WantStatus(t, s.Call(t, "GET", "/api/v1/mail-settings", user, nil), http.StatusForbidden)
}

// TestDigest_OneMailOfWhatIsUnread: a reader who takes a daily digest gets no single mails,
// and once a day one mail listing what they have not read.
func TestDigest_OneMailOfWhatIsUnread(t *testing.T) {
	s := apptest.NewSite(t)
	ctx := context.Background()
	smtp := apptest.StartMailServer(t)
	setMail(t, s, s.Token(t, s.Admin), smtp.Host, smtp.Port)
	apptest.Must(t, s.Notices.SetPreferences(ctx, s.UserA, notification.Preferences{Digest: true,
		Kinds: []notification.Choice{{Kind: "elevation.granted", Inbox: true, Email: false}}}))
	for _, e := range []struct{ typ, role string }{{"elevation.ended", "user"}, {"elevation.ended", "tenant_admin"}, {"elevation.granted", "user"}} {
		apptest.Must(t, outbox.Emit(ctx, db.Queries(s.Pool), outbox.Event{Type: e.typ,
			Data: map[string]any{"user_id": s.UserA.UserID, "role": e.role, "ends_at": time.Now().Add(time.Hour)}}))
	}
	user := s.Token(t, s.UserA)
	apptest.WaitFor(t, "the three notifications", func() bool {
		return len(s.Call(t, "GET", "/api/v1/notifications", user, nil).JSON(t)["notifications"].([]any)) == 3
	})
	// A day passes.
	_, err := s.Pool.Exec(ctx, `UPDATE notification_digests SET sent_until = sent_until - interval '25 hours'`)
	apptest.Must(t, err)
	_, err = s.Jobs.Insert(ctx, notification.DigestArgs{}, nil)
	apptest.Must(t, err)
	var mails []apptest.Mail
	apptest.WaitFor(t, "the digest", func() bool {
		mails = smtp.To(t, "user-a@example.com")
		return len(mails) > 0
	})
	// The granted elevation, which A's user does not take by mail, is left out.
	if len(mails) != 1 || !strings.Contains(mails[0].Subject, "2 unread") || !strings.Contains(mails[0].Text, "Tenant admin ended") ||
		strings.Contains(mails[0].Text, "You were made") {
		t.Fatalf("mails: %+v", mails)
	}
}
