package instance_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"nimbus/app/apptest"
	"nimbus/app/domain/stack"
	"nimbus/app/orchestration/environment"
)

// TestStack_RetryAfterAFailedDestroyDestroysAgain makes an instance's destroy fail, the
// simulated cloud unable to remove a machine, and retries it: the retry destroys again, it
// does not deploy; the page offers it as such, to those who may destroy.
func TestStack_RetryAfterAFailedDestroyDestroysAgain(t *testing.T) {
	s := apptest.NewSite(t)
	machine := uuid.MustParse(apptest.BuiltinIDs(t, s)["simcloud-machine"])
	stackID := apptest.PublishedStack(t, s, "solo", stack.Definition{
		Parameters: json.RawMessage(`{"type":"object","properties":{}}`),
		Slots: []stack.Slot{{Name: "box", Component: machine, Version: 1, Inputs: map[string]stack.Wiring{
			"name": {Kind: stack.Literal, Value: "solo-box"}}}},
		Machine: stack.Machine{States: []stack.State{{Name: "active", Initial: true}}},
	})
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	user, admin := s.Token(t, s.UserA), s.Token(t, s.AdminA)
	r := s.Call(t, "POST", "/api/v1/stack-instances", user, map[string]any{"stack_id": stackID, "environment_id": env.ID, "name": "solo"})
	apptest.WantStatus(t, r, http.StatusAccepted)
	id := r.JSON(t)["id"].(string)
	base := "/api/v1/stack-instances/" + id
	if inst := s.WaitInstance(t, user, id, apptest.Status("active", "failed")); inst["status"] != "active" {
		t.Fatalf("deploy: %v", inst)
	}

	// A folder with something in it where the machine's file was: the cloud cannot remove it.
	files, _ := filepath.Glob(filepath.Join(s.Cloud, "machine", "*.json"))
	if len(files) != 1 {
		t.Fatalf("the cloud holds machines %v, want one", files)
	}
	apptest.Must(t, os.Remove(files[0]))
	apptest.Must(t, os.MkdirAll(filepath.Join(files[0], "held"), 0o755))
	apptest.WantStatus(t, s.Call(t, "DELETE", base, admin, nil), http.StatusAccepted)
	inst := s.WaitInstance(t, admin, id, apptest.Status("failed", "destroyed"))
	if inst["status"] != "failed" || !strings.HasPrefix(inst["error"].(string), "Destroying stopped: box:") || inst["retry"] != "destroy" {
		t.Fatalf("after a failed destroy: %v", inst)
	}
	page := s.Call(t, "GET", "/stack-instances/"+id, admin, nil)
	apptest.WantIn(t, page, `data-testid="retry"`, "Retry destroy")
	// A user may retry a deploy, not a destroy.
	if page := s.Call(t, "GET", "/stack-instances/"+id, user, nil); strings.Contains(string(page.Body), `data-testid="retry"`) {
		t.Error("the page offers a user to retry a destroy")
	}
	apptest.WantStatus(t, s.Call(t, "POST", base+"/retry", user, nil), http.StatusForbidden)

	apptest.Must(t, os.RemoveAll(files[0]))
	apptest.WantStatus(t, s.Call(t, "POST", base+"/retry", admin, nil), http.StatusAccepted)
	if inst := s.WaitInstance(t, admin, id, apptest.Status("failed", "destroyed")); inst["status"] != "destroyed" {
		t.Fatalf("after the retry: %v", inst)
	}
	runs := s.Call(t, "GET", base+"/runs", admin, nil).JSON(t)["runs"].([]any)
	var kinds []string
	for _, r := range runs {
		kinds = append(kinds, r.(map[string]any)["kind"].(string)+" "+r.(map[string]any)["status"].(string))
	}
	if strings.Join(kinds, ", ") != "destroy succeeded, destroy failed, deploy succeeded" {
		t.Fatalf("the runs, newest first: %v", kinds)
	}
	if files := s.CloudFiles(t); len(files) != 0 {
		t.Fatalf("left in the cloud after the retried destroy: %v", files)
	}
}
