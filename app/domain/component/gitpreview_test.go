package component_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/domain/component"
	"nimbus/app/orchestration/environment"
)

// staged is a linked site whose component has version 1 (tag v1.0.0) deployed twice into
// tenant A's staging environment: stage, which the tests opt in, and plain, which stays out.
type staged struct {
	*linkedSite
	env, stage, plain  string
	user, admin, other string
}

func newStaged(t *testing.T) *staged {
	t.Helper()
	l := newLinkedSite(t, apptest.SiteConfig{})
	first := l.repo.Head(t)
	l.waitSync(t, "main", first)
	l.repo.Tag(t, "v1.0.0", "First release", first)
	l.repo.Push(t)
	apptest.WantStatus(t, l.push(t, l.secret), http.StatusAccepted)
	if s := l.waitSync(t, "v1.0.0", first); s["status"] != "synced" {
		t.Fatalf("tag v1.0.0: %v", s)
	}
	env, err := environment.NewService(l.Pool).Create(t.Context(), l.AdminA, l.A.ID, "staging")
	apptest.Must(t, err)
	s := &staged{linkedSite: l, env: env.ID.String(), user: l.Token(t, l.UserA), admin: l.Token(t, l.AdminA), other: l.Token(t, l.AdminB)}
	s.stage, s.plain = s.deploy(t, "stage"), s.deploy(t, "plain")
	return s
}

// deploy deploys version 1 as name and waits until it is deployed.
func (s *staged) deploy(t *testing.T, name string) string {
	t.Helper()
	r := s.Call(t, "POST", "/api/v1/deployments", s.user, map[string]any{"component_id": s.id, "environment_id": s.env, "name": name,
		"parameters": map[string]any{"name": name + "-1"}})
	apptest.WantStatus(t, r, http.StatusAccepted)
	if op := s.WaitOperation(t, s.user, r.JSON(t)["operation"].(map[string]any)["id"].(string)); op["status"] != "succeeded" {
		t.Fatalf("deploy %s: %v", name, op)
	}
	return r.JSON(t)["deployment"].(map[string]any)["id"].(string)
}

// optIn sets the stage deployment's opt-ins as tenant admin A; another tenant cannot.
func (s *staged) optIn(t *testing.T, optIns map[string]any) {
	t.Helper()
	apptest.WantStatus(t, s.Call(t, "PUT", "/api/v1/deployments/"+s.stage+"/git", s.other, optIns), http.StatusNotFound)
	r := s.Call(t, "PUT", "/api/v1/deployments/"+s.stage+"/git", s.admin, optIns)
	apptest.WantStatus(t, r, http.StatusOK)
	for k, v := range optIns {
		if r.JSON(t)[k] != v {
			t.Fatalf("%s not set: %s", k, r.Body)
		}
	}
}

// operations lists a deployment's operations, newest first.
func (s *staged) operations(t *testing.T, deployment string) []map[string]any {
	t.Helper()
	var list struct{ Operations []map[string]any }
	apptest.Must(t, json.Unmarshal(s.Call(t, "GET", "/api/v1/operations?deployment_id="+deployment, s.user, nil).Body, &list))
	return list.Operations
}

