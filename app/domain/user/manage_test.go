package user_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"nimbus/app/apptest"
)

const password = "long enough password"

func TestAccounts_AProviderAdminDisablesResetsAndRemovesAUser(t *testing.T) {
	s := apptest.NewSite(t)
	root, token := s.Token(t, s.Admin), s.Token(t, s.UserA)
	user := s.UserA.UserID.String()
	signedIn := func(b *apptest.Browser) bool {
		t.Helper()
		return b.Get(t, "/deployments").Status == http.StatusOK
	}
	b := apptest.NewBrowser(t, s.URL)
	apptest.WantStatus(t, b.SignIn(t, s.UserA.Email, password), http.StatusSeeOther)

	// The list links each user to their page.
	admin := apptest.NewBrowser(t, s.URL)
	apptest.WantStatus(t, admin.SignIn(t, s.Admin.Email, "correct horse battery"), http.StatusSeeOther)
	if list := admin.Get(t, "/users"); !strings.Contains(string(list.Body), `href="/users/`+user+`"`) {
		t.Fatalf("the users list does not link %s's page", s.UserA.Email)
	}
	if page := admin.Get(t, "/users/"+user); page.Status != http.StatusOK || !strings.Contains(string(page.Body), "Disable account") {
		t.Fatalf("the user's page (%d) offers no way to disable them", page.Status)
	}

	// Disabled: the session, the token and signing in all stop; enabled, the token works again.
	r := admin.Post(t, "/users/"+user+"/disable", url.Values{"_csrf": {admin.CSRF}})
	apptest.WantStatus(t, r, http.StatusSeeOther)
	if signedIn(b) {
		t.Fatal("a disabled user's session still opens pages")
	}
	apptest.WantStatus(t, s.Call(t, "GET", "/api/v1/me", token, nil), http.StatusUnauthorized)
	r = apptest.NewBrowser(t, s.URL).SignIn(t, s.UserA.Email, password)
	if r.Status != http.StatusUnprocessableEntity || !strings.Contains(string(r.Body), "this account is disabled") {
		t.Fatalf("signing in to a disabled account: %d %s", r.Status, r.Body)
	}
	if got := s.Call(t, "GET", "/api/v1/users/"+user, root, nil).JSON(t); got["disabled"] != true {
		t.Fatalf("the API does not say the user is disabled: %v", got)
	}
	apptest.WantStatus(t, s.Call(t, "PATCH", "/api/v1/users/"+user, root, map[string]any{"disabled": false}), http.StatusOK)
	apptest.WantStatus(t, s.Call(t, "GET", "/api/v1/me", token, nil), http.StatusOK)

	// Reset: the old password no longer signs in, the new one does, and sessions ended.
	apptest.WantStatus(t, b.SignIn(t, s.UserA.Email, password), http.StatusSeeOther)
	r = s.Call(t, "POST", "/api/v1/users/"+user+"/password", root, map[string]any{"password": "short"})
	if r.Status != http.StatusUnprocessableEntity || !strings.Contains(string(r.Body), "password") {
		t.Fatalf("a short reset password: %d %s", r.Status, r.Body)
	}
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/users/"+user+"/password", root, map[string]any{"password": "the reset password"}), http.StatusNoContent)
	if signedIn(b) {
		t.Fatal("a session opened with the old password outlived its reset")
	}
	apptest.WantStatus(t, apptest.NewBrowser(t, s.URL).SignIn(t, s.UserA.Email, password), http.StatusUnprocessableEntity)
	apptest.WantStatus(t, b.SignIn(t, s.UserA.Email, "the reset password"), http.StatusSeeOther)

	// Nobody locks themselves out.
	r = s.Call(t, "PATCH", "/api/v1/users/"+s.Admin.UserID.String(), root, map[string]any{"provider_admin": false})
	if r.Status != http.StatusUnprocessableEntity || !strings.Contains(string(r.Body), "another provider admin can") {
		t.Fatalf("a provider admin dropping their own role: %d %s", r.Status, r.Body)
	}
	apptest.WantStatus(t, s.Call(t, "DELETE", "/api/v1/users/"+s.Admin.UserID.String(), root, nil), http.StatusUnprocessableEntity)
	apptest.WantStatus(t, s.Call(t, "PATCH", "/api/v1/users/"+user, token, map[string]any{"disabled": true}), http.StatusForbidden)

	// Removed: gone from the list, the token refused, the email free for a new account.
	apptest.WantStatus(t, s.Call(t, "DELETE", "/api/v1/users/"+user, root, nil), http.StatusNoContent)
	apptest.WantStatus(t, s.Call(t, "GET", "/api/v1/me", token, nil), http.StatusUnauthorized)
	apptest.WantStatus(t, s.Call(t, "GET", "/api/v1/users/"+user, root, nil), http.StatusNotFound)
	if signedIn(b) {
		t.Fatal("a removed user's session still opens pages")
	}
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/users", root, map[string]any{"email": s.UserA.Email, "password": password}), http.StatusCreated)
}

func TestAccounts_ChangingOnesPasswordSignsOutTheOtherSessions(t *testing.T) {
	s := apptest.NewSite(t)
	here, there := apptest.NewBrowser(t, s.URL), apptest.NewBrowser(t, s.URL)
	for _, b := range []*apptest.Browser{here, there} {
		apptest.WantStatus(t, b.SignIn(t, s.UserA.Email, password), http.StatusSeeOther)
	}
	if page := here.Get(t, "/deployments"); !strings.Contains(string(page.Body), `href="/account"`) {
		t.Fatal("the top bar does not lead to one's account")
	}
	page := here.Get(t, "/account")
	apptest.WantStatus(t, page, http.StatusOK)
	change := func(current, next string) apptest.Reply {
		return here.Post(t, "/account/password", url.Values{"_csrf": {here.CSRF}, "current_password": {current}, "new_password": {next}})
	}
	if r := change("not my password", "a new long password"); r.Status != http.StatusUnprocessableEntity ||
		!strings.Contains(string(r.Body), "is not your current password") {
		t.Fatalf("a change with the wrong current password: %d", r.Status)
	}
	if r := change(password, "short"); r.Status != http.StatusUnprocessableEntity || !strings.Contains(string(r.Body), "at least 12 characters") {
		t.Fatalf("a change to a short password: %d", r.Status)
	}
	apptest.WantStatus(t, change(password, "a new long password"), http.StatusSeeOther)
	apptest.WantStatus(t, here.Get(t, "/deployments"), http.StatusOK)
	if there.Get(t, "/deployments").Status == http.StatusOK {
		t.Fatal("another session outlived the password change")
	}
	apptest.WantStatus(t, apptest.NewBrowser(t, s.URL).SignIn(t, s.UserA.Email, "a new long password"), http.StatusSeeOther)
}
