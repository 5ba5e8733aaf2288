package stack_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/domain/stack"
	"nimbus/app/orchestration/environment"
)

func wantNotIn(t *testing.T, r apptest.Reply, unwanted ...string) {
	t.Helper()
	for _, w := range unwanted {
		if strings.Contains(string(r.Body), w) {
			t.Fatalf("the page (%d) shows %s", r.Status, w)
		}
	}
}

// TestPages_StackPagesOfferWhatTheViewerMayDo: the catalog, the stack's page and its editor
// offer editing, publishing and forking to those who may; a save from the editor keeps the
// draft with its problems shown beside the input they name, and a publish of a draft with
// problems is refused with them.
func TestPages_StackPagesOfferWhatTheViewerMayDo(t *testing.T) {
	s := apptest.NewSite(t)
	admin, adminA, userA := s.Token(t, s.Admin), s.Token(t, s.AdminA), s.Token(t, s.UserA)
	r := s.Call(t, "POST", "/api/v1/stacks", admin, map[string]any{"provider": "simcloud", "name": "shop", "draft": apptest.StackDraft(s.Shared.ID, 1)})
	apptest.WantStatus(t, r, http.StatusCreated)
	id := r.JSON(t)["id"].(string)
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/stacks/"+id+"/publish", admin, map[string]any{"changelog": "first"}), http.StatusCreated)

	r = s.Call(t, "GET", "/stacks", userA, nil)
	apptest.WantStatus(t, r, http.StatusOK)
	apptest.WantIn(t, r, `data-stack="shop"`)
	wantNotIn(t, r, `data-testid="new-stack"`, `data-fork=`)
	r = s.Call(t, "GET", "/stacks", adminA, nil)
	apptest.WantIn(t, r, `data-testid="new-stack"`, `data-fork="shop"`)
	r = s.Call(t, "GET", "/stacks", admin, nil)
	wantNotIn(t, r, `data-fork=`) // the provider's admins hold no tenant's role to fork into

	r = s.Call(t, "GET", "/stacks/"+id, userA, nil)
	apptest.WantStatus(t, r, http.StatusOK)
	apptest.WantIn(t, r, `data-testid="deploy"`, "first")
	wantNotIn(t, r, `data-testid="edit"`, `data-testid="publish-form"`, "Archive")
	apptest.WantStatus(t, s.Call(t, "GET", "/stacks/"+id+"/edit", userA, nil), http.StatusForbidden)
	apptest.WantStatus(t, s.Submit(t, "/stacks/"+id+"/edit", userA, url.Values{"op": {"save"}}), http.StatusForbidden)

	// A save from the editor: a slot whose name comes from an expression over a parameter the
	// stack does not have. The draft is kept as typed, the problem shown beside the input.
	form := url.Values{
		"display_name": {"Shop"}, "op": {"save"},
		"p.0.name": {"label"}, "p.0.type": {"string"},
		"s.0.was": {"db"}, "s.0.name": {"db"}, "s.0.component": {s.Shared.ID.String()}, "s.0.version": {"1"},
		"s.0.inputs": {"name"}, "s.0.in.name.type": {"string"}, "s.0.in.name.kind": {"expr"}, "s.0.in.name.expr": {"params.lable"},
		"m.s.0.name": {"running"}, "m.initial": {"0"},
	}
	r = s.Submit(t, "/stacks/"+id+"/edit", admin, form)
	apptest.WantStatus(t, r, http.StatusOK)
	apptest.WantIn(t, r, `data-problem="slots.db.inputs.name"`, "params.lable not known here", `value="params.lable"`)
	var st stack.Stack
	apptest.Must(t, json.Unmarshal(s.Call(t, "GET", "/api/v1/stacks/"+id, admin, nil).Body, &st))
	if w := st.Draft.Slots[0].Inputs["name"]; st.DisplayName != "Shop" || w.Kind != stack.Expression || w.Expr != "params.lable" {
		t.Fatalf("the draft saved from the editor: %s %+v", st.DisplayName, st.Draft.Slots)
	}

	// The stack's page says why the draft cannot be published, and a publish is refused.
	r = s.Call(t, "GET", "/stacks/"+id, admin, nil)
	apptest.WantIn(t, r, `data-testid="publish-why"`, "1 problem")
	r = s.Submit(t, "/stacks/"+id+"/publish", admin, url.Values{"changelog": {"second"}})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	apptest.WantIn(t, r, "params.lable not known here", "second")

	r = s.Call(t, "GET", "/stacks/"+id+"/diff?from=1&to=1", userA, nil)
	apptest.WantStatus(t, r, http.StatusOK)
	apptest.WantIn(t, r, `data-testid="diff-summary"`, "unchanged")

	// An unused version is archived from the page.
	r = s.Submit(t, "/stacks/"+id+"/versions/1/archive", admin, nil)
	apptest.WantStatus(t, r, http.StatusSeeOther)
	r = s.Call(t, "GET", "/stacks/"+id, admin, nil)
	apptest.WantIn(t, r, "archived")
}

