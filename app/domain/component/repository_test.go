package component_test

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"nimbus/app/apptest"
	"nimbus/app/domain/component"
)

// linkedSite is a site with a provider-level machine component, its program in the folder
// components/machine of a repository on a real git server, linked.
type linkedSite struct {
	*apptest.Site
	admin, id, secret, token string
	repo                     *apptest.GitRepo
	program                  string
	// forge records the commit statuses reported to the link's forge.
	forge *apptest.Forge
}

func newLinkedSite(t testing.TB, cfg apptest.SiteConfig) *linkedSite {
	t.Helper()
	cfg.Backend = "file"
	s := apptest.NewSiteWith(t, cfg)
	l := &linkedSite{Site: s, admin: s.Token(t, s.Admin)}
	r := s.Call(t, "POST", "/api/v1/components", l.admin, machineJSON(t, "git-machine"))
	apptest.WantStatus(t, r, http.StatusCreated)
	l.id = r.JSON(t)["id"].(string)
	raw, err := os.ReadFile("testdata/machine.yaml")
	apptest.Must(t, err)
	l.program = string(raw)

	git := apptest.StartGitServer(t)
	l.repo = git.Repo(t, "team/infra")
	l.forge = apptest.StartForge(t)
	l.repo.Write(t, "README.md", "Infrastructure\n")
	l.repo.Commit(t, "Grace Hopper", "Start")
	l.repo.Push(t)
	link := map[string]any{"url": l.repo.URL, "path": "components/machine", "branch": "main", "user": git.User, "token": git.Password,
		"status_api": l.forge.URL}

	// Checked on save: each field that is wrong is named.
	for field, change := range map[string]map[string]any{
		"branch": {"branch": "develop"},
		"path":   {"path": "components/other"},
		"token":  {"token": "wrong"},
		"url":    {"url": "ftp://example.com/infra.git"},
	} {
		bad := map[string]any{}
		for k, v := range link {
			bad[k] = v
		}
		for k, v := range change {
			bad[k] = v
		}
		r := s.Call(t, "PUT", "/api/v1/components/"+l.id+"/repository", l.admin, bad)
		apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
		if !strings.Contains(string(r.Body), `"field":"`+field+`"`) {
			t.Fatalf("%v: the refusal does not name %s: %s", change, field, r.Body)
		}
	}
	// No program in the folder yet.
	r = s.Call(t, "PUT", "/api/v1/components/"+l.id+"/repository", l.admin, link)
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.Body), `"field":"path"`) || !strings.Contains(string(r.Body), "Pulumi.yaml") {
		t.Fatalf("a folder without a program: %s", r.Body)
	}

	l.repo.Write(t, "components/machine/Pulumi.yaml", l.program)
	l.repo.Commit(t, "Ada Lovelace", "Add the machine\n\nIt boots from a disk.")
	l.repo.Push(t)
	r = s.Call(t, "PUT", "/api/v1/components/"+l.id+"/repository", l.admin, link)
	apptest.WantStatus(t, r, http.StatusCreated)
	l.secret, l.token = r.JSON(t)["webhook_secret"].(string), git.Password
	if l.secret == "" || strings.Contains(string(r.Body), git.Password) {
		t.Fatalf("linked: %s", r.Body)
	}
	return l
}

// push sends the repository's push webhook of branch main, signed with secret.
func (l *linkedSite) push(t testing.TB, secret string) apptest.Reply {
	t.Helper()
	return l.pushed(t, secret, []byte(`{"ref":"refs/heads/main"}`))
}

// pushed sends a webhook with body, signed with secret as GitHub signs it.
func (l *linkedSite) pushed(t testing.TB, secret string, body []byte) apptest.Reply {
	t.Helper()
	return l.Send(t, "/api/v1/repository-links/"+l.link(t)["id"].(string)+"/webhook", body,
		"Content-Type", "application/json", "X-Hub-Signature-256", component.SignWebhook([]byte(secret), body))
}

func (l *linkedSite) link(t testing.TB) map[string]any {
	t.Helper()
	r := l.Call(t, "GET", "/api/v1/components/"+l.id+"/repository", l.admin, nil)
	apptest.WantStatus(t, r, http.StatusOK)
	return r.JSON(t)
}

