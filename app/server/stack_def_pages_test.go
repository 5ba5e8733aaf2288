package server_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"nimbus/app/environment"
	"nimbus/app/stack"
)

func wantNotIn(t *testing.T, r reply, unwanted ...string) {
	t.Helper()
	for _, w := range unwanted {
		if strings.Contains(string(r.body), w) {
			t.Fatalf("the page (%d) shows %s", r.status, w)
		}
	}
}

// TestPages_StackPagesOfferWhatTheViewerMayDo: the catalog, the stack's page and its editor
// offer editing, publishing and forking to those who may; a save from the editor keeps the
// draft with its problems shown beside the input they name, and a publish of a draft with
// problems is refused with them.
func TestPages_StackPagesOfferWhatTheViewerMayDo(t *testing.T) {
	s := newSite(t)
	admin, adminA, userA := s.token(t, s.admin), s.token(t, s.adminA), s.token(t, s.userA)
	r := s.call(t, "POST", "/api/v1/stacks", admin, map[string]any{"provider": "simcloud", "name": "shop", "draft": stackDraft(s.shared.ID, 1)})
	wantStatus(t, r, http.StatusCreated)
	id := r.json(t)["id"].(string)
	wantStatus(t, s.call(t, "POST", "/api/v1/stacks/"+id+"/publish", admin, map[string]any{"changelog": "first"}), http.StatusCreated)

	r = s.call(t, "GET", "/stacks", userA, nil)
	wantStatus(t, r, http.StatusOK)
	wantIn(t, r, `data-stack="shop"`)
	wantNotIn(t, r, `data-testid="new-stack"`, `data-fork=`)
	r = s.call(t, "GET", "/stacks", adminA, nil)
	wantIn(t, r, `data-testid="new-stack"`, `data-fork="shop"`)
	r = s.call(t, "GET", "/stacks", admin, nil)
	wantNotIn(t, r, `data-fork=`) // the provider's admins hold no tenant's role to fork into

	r = s.call(t, "GET", "/stacks/"+id, userA, nil)
	wantStatus(t, r, http.StatusOK)
	wantIn(t, r, `data-testid="deploy"`, "first")
	wantNotIn(t, r, `data-testid="edit"`, `data-testid="publish-form"`, "Archive")
	wantStatus(t, s.call(t, "GET", "/stacks/"+id+"/edit", userA, nil), http.StatusForbidden)
	wantStatus(t, s.submit(t, "/stacks/"+id+"/edit", userA, url.Values{"op": {"save"}}), http.StatusForbidden)

	// A save from the editor: a slot whose name comes from an expression over a parameter the
	// stack does not have. The draft is kept as typed, the problem shown beside the input.
	form := url.Values{
		"display_name": {"Shop"}, "op": {"save"},
		"p.0.name": {"label"}, "p.0.type": {"string"},
		"s.0.was": {"db"}, "s.0.name": {"db"}, "s.0.component": {s.shared.ID.String()}, "s.0.version": {"1"},
		"s.0.inputs": {"name"}, "s.0.in.name.type": {"string"}, "s.0.in.name.kind": {"expr"}, "s.0.in.name.expr": {"params.lable"},
		"m.s.0.name": {"running"}, "m.initial": {"0"},
	}
	r = s.submit(t, "/stacks/"+id+"/edit", admin, form)
	wantStatus(t, r, http.StatusOK)
	wantIn(t, r, `data-problem="slots.db.inputs.name"`, "params.lable not known here", `value="params.lable"`)
	var st stack.Stack
	must(t, json.Unmarshal(s.call(t, "GET", "/api/v1/stacks/"+id, admin, nil).body, &st))
	if w := st.Draft.Slots[0].Inputs["name"]; st.DisplayName != "Shop" || w.Kind != stack.Expression || w.Expr != "params.lable" {
		t.Fatalf("the draft saved from the editor: %s %+v", st.DisplayName, st.Draft.Slots)
	}

	// The stack's page says why the draft cannot be published, and a publish is refused.
	r = s.call(t, "GET", "/stacks/"+id, admin, nil)
	wantIn(t, r, `data-testid="publish-why"`, "1 problem")
	r = s.submit(t, "/stacks/"+id+"/publish", admin, url.Values{"changelog": {"second"}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantIn(t, r, "params.lable not known here", "second")

	r = s.call(t, "GET", "/stacks/"+id+"/diff?from=1&to=1", userA, nil)
	wantStatus(t, r, http.StatusOK)
	wantIn(t, r, `data-testid="diff-summary"`, "unchanged")

	// An unused version is archived from the page.
	r = s.submit(t, "/stacks/"+id+"/versions/1/archive", admin, nil)
	wantStatus(t, r, http.StatusSeeOther)
	r = s.call(t, "GET", "/stacks/"+id, admin, nil)
	wantIn(t, r, "archived")
}

// TestPages_StackPageListsItsInstancesAndKeepsTheirVersion: the stack's page lists its
// instances, and archiving the version they use is refused in words.
func TestPages_StackPageListsItsInstancesAndKeepsTheirVersion(t *testing.T) {
	s := newSite(t)
	stackID := publishedStack(t, s, "web", webStack(t, s, 0))
	env, err := environment.NewService(s.pool).Create(t.Context(), s.adminA, s.a.ID, "dev")
	must(t, err)
	admin, userA := s.token(t, s.admin), s.token(t, s.userA)
	r := s.call(t, "POST", "/api/v1/stack-instances", userA, map[string]any{
		"stack_id": stackID, "environment_id": env.ID, "name": "shop", "parameters": map[string]any{"prefix": "shop"}})
	wantStatus(t, r, http.StatusAccepted)
	instanceID := r.json(t)["id"].(string)
	defer s.waitInstance(t, userA, instanceID, status("active", "failed"))

	page := s.call(t, "GET", "/stacks/"+stackID.String(), userA, nil)
	wantStatus(t, page, http.StatusOK)
	wantIn(t, page, `href="/stack-instances/`+instanceID+`"`, ">shop<", ">dev<")

	r = s.submit(t, "/stacks/"+stackID.String()+"/versions/1/archive", admin, nil)
	wantStatus(t, r, http.StatusSeeOther)
	flash, _ := url.QueryUnescape(r.header.Get("Set-Cookie"))
	if !strings.Contains(flash, "Version 1 was not archived: 1 instances use version 1") {
		t.Fatalf("the refusal to archive says %q", flash)
	}
	wantNotIn(t, s.call(t, "GET", "/stacks/"+stackID.String(), admin, nil), "badge-muted\">archived")
}
