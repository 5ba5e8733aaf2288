package gitremote_test

import (
	"errors"
	"strings"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/kernel/egress"
	"nimbus/app/platform/gitremote"
)

func TestPostStatus_EachForgeInItsOwnForm(t *testing.T) {
	forge := apptest.StartForge(t)
	f := gitremote.Fetcher{AllowHTTP: true, Reach: egress.Policy{AllowPrivate: true}}
	cases := []struct {
		forge             gitremote.Forge
		path, auth, token string
		state, context    string
	}{
		{gitremote.GitHub, "/repos/team/infra/statuses/abc", "Bearer t0ken", "", "failure", "context"},
		{gitremote.Gitea, "/repos/team/infra/statuses/abc", "Bearer t0ken", "", "failure", "context"},
		// GitLab names the project by its path, escaped, and a failure "failed".
		{gitremote.GitLab, "/projects/group%2Fsub%2Finfra/statuses/abc", "", "t0ken", "failed", "name"},
	}
	for _, c := range cases {
		repo := "https://git.example.com/team/infra.git"
		if c.forge == gitremote.GitLab {
			repo = "https://gitlab.example.com/group/sub/infra.git"
		}
		err := f.PostStatus(t.Context(), gitremote.Status{Forge: c.forge, API: forge.URL, Repo: repo, Commit: "abc", State: gitremote.Failure,
			Context: "nimbus/staging/web", Description: strings.Repeat("é", 200), Token: "t0ken"})
		if err != nil {
			t.Fatalf("%s: %v", c.forge, err)
		}
		got := forge.Statuses()[len(forge.Statuses())-1]
		if got.Path != strings.ReplaceAll(c.path, "%2F", "/") && got.Path != c.path || got.Authorization != c.auth || got.Token != c.token ||
			got.Body["state"] != c.state || got.Body[c.context] != "nimbus/staging/web" {
			t.Errorf("%s: posted %+v", c.forge, got)
		}
		if d := got.Body["description"]; len([]rune(d)) > 140 || !strings.HasSuffix(d, "...") || strings.ContainsRune(d, '\uFFFD') {
			t.Errorf("%s: a long description is not cut to 140 characters between characters: %q", c.forge, d)
		}
	}
}

func TestPostStatus_HeldToTheAddressesTheTenantMayReach(t *testing.T) {
	forge := apptest.StartForge(t)
	f := gitremote.Fetcher{AllowHTTP: true} // loopback, where the receiver is, is closed
	err := f.PostStatus(t.Context(), gitremote.Status{Forge: gitremote.GitHub, API: forge.URL, Repo: "https://github.com/team/infra",
		Commit: "abc", State: gitremote.Pending, Context: "nimbus", Token: "t0ken"})
	if !errors.Is(err, gitremote.ErrNotAllowed) {
		t.Fatalf("a status API on loopback: %v", err)
	}
	if n := len(forge.Statuses()); n != 0 {
		t.Fatalf("%d statuses reached an address the tenant may not reach", n)
	}
	if got := gitremote.APIOf(gitremote.ForgeOf("https://github.com/team/infra.git"), "https://github.com/team/infra.git"); got != "https://api.github.com" {
		t.Errorf("GitHub's API is %s", got)
	}
	if got := gitremote.APIOf(gitremote.ForgeOf("https://gitlab.example.com/g/infra.git"), "https://gitlab.example.com/g/infra.git"); got != "https://gitlab.example.com/api/v4" {
		t.Errorf("a GitLab's API is %s", got)
	}
}
