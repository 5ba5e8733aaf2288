package stack_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/domain/stack"
)

func TestAPI_StackForkKeepsItsVersionAndSeesItsParentMoveOn(t *testing.T) {
	s := apptest.NewSite(t)
	admin, adminA, userA := s.Token(t, s.Admin), s.Token(t, s.AdminA), s.Token(t, s.UserA)
	parent := s.Call(t, "POST", "/api/v1/stacks", admin, map[string]any{"provider": "simcloud", "name": "shop", "draft": apptest.StackDraft(s.Shared.ID, 1)})
	apptest.WantStatus(t, parent, http.StatusCreated)
	pid := parent.JSON(t)["id"].(string)
	fork := map[string]any{"tenant_id": s.A.ID, "name": "our-shop"}
	// Tenants see a provider stack once it is published.
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/stacks/"+pid+"/fork", adminA, fork), http.StatusNotFound)
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/stacks/"+pid+"/publish", admin, map[string]any{"changelog": "first"}), http.StatusCreated)
	apptest.WantField(t, errorOf(t, s.Call(t, "POST", "/api/v1/stacks/"+pid+"/fork", adminA, map[string]any{"tenant_id": s.A.ID, "name": "our-shop", "version": 9})), "version")

	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/stacks/"+pid+"/fork", userA, fork), http.StatusForbidden)
	r := s.Call(t, "POST", "/api/v1/stacks/"+pid+"/fork", adminA, fork)
	apptest.WantStatus(t, r, http.StatusCreated)
	var f stack.Stack
	apptest.Must(t, json.Unmarshal(r.Body, &f))
	if f.TenantID == nil || *f.TenantID != s.A.ID || f.ForkedFrom == nil || f.ForkedFrom.Version != 1 || f.ForkedFrom.Newer ||
		f.Draft == nil || len(f.Draft.Operations) != 2 || f.LatestVersion != 0 {
		t.Fatalf("fork: %s", r.Body)
	}
	fid := f.ID.String()
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/stacks/"+fid+"/fork", adminA, map[string]any{"tenant_id": s.A.ID, "name": "fork-of-fork"}),
		http.StatusUnprocessableEntity)
	// Tenant admins publish their tenant's own stacks.
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/stacks/"+fid+"/publish", adminA, map[string]any{"changelog": "ours"}), http.StatusCreated)

	// The parent moves on; the fork stays as it was, and says its parent has newer versions.
	d := apptest.StackDraft(s.Shared.ID, 1)
	d.Slots[0].Inputs["cores"] = stack.Wiring{Kind: stack.Literal, Value: 8}
	apptest.WantStatus(t, s.Call(t, "PUT", "/api/v1/stacks/"+pid, admin, map[string]any{"draft": d}), http.StatusOK)
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/stacks/"+pid+"/publish", admin, map[string]any{"changelog": "bigger db"}), http.StatusCreated)
	r = s.Call(t, "GET", "/api/v1/stacks/"+fid, adminA, nil)
	var after stack.Stack
	apptest.Must(t, json.Unmarshal(r.Body, &after))
	if !after.ForkedFrom.Newer || after.ForkedFrom.LatestVersion != 2 || after.ForkedFrom.Name != "shop" {
		t.Fatalf("parent's newer version not shown: %s", r.Body)
	}
	if _, wired := after.Draft.Slots[0].Inputs["cores"]; wired {
		t.Fatal("the fork's draft changed with its parent")
	}
	r = s.Call(t, "GET", "/api/v1/stacks/"+fid+"/versions/1", adminA, nil)
	if strings.Contains(string(r.Body), `"cores"`) && strings.Contains(string(r.Body), `"value":8`) {
		t.Fatalf("the fork's version changed with its parent: %s", r.Body)
	}

	// Compared with the parent's newer version, the fork lacks the change.
	r = s.Call(t, "GET", "/api/v1/stacks/"+fid+"/diff?against=parent&version=2", adminA, nil)
	apptest.WantStatus(t, r, http.StatusOK)
	var diff stack.Diff
	apptest.Must(t, json.Unmarshal(r.Body, &diff))
	if diff.From.StackID.String() != pid || diff.From.Version != 2 || diff.To.Version != 1 ||
		len(diff.Slots.Changed) != 1 || diff.Slots.Changed[0].Slot != "db" || diff.Slots.Changed[0].Inputs[0].To != nil {
		t.Fatalf("diff against the parent: %s", r.Body)
	}
	r = s.Call(t, "GET", "/api/v1/stacks/"+fid+"/diff?against=parent", adminA, nil)
	apptest.Must(t, json.Unmarshal(r.Body, &diff))
	if diff.From.Version != 1 || len(diff.Slots.Changed) != 0 {
		t.Fatalf("diff against the version forked: %s", r.Body)
	}
	apptest.WantStatus(t, s.Call(t, "GET", "/api/v1/stacks/"+pid+"/diff?against=parent", admin, nil), http.StatusUnprocessableEntity)
}
