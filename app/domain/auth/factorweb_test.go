package auth_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"

	"nimbus/app/apptest"
	"nimbus/app/server"
)

var secretShown = regexp.MustCompile(`data-testid="factor-secret">([A-Z2-7]+)<`)

// enrolInBrowser sets up a second factor on the account page of b's user, and returns its
// secret.
func enrolInBrowser(t *testing.T, b *apptest.Browser) string {
	t.Helper()
	b.Get(t, "/account")
	apptest.WantStatus(t, b.Post(t, "/account/second-factor", url.Values{"_csrf": {b.CSRF}}), http.StatusSeeOther)
	m := secretShown.FindSubmatch(b.Get(t, "/account").Body)
	if m == nil {
		t.Fatal("the account page shows no secret")
	}
	c, err := totp.GenerateCode(string(m[1]), time.Now())
	apptest.Must(t, err)
	apptest.WantStatus(t, b.Post(t, "/account/second-factor/confirm", url.Values{"_csrf": {b.CSRF}, "code": {c}}), http.StatusCreated)
	return string(m[1])
}

func TestSecondFactor_RequiredOfProviderAdminsKeepsThemOnTheAccountPage(t *testing.T) {
	s := apptest.NewSite(t, func(d *server.Deps) { d.Info.SecondFactorForAdmins = true })
	b := apptest.NewBrowser(t, s.URL)
	r := b.SignIn(t, "root@example.com", "correct horse battery")
	if r.Status != http.StatusSeeOther || r.Header.Get("Location") != "/account" {
		t.Fatalf("a provider admin without a second factor signed in to %d %s", r.Status, r.Header.Get("Location"))
	}
	if body := string(b.Get(t, "/account").Body); !strings.Contains(body, `data-testid="factor-required"`) {
		t.Fatal("the account page does not say the second factor is required")
	}
	for _, path := range []string{"/", "/tenants", "/admin/system"} {
		if r := b.Get(t, path); r.Status != http.StatusSeeOther || r.Header.Get("Location") != "/account" {
			t.Errorf("GET %s before enrolling: %d %s, want the account page", path, r.Status, r.Header.Get("Location"))
		}
	}
	apptest.WantStatus(t, b.Get(t, "/api/v1/me"), http.StatusForbidden)
	b.Get(t, "/account")
	if r := b.Post(t, "/tokens", url.Values{"_csrf": {b.CSRF}, "name": {"escape"}}); r.Header.Get("Location") != "/account" {
		t.Errorf("making a token before enrolling: %d %s", r.Status, r.Header.Get("Location"))
	}
	// A tenant user is not asked.
	other := apptest.NewBrowser(t, s.URL)
	if r := other.SignIn(t, "user-a@example.com", "long enough password"); r.Header.Get("Location") != "/" {
		t.Fatalf("a tenant user signed in to %s", r.Header.Get("Location"))
	}

	enrolInBrowser(t, b)
	apptest.WantStatus(t, b.Get(t, "/api/v1/me"), http.StatusOK)
	r = b.Get(t, "/admin/system")
	apptest.WantStatus(t, r, http.StatusOK)
	if !strings.Contains(string(r.Body), "required of provider admins") {
		t.Error("the system page does not show the second factor's setting")
	}
}

func TestSecondFactor_ProviderAdminResetsALostOne(t *testing.T) {
	s := apptest.NewSite(t)
	user := apptest.NewBrowser(t, s.URL)
	user.SignIn(t, "user-a@example.com", "long enough password")
	enrolInBrowser(t, user)
	if r := apptest.NewBrowser(t, s.URL).SignIn(t, "user-a@example.com", "long enough password"); !strings.HasPrefix(r.Header.Get("Location"), "/login/second-factor") {
		t.Fatalf("with a second factor, the password led to %s", r.Header.Get("Location"))
	}

	path := "/users/" + s.UserA.UserID.String() + "/second-factor/reset"
	tenantAdmin := apptest.NewBrowser(t, s.URL)
	tenantAdmin.SignIn(t, "admin-a@example.com", "long enough password")
	tenantAdmin.Get(t, "/account")
	apptest.WantStatus(t, tenantAdmin.Post(t, path, url.Values{"_csrf": {tenantAdmin.CSRF}}), http.StatusForbidden)

	admin := apptest.NewBrowser(t, s.URL)
	admin.SignIn(t, "root@example.com", "correct horse battery")
	admin.Get(t, "/users/"+s.UserA.UserID.String())
	apptest.WantStatus(t, admin.Post(t, path, url.Values{"_csrf": {admin.CSRF}}), http.StatusSeeOther)
	if r := apptest.NewBrowser(t, s.URL).SignIn(t, "user-a@example.com", "long enough password"); r.Header.Get("Location") != "/" {
		t.Fatalf("after the reset, the password led to %s", r.Header.Get("Location"))
	}
	if !strings.Contains(auditActions(t, s), "user.second_factor_reset") {
		t.Errorf("the reset is not audited: %s", auditActions(t, s))
	}
	// A second reset finds nothing to reset, and says so beside the button.
	admin.Get(t, "/users/"+s.UserA.UserID.String())
	r := admin.Post(t, path, url.Values{"_csrf": {admin.CSRF}})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.Body), "has no second factor to reset") {
		t.Errorf("the second reset says: %.500s", r.Body)
	}
}