// TestPages_StackPageListsItsInstancesAndKeepsTheirVersion: the stack's page lists its
// instances, and archiving the version they use is refused in words.
func TestPages_StackPageListsItsInstancesAndKeepsTheirVersion(t *testing.T) {
	s := apptest.NewSite(t)
	stackID := apptest.PublishedStack(t, s, "web", apptest.WebStack(t, s, 0))
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	admin, userA := s.Token(t, s.Admin), s.Token(t, s.UserA)
	r := s.Call(t, "POST", "/api/v1/stack-instances", userA, map[string]any{
		"stack_id": stackID, "environment_id": env.ID, "name": "shop", "parameters": map[string]any{"prefix": "shop"}})
	apptest.WantStatus(t, r, http.StatusAccepted)
	instanceID := r.JSON(t)["id"].(string)
	defer s.WaitInstance(t, userA, instanceID, apptest.Status("active", "failed"))

	page := s.Call(t, "GET", "/stacks/"+stackID.String(), userA, nil)
	apptest.WantStatus(t, page, http.StatusOK)
	apptest.WantIn(t, page, `href="/stack-instances/`+instanceID+`"`, ">shop<", ">dev<")

	r = s.Submit(t, "/stacks/"+stackID.String()+"/versions/1/archive", admin, nil)
	apptest.WantStatus(t, r, http.StatusSeeOther)
	flash, _ := url.QueryUnescape(r.Header.Get("Set-Cookie"))
	if !strings.Contains(flash, "Version 1 was not archived: 1 instances use version 1") {
		t.Fatalf("the refusal to archive says %q", flash)
	}
	wantNotIn(t, s.Call(t, "GET", "/stacks/"+stackID.String(), admin, nil), "badge-muted\">archived")
}