func TestRepository_APullRequestIsPreviewedOnTheOptedInDeploymentAndReported(t *testing.T) {
	s := newStaged(t)
	s.optIn(t, map[string]any{"preview_from_git": true, "upgrade_on_publish": true})
	// Its page shows the opt-ins, and sets them.
	page := string(s.Call(t, "GET", "/deployments/"+s.stage, s.user, nil).Body)
	if !strings.Contains(page, `data-testid="git-form"`) || !strings.Contains(page, `name="preview_from_git" value="on" checked`) {
		t.Fatal("the deployment's page does not show that it previews changes from git")
	}
	apptest.WantStatus(t, s.Submit(t, "/deployments/"+s.stage+"/git", s.admin, url.Values{"preview_from_git": {"on"}}), http.StatusSeeOther)
	if d := s.Call(t, "GET", "/api/v1/deployments/"+s.stage, s.user, nil).JSON(t); d["preview_from_git"] != true || d["upgrade_on_publish"] != false {
		t.Fatalf("the form did not set the opt-ins: %v", d)
	}

	// The deployment's parameters keep their values: the program itself must change for the
	// preview to show a change.
	s.repo.Switch(t, "more-cores")
	s.repo.Write(t, "components/machine/Pulumi.yaml", strings.Replace(s.program, "memoryMb: ${memory_mb}", "memoryMb: 4096", 1))
	commit := s.repo.Commit(t, "Ada Lovelace", "More memory")
	s.repo.PushBranch(t, "more-cores")
	body := []byte(`{"action":"opened","pull_request":{"head":{"ref":"more-cores","sha":"` + commit + `"}}}`)
	apptest.WantStatus(t, s.pushed(t, s.secret, body), http.StatusAccepted)

	// Pending as soon as the preview is queued, then its result, each linking to its page.
	at, where := "/repos/team/infra/statuses/"+commit, "nimbus/staging/stage"
	pending := s.forge.WaitStatus(t, at, where, "pending")
	if pending.Authorization != "Bearer "+s.token || !strings.HasPrefix(pending.Body["target_url"], apptest.PublicURL+"/operations/") {
		t.Fatalf("pending status: %+v", pending)
	}
	done := s.forge.WaitStatus(t, at, where, "success")
	if done.Body["target_url"] != pending.Body["target_url"] || !strings.Contains(done.Body["description"], "1 to update") {
		t.Fatalf("success status: %+v", done)
	}
	op := s.WaitOperation(t, s.user, strings.TrimPrefix(done.Body["target_url"], apptest.PublicURL+"/operations/"))
	source, _ := op["source"].(map[string]any)
	if op["kind"] != "preview" || op["deployment_id"] != s.stage || source["ref"] != "more-cores" || source["commit"] != commit {
		t.Fatalf("the preview: %v", op)
	}
	// A preview of a branch is not a version: its page says whose program it ran, and it
	// cannot be applied.
	page = string(s.Call(t, "GET", "/operations/"+op["id"].(string), s.user, nil).Body)
	if !strings.Contains(page, `data-testid="operation-source"`) || !strings.Contains(page, "more-cores") || !strings.Contains(page, commit[:12]) {
		t.Fatal("the preview's page does not say which branch and commit it ran")
	}
	r := s.Call(t, "POST", "/api/v1/operations/"+op["id"].(string)+"/apply", s.admin, nil)
	apptest.WantProblem(t, r, "operation", "git")

	// The branch changed neither the draft nor the versions, nor the deployment not opted in.
	if got := s.Call(t, "GET", "/api/v1/components/"+s.id, s.admin, nil).JSON(t)["code"]; got != s.program {
		t.Fatal("a pull request's program became the draft")
	}
	if n := s.VersionCount(t, s.admin, s.id); n != 1 {
		t.Fatalf("%d versions after a pull request, want 1", n)
	}
	if ops := s.operations(t, s.plain); len(ops) != 1 {
		t.Fatalf("the deployment not opted in has %d operations, want its deploy alone", len(ops))
	}
	for _, st := range s.forge.Statuses() {
		if st.Body["context"] == "nimbus/staging/plain" {
			t.Fatalf("a status for the deployment not opted in: %+v", st)
		}
	}
}

func TestRepository_ABrokenBranchFailsItsStatusNamingFileAndRule(t *testing.T) {
	l := newLinkedSite(t, apptest.SiteConfig{})
	l.waitSync(t, "main", l.repo.Head(t))
	l.repo.Switch(t, "typo")
	l.repo.Write(t, "components/machine/Pulumi.yaml", "name: simcloud-machine\nruntime: yaml\nresorces: {}\n")
	commit := l.repo.Commit(t, "Ada Lovelace", "Typo")
	l.repo.PushBranch(t, "typo")
	apptest.WantStatus(t, l.pushed(t, l.secret, []byte(`{"ref":"refs/heads/typo"}`)), http.StatusAccepted)

	failed := l.forge.WaitStatus(t, "/repos/team/infra/statuses/"+commit, "nimbus/git-machine", "failure")
	if want := "components/machine/Pulumi.yaml line 3, column 1 (pulumi_yaml)"; !strings.Contains(failed.Body["description"], want) {
		t.Fatalf("the failure does not say %q: %+v", want, failed)
	}
	if s := l.waitSync(t, "typo", commit); s["status"] != "refused" {
		t.Fatalf("the broken branch: %v", s)
	}
	if got := l.Call(t, "GET", "/api/v1/components/"+l.id, l.admin, nil).JSON(t)["code"]; got != l.program {
		t.Fatal("a broken branch changed the draft")
	}
}