// waitSync waits for the sync of ref at commit to end, and returns it.
func (l *linkedSite) waitSync(t testing.TB, ref, commit string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		for _, s := range l.link(t)["syncs"].([]any) {
			s := s.(map[string]any)
			if s["ref"] == ref && s["commit"] == commit && s["finished_at"] != nil {
				return s
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s at %s was not synced in 3 minutes: %v", ref, commit, l.link(t))
	return nil
}

func TestRepository_APushBecomesTheDraftWithItsCheck(t *testing.T) {
	l := newLinkedSite(t, apptest.SiteConfig{})
	head := l.repo.Head(t)
	sync := l.waitSync(t, "main", head) // linking takes the branch's commit at once
	if sync["status"] != "synced" {
		t.Fatalf("sync: %v", sync)
	}
	link := l.link(t)
	if link["draft_commit"] != head || link["draft_author"] != "Ada Lovelace <ada.lovelace@example.com>" ||
		link["draft_message"] != "Add the machine\n\nIt boots from a disk." {
		t.Fatalf("the draft's commit: %v", link)
	}
	if got := l.WaitCheck(t, l.admin, sync["check_id"].(string)); got["status"] != "succeeded" {
		t.Fatalf("the engine's check of the pushed program: %v %s", got["status"], got["output"])
	}

	// A push of a new commit, told by the webhook, becomes the draft.
	changed := strings.Replace(l.program, "default: 2\n", "default: 4\n", 1)
	l.repo.Write(t, "components/machine/Pulumi.yaml", changed)
	second := l.repo.Commit(t, "Ada Lovelace", "Four cores")
	l.repo.Push(t)
	apptest.WantStatus(t, l.push(t, l.secret), http.StatusAccepted)
	if s := l.waitSync(t, "main", second); s["status"] != "synced" {
		t.Fatalf("second push: %v", s)
	}
	r := l.Call(t, "GET", "/api/v1/components/"+l.id, l.admin, nil)
	if r.JSON(t)["code"] != changed {
		t.Fatalf("the draft is not the pushed program: %s", r.Body)
	}

	// The component's page says where its program comes from.
	page := l.Call(t, "GET", "/components/"+l.id, l.admin, nil)
	if !strings.Contains(string(page.Body), `data-testid="repository-section"`) || !strings.Contains(string(page.Body), l.repo.URL+" · components/machine/Pulumi.yaml · main") {
		t.Fatal("the component's page has no repository section naming the program's place")
	}

	// The draft page says where it came from, and the program is changed in git alone.
	page = l.Call(t, "GET", "/components/"+l.id+"/edit", l.admin, nil)
	apptest.WantStatus(t, page, http.StatusOK)
	for _, want := range []string{`data-testid="linked-draft"`, second[:12], "Four cores", "Ada Lovelace", "components/machine/Pulumi.yaml on branch main"} {
		if !strings.Contains(string(page.Body), want) {
			t.Fatalf("the editor does not show %q", want)
		}
	}
	r = l.Call(t, "PATCH", "/api/v1/components/"+l.id, l.admin, map[string]any{"code": l.program + "# edited here\n"})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.Body), `"rule":"linked"`) || !strings.Contains(string(r.Body), l.repo.URL) {
		t.Fatalf("an edit of a linked program: %s", r.Body)
	}

	// The token is kept sealed alone: in no table in the clear, in no log, on no page.
	if held := l.TablesHolding(t, l.token); len(held) > 0 {
		t.Fatalf("the token is in the clear in %v", held)
	}
	if strings.Contains(l.Logs.String(), l.token) || strings.Contains(string(l.Call(t, "GET", "/components/"+l.id+"/repository", l.admin, nil).Body), l.token) {
		t.Fatal("the token is in the log or on the repository page")
	}
}

func TestRepository_APushIsFoundByThePoll(t *testing.T) {
	l := newLinkedSite(t, apptest.SiteConfig{RepositoryPoll: time.Second})
	l.waitSync(t, "main", l.repo.Head(t))
	l.repo.Write(t, "components/machine/Pulumi.yaml", l.program+"# polled\n")
	polled := l.repo.Commit(t, "Ada Lovelace", "No webhook")
	l.repo.Push(t)
	if s := l.waitSync(t, "main", polled); s["status"] != "synced" {
		t.Fatalf("polled: %v", s)
	}
}