// TestPages_EditorRenamesWhatNamesASlotAndPublishes: renaming a slot and a parameter in the
// editor rewrites the wiring, waits, actions and expressions naming them, and nothing else;
// the editor publishes the draft it saves, refusing one without a changelog or with problems,
// which it lists.
func TestPages_EditorRenamesWhatNamesASlotAndPublishes(t *testing.T) {
	s := apptest.NewSite(t)
	admin, adminA := s.Token(t, s.Admin), s.Token(t, s.AdminA)
	r := s.Call(t, "POST", "/api/v1/stacks", admin, map[string]any{"provider": "simcloud", "name": "shop", "draft": apptest.StackDraft(s.Shared.ID, 1)})
	apptest.WantStatus(t, r, http.StatusCreated)
	id := r.JSON(t)["id"].(string)

	machine := s.Shared.ID.String()
	form := url.Values{
		"display_name": {"Shop"}, "op": {"save"},
		"p.0.was": {"size"}, "p.0.name": {"size"}, "p.0.type": {"integer"}, "p.0.default": {"2"},
		"p.1.was": {"label"}, "p.1.name": {"tag"}, "p.1.type": {"string"}, "p.1.default": {"shop"},
		"s.0.was": {"db"}, "s.0.name": {"database"}, "s.0.component": {machine}, "s.0.version": {"1"},
		"s.0.inputs": {"name"}, "s.0.in.name.type": {"string"}, "s.0.in.name.kind": {"literal"}, "s.0.in.name.literal": {"db"},
		"s.1.was": {"web"}, "s.1.name": {"web"}, "s.1.component": {machine}, "s.1.version": {"1"}, "s.1.dep": {"db"},
		"s.1.inputs":       {"name", "cores", "ip_address"},
		"s.1.in.name.type": {"string"}, "s.1.in.name.kind": {"expr"},
		"s.1.in.name.expr":  {`"web-" + params.label + "-slots.db." + slots.db.outputs.ip_address`},
		"s.1.in.cores.type": {"integer"}, "s.1.in.cores.kind": {"param:size"},
		"s.1.in.ip_address.type": {"string"}, "s.1.in.ip_address.kind": {"output:db.ip_address"},
		"m.s.0.name": {"running"}, "m.initial": {"0"},
		"m.s.1.name": {"retired"}, "m.s.1.terminal": {"on"},
		"m.t.0.from": {"running"}, "m.t.0.to": {"retired"}, "m.t.0.trigger": {"retire"},
		"m.t.0.a.0.slot": {"db"}, "m.t.0.a.0.do": {"refresh"},
	}
	r = s.Submit(t, "/stacks/"+id+"/edit", admin, form)
	apptest.WantStatus(t, r, http.StatusOK)
	apptest.WantIn(t, r, `data-testid="no-problems"`, `data-slot="database"`)
	var st stack.Stack
	apptest.Must(t, json.Unmarshal(s.Call(t, "GET", "/api/v1/stacks/"+id, admin, nil).Body, &st))
	web := st.Draft.Slots[1]
	if got, want := web.Inputs["name"].Expr, `"web-" + params.tag + "-slots.db." + slots.database.outputs.ip_address`; got != want {
		t.Errorf("web's name reads %s, want %s", got, want)
	}
	if w := web.Inputs["ip_address"]; w.Slot != "database" {
		t.Errorf("web's ip_address is wired to %+v, want the renamed slot", w)
	}
	if len(web.DependsOn) != 1 || web.DependsOn[0] != "database" {
		t.Errorf("web waits for %q, want the renamed slot", web.DependsOn)
	}
	if a := st.Draft.Machine.Transitions[0].Action[0]; a.Slot != "database" {
		t.Errorf("retire refreshes %q, want the renamed slot", a.Slot)
	}

	// No changelog: saved, not published.
	form.Set("op", "publish")
	form.Set("p.1.was", "tag")
	form.Set("s.0.was", "database")
	form["s.1.dep"] = []string{"database"}
	form.Set("s.1.in.name.expr", `"web-" + params.tag + slots.database.outputs.ip_address`)
	form.Set("s.1.in.ip_address.kind", "output:database.ip_address")
	form.Set("m.t.0.a.0.slot", "database")
	r = s.Submit(t, "/stacks/"+id+"/edit", admin, form)
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	apptest.WantIn(t, r, `data-testid="refused"`, "not published", `data-field-error="changelog"`)

	// A draft with a problem: refused, the problem listed.
	form.Set("changelog", "renamed the database")
	form.Set("s.1.in.name.expr", `"web-" + params.label`)
	r = s.Submit(t, "/stacks/"+id+"/edit", admin, form)
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	apptest.WantIn(t, r, "not published: fix its 1 problem", `data-field="slots.web.inputs.name"`, "params.label not known here", "renamed the database")
	if v := s.Call(t, "GET", "/api/v1/stacks/"+id+"/versions", admin, nil).Body; strings.Contains(string(v), "renamed the database") {
		t.Fatalf("a draft with problems was published: %s", v)
	}

	// Fixed: published from the editor.
	form.Set("s.1.in.name.expr", `"web-" + params.tag`)
	r = s.Submit(t, "/stacks/"+id+"/edit", admin, form)
	apptest.WantStatus(t, r, http.StatusOK)
	apptest.WantIn(t, r, `data-testid="published"`, "Published v1")
	if v := s.Call(t, "GET", "/api/v1/stacks/"+id+"/versions", admin, nil).Body; !strings.Contains(string(v), "renamed the database") {
		t.Fatalf("the versions after publishing from the editor: %s", v)
	}

	// A tenant's admin, who sees the published stack, may publish it from the editor no more
	// than from its page.
	publish := url.Values{"op": {"publish"}, "changelog": {"mine"}}
	apptest.WantStatus(t, s.Submit(t, "/stacks/"+id+"/publish", adminA, publish), http.StatusForbidden)
	apptest.WantStatus(t, s.Submit(t, "/stacks/"+id+"/edit", adminA, publish), http.StatusForbidden)
}