func TestRepository_ATagUpgradesTheOptedInDeploymentAfterItsApproval(t *testing.T) {
	s := newStaged(t)
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/approval-policies", s.admin, map[string]any{"scope": "environment", "scope_id": s.env,
		"operations": []string{"upgrade"}, "approver_role": "tenant_admin"}), http.StatusCreated)
	s.optIn(t, map[string]any{"preview_from_git": false, "upgrade_on_publish": true})

	s.repo.Write(t, "components/machine/Pulumi.yaml", strings.Replace(s.program, "default: 2\n", "default: 4\n", 1))
	merged := s.repo.Commit(t, "Ada Lovelace", "Merge four cores")
	s.repo.Tag(t, "v1.1.0", "Four cores by default", merged)
	s.repo.Push(t)
	apptest.WantStatus(t, s.push(t, s.secret), http.StatusAccepted)
	if sync := s.waitSync(t, "v1.1.0", merged); sync["status"] != "synced" || sync["version"] != 2.0 {
		t.Fatalf("tag v1.1.0: %v", sync)
	}

	// The upgrade waits for the environment's approval, as one asked for by a person would.
	var upgrade map[string]any
	apptest.WaitFor(t, "the opted-in deployment's upgrade to wait for approval", func() bool {
		for _, op := range s.operations(t, s.stage) {
			if op["kind"] == "upgrade" && op["status"] == "awaiting_approval" {
				upgrade = op
			}
		}
		return upgrade != nil
	})
	if upgrade["version"] != 2.0 {
		t.Fatalf("the upgrade brings %v, want version 2", upgrade["version"])
	}
	var list struct{ Approvals []map[string]any }
	apptest.Must(t, json.Unmarshal(s.Call(t, "GET", "/api/v1/approvals", s.admin, nil).Body, &list))
	request := ""
	for _, a := range list.Approvals {
		if a["operation_id"] == upgrade["id"] {
			request = a["id"].(string)
		}
	}
	if request == "" {
		t.Fatalf("no approval request for the upgrade: %v", list.Approvals)
	}
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/approvals/"+request+"/approve", s.admin, map[string]any{"comment": "ship it"}), http.StatusOK)
	if op := s.WaitOperation(t, s.user, upgrade["id"].(string)); op["status"] != "succeeded" {
		t.Fatalf("the upgrade: %v", op)
	}
	if v := s.Call(t, "GET", "/api/v1/deployments/"+s.stage, s.user, nil).JSON(t)["version"]; v != 2.0 {
		t.Fatalf("the opted-in deployment is at version %v, want 2", v)
	}
	// The deployment not opted in stays where it was: its upgrade would have been queued in
	// the same transaction as stage's.
	if v := s.Call(t, "GET", "/api/v1/deployments/"+s.plain, s.user, nil).JSON(t)["version"]; v != 1.0 || len(s.operations(t, s.plain)) != 1 {
		t.Fatalf("the deployment not opted in is at version %v with %d operations", v, len(s.operations(t, s.plain)))
	}
}

func TestRepository_GiteaAndGitLabWebhooksInTheirOwnForms(t *testing.T) {
	l := newLinkedSite(t, apptest.SiteConfig{})
	l.waitSync(t, "main", l.repo.Head(t))
	hook := "/api/v1/repository-links/" + l.link(t)["id"].(string) + "/webhook"

	// Gitea signs with the bare hex of the body's HMAC.
	l.repo.Write(t, "components/machine/Pulumi.yaml", l.program+"# from gitea\n")
	pushed := l.repo.Commit(t, "Ada Lovelace", "Gitea push")
	l.repo.Push(t)
	body := []byte(`{"ref":"refs/heads/main"}`)
	sig := strings.TrimPrefix(component.SignWebhook([]byte(l.secret), body), "sha256=")
	wrong := strings.Map(func(r rune) rune { return map[bool]rune{true: '1', false: '0'}[r == '0'] }, sig[:1]) + sig[1:]
	apptest.WantStatus(t, l.Send(t, hook, body, "X-Gitea-Event", "push", "X-Gitea-Signature", wrong), http.StatusUnauthorized)
	apptest.WantStatus(t, l.Send(t, hook, body, "X-Gitea-Event", "push", "X-Gitea-Signature", sig), http.StatusAccepted)
	if s := l.waitSync(t, "main", pushed); s["status"] != "synced" {
		t.Fatalf("gitea push: %v", s)
	}

	// GitLab sends the secret itself; a merge request names its source branch.
	l.repo.Switch(t, "review")
	l.repo.Write(t, "components/machine/Pulumi.yaml", l.program+"# under review\n")
	review := l.repo.Commit(t, "Ada Lovelace", "Under review")
	l.repo.PushBranch(t, "review")
	body = []byte(`{"object_kind":"merge_request","object_attributes":{"source_branch":"review","target_branch":"main","action":"open"}}`)
	apptest.WantStatus(t, l.Send(t, hook, body, "X-Gitlab-Event", "Merge Request Hook", "X-Gitlab-Token", "not the secret"), http.StatusUnauthorized)
	apptest.WantStatus(t, l.Send(t, hook, body, "X-Gitlab-Event", "Merge Request Hook", "X-Gitlab-Token", l.secret), http.StatusAccepted)
	if s := l.waitSync(t, "review", review); s["status"] != "synced" {
		t.Fatalf("gitlab merge request: %v", s)
	}
	if got := l.Call(t, "GET", "/api/v1/components/"+l.id, l.admin, nil).JSON(t)["code"]; got != l.program+"# from gitea\n" {
		t.Fatal("a merge request's branch became the draft")
	}
}