func TestRepository_ABrokenPushIsRefusedWithFileLineAndRule(t *testing.T) {
	l := newLinkedSite(t, apptest.SiteConfig{})
	l.waitSync(t, "main", l.repo.Head(t))
	before := l.Call(t, "GET", "/api/v1/components/"+l.id, l.admin, nil).JSON(t)["code"]

	l.repo.Write(t, "components/machine/Pulumi.yaml", "name: simcloud-machine\nruntime: yaml\nresorces: {}\n")
	broken := l.repo.Commit(t, "Ada Lovelace", "Typo")
	l.repo.Push(t)
	apptest.WantStatus(t, l.push(t, l.secret), http.StatusAccepted)
	s := l.waitSync(t, "main", broken)
	if s["status"] != "refused" {
		t.Fatalf("a broken program: %v", s)
	}
	if got := l.Call(t, "GET", "/api/v1/components/"+l.id, l.admin, nil).JSON(t)["code"]; got != before {
		t.Fatal("a broken program became the draft")
	}
	page := l.Call(t, "GET", "/components/"+l.id+"/repository", l.admin, nil)
	apptest.WantStatus(t, page, http.StatusOK)
	// The editor's words for the same program: the line, the column, the rule.
	if !strings.Contains(string(page.Body), "components/machine/Pulumi.yaml line 3, column 1 (pulumi_yaml): unknown top-level key &#34;resorces&#34;") {
		t.Fatalf("the repository page does not say what is wrong where:\n%s", page.Body)
	}
}

func TestRepository_AWronglySignedWebhookChangesNothing(t *testing.T) {
	l := newLinkedSite(t, apptest.SiteConfig{})
	l.waitSync(t, "main", l.repo.Head(t))
	l.repo.Write(t, "components/machine/Pulumi.yaml", l.program+"# pushed\n")
	pushed := l.repo.Commit(t, "Ada Lovelace", "Pushed")
	l.repo.Push(t)
	jobs := func() (n int) {
		apptest.Must(t, l.Pool.QueryRow(context.Background(), `SELECT count(*) FROM river_job WHERE kind = 'repository_sync'`).Scan(&n))
		return n
	}
	before := jobs()
	for _, r := range []apptest.Reply{
		l.push(t, "not the secret"),
		l.Send(t, "/api/v1/repository-links/"+l.link(t)["id"].(string)+"/webhook", []byte(`{}`)),
	} {
		apptest.WantStatus(t, r, http.StatusUnauthorized)
	}
	if n := jobs(); n != before {
		t.Fatalf("%d syncs queued by a wrongly signed webhook", n-before)
	}
	if link := l.link(t); link["draft_commit"] == pushed || len(link["syncs"].([]any)) != 1 {
		t.Fatalf("a wrongly signed webhook changed the link: %v", link)
	}
}

func TestRepository_ATagPublishesItsCommitOnce(t *testing.T) {
	l := newLinkedSite(t, apptest.SiteConfig{})
	first := l.repo.Head(t)
	l.waitSync(t, "main", first)
	l.repo.Tag(t, "v1.2.0", "Faster machines\n\nFour cores by default.", first)
	// A tag the pattern does not match publishes nothing.
	l.repo.Tag(t, "nightly", "Not a release", first)
	l.repo.Write(t, "components/machine/Pulumi.yaml", l.program+"# after the release\n")
	later := l.repo.Commit(t, "Ada Lovelace", "After the release")
	l.repo.Push(t)
	apptest.WantStatus(t, l.push(t, l.secret), http.StatusAccepted)
	if s := l.waitSync(t, "v1.2.0", first); s["status"] != "synced" || s["version"] != 1.0 {
		t.Fatalf("tag: %v", s)
	}
	r := l.Call(t, "GET", "/api/v1/components/"+l.id+"/versions/1", l.admin, nil)
	apptest.WantStatus(t, r, http.StatusOK)
	v := r.JSON(t)
	if v["release"] != "1.2.0" || v["changelog"] != "Faster machines\n\nFour cores by default." || v["code"] != l.program {
		t.Fatalf("version 1: release %v, changelog %q, code of the tagged commit %v", v["release"], v["changelog"], v["code"] == l.program)
	}

	// Moved to another commit after it was published, the tag is refused, and says why.
	l.repo.Tag(t, "v1.2.0", "Faster machines, again", later)
	l.repo.Push(t)
	apptest.WantStatus(t, l.push(t, l.secret), http.StatusAccepted)
	s := l.waitSync(t, "v1.2.0", later)
	if s["status"] != "refused" || !strings.Contains(s["reason"].(string), "has since moved") {
		t.Fatalf("a moved tag: %v", s)
	}
	if n := l.VersionCount(t, l.admin, l.id); n != 1 {
		t.Fatalf("%d versions after the tag moved, want 1", n)
	}
	page := l.Call(t, "GET", "/components/"+l.id+"/repository", l.admin, nil)
	if !strings.Contains(string(page.Body), "has since moved") || strings.Contains(string(page.Body), "Not a release") {
		t.Fatal("the repository page does not show the refused tag, or shows a tag outside the pattern")
	}

	// Tags found together are published in the order of their versions, not of their names.
	l.repo.Tag(t, "v1.10.0", "Ten", later)
	l.repo.Tag(t, "v1.9.0", "Nine", first)
	l.repo.Push(t)
	apptest.WantStatus(t, l.push(t, l.secret), http.StatusAccepted)
	l.waitSync(t, "v1.10.0", later)
	for n, release := range map[string]string{"2": "1.9.0", "3": "1.10.0"} {
		if got := l.Call(t, "GET", "/api/v1/components/"+l.id+"/versions/"+n, l.admin, nil).JSON(t)["release"]; got != release {
			t.Errorf("version %s is release %v, want %s", n, got, release)
		}
	}
}

func TestRepository_LinkAndUnlinkFromItsPage(t *testing.T) {
	s := apptest.NewSite(t)
	admin := s.Token(t, s.Admin)
	r := s.Call(t, "POST", "/api/v1/components", admin, machineJSON(t, "paged-machine"))
	apptest.WantStatus(t, r, http.StatusCreated)
	id := r.JSON(t)["id"].(string)
	git := apptest.StartGitServer(t)
	repo := git.Repo(t, "infra")
	raw, err := os.ReadFile("testdata/machine.yaml")
	apptest.Must(t, err)
	repo.Write(t, "Pulumi.yaml", string(raw))
	repo.Commit(t, "Ada Lovelace", "The machine")
	repo.Push(t)

	form := url.Values{"url": {repo.URL}, "branch": {"release"}, "user": {git.User}, "token": {git.Password}}
	r = s.Submit(t, "/components/"+id+"/repository", admin, form)
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.Body), `data-field-error="branch"`) || strings.Contains(string(r.Body), git.Password) {
		t.Fatal("the form does not say what is wrong with the branch, or sends the token back")
	}
	form.Set("branch", "main")
	form.Set("forge", "sourcehut")
	r = s.Submit(t, "/components/"+id+"/repository", admin, form)
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	if !strings.Contains(string(r.Body), `data-field-error="forge"`) {
		t.Fatal("the form does not say what is wrong with the forge")
	}
	form.Set("forge", "gitlab")
	r = s.Submit(t, "/components/"+id+"/repository", admin, form)
	apptest.WantStatus(t, r, http.StatusOK)
	if !strings.Contains(string(r.Body), `data-testid="webhook-secret"`) || !strings.Contains(string(r.Body), "/api/v1/repository-links/") {
		t.Fatal("linking does not show the webhook's address and secret")
	}
	// Shown once: the page read again holds the link, not the secret.
	page := s.Call(t, "GET", "/components/"+id+"/repository", admin, nil)
	if strings.Contains(string(page.Body), `data-testid="webhook-secret"`) || !strings.Contains(string(page.Body), `data-testid="repository"`) {
		t.Fatal("the repository page shows the secret again, or not the link")
	}
	// The statuses go to GitLab's API on the repository's host, as none was set.
	if !strings.Contains(string(page.Body), "gitlab · "+strings.TrimSuffix(repo.URL, "/infra.git")+"/api/v4") {
		t.Fatal("the repository page does not say where the previews' statuses go")
	}
	apptest.WantStatus(t, s.Submit(t, "/components/"+id+"/repository/delete", admin, url.Values{}), http.StatusSeeOther)
	apptest.WantStatus(t, s.Call(t, "GET", "/api/v1/components/"+id+"/repository", admin, nil), http.StatusNotFound)
}
