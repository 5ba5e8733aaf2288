package approval_test

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"nimbus/app/apptest"
	"nimbus/app/domain/stack"
	"nimbus/app/orchestration/environment"
)

// layered is a site with a published stack of two layers (two networks side by side, then a
// machine on the first, reading its ID) and tenant A's dev environment, whose deploys need a
// user's approval.
type layered struct {
	*apptest.Site
	stack, env, machine string
	user, admin, root   string
}

func newLayered(t *testing.T) *layered {
	t.Helper()
	s := apptest.NewSiteWith(t, apptest.SiteConfig{Backend: "file"})
	def := apptest.WebStack(t, s, 0)
	twin := stack.Slot{Name: "net2", Component: def.Slots[0].Component, Version: 1, Inputs: map[string]stack.Wiring{
		"name": {Kind: stack.Expression, Expr: `params.prefix + "-net2"`},
		"cidr": {Kind: stack.Literal, Value: "10.30.0.0/16"},
	}}
	def.Slots = []stack.Slot{def.Slots[0], twin, def.Slots[1]} // net and net2, then a on net
	l := &layered{Site: s, stack: apptest.PublishedStack(t, s, "layered", def).String(),
		machine: apptest.BuiltinIDs(t, s)["simcloud-machine"], user: s.Token(t, s.UserA), admin: s.Token(t, s.AdminA), root: s.Token(t, s.Admin)}
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	l.env = env.ID.String()
	l.policy(t, l.admin, map[string]any{"scope": "environment", "scope_id": l.env, "operations": []string{"deploy"}, "approver_role": "user"})
	return l
}

func (l *layered) policy(t *testing.T, token string, body map[string]any) {
	t.Helper()
	apptest.WantStatus(t, l.Call(t, "POST", "/api/v1/approval-policies", token, body), http.StatusCreated)
}

// deploy deploys an instance of the stack as the user, and returns its ID and the one request
// for approval it opens.
func (l *layered) deploy(t *testing.T, name string) (string, map[string]any) {
	t.Helper()
	r := l.Call(t, "POST", "/api/v1/stack-instances", l.user, map[string]any{"stack_id": l.stack, "environment_id": l.env,
		"name": name, "parameters": map[string]any{"prefix": name}})
	apptest.WantStatus(t, r, http.StatusAccepted)
	id := r.JSON(t)["id"].(string)
	deadline := time.Now().Add(3 * time.Minute)
	for {
		list := l.requests(t, "pending")
		if len(list) == 1 {
			return id, list[0]
		}
		if len(list) > 1 || time.Now().After(deadline) {
			t.Fatalf("deploying %s: want one pending request, have %v", name, list)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (l *layered) requests(t *testing.T, status string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, r := range l.Call(t, "GET", "/api/v1/approvals?status="+status, l.root, nil).JSON(t)["approvals"].([]any) {
		out = append(out, r.(map[string]any))
	}
	return out
}

// held waits until the first layer's deploys both wait for approval.
func (l *layered) held(t *testing.T, id string) {
	t.Helper()
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		ops := l.SlotOperations(t, l.user, id, "deploy")
		if ops["net"] != nil && ops["net2"] != nil && ops["net"]["status"] == "awaiting_approval" && ops["net2"]["status"] == "awaiting_approval" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the first layer does not wait for approval: %v", ops)
		}
	}
}

// deployRun is the ID of the instance's deploy run.
func (l *layered) deployRun(t *testing.T, id string) string {
	t.Helper()
	for _, r := range l.Call(t, "GET", "/api/v1/stack-instances/"+id+"/runs", l.user, nil).JSON(t)["runs"].([]any) {
		if run := r.(map[string]any); run["kind"] == "deploy" {
			return run["id"].(string)
		}
	}
	t.Fatalf("%s has no deploy run", id)
	return ""
}

func TestApproval_AStackRunAsksOnceForAllItsSlotsWhatTheStrictestNeeds(t *testing.T) {
	l := newLayered(t)
	// Only the second slot is a machine: the run's request must already ask what its policy does.
	l.policy(t, l.root, map[string]any{"scope": "component", "scope_id": l.machine, "operations": []string{"deploy"}, "approver_role": "tenant_admin"})
	id, req := l.deploy(t, "shop")
	if req["run_id"] != l.deployRun(t, id) || req["stack_instance"] != "shop" {
		t.Fatalf("the request is not the deploy run's of shop: %v", req)
	}
	if req["approver_role"] != "tenant_admin" {
		t.Fatalf("the run's request asks a %v, though a slot's policy asks a tenant admin", req["approver_role"])
	}
	l.held(t, id)
	// The slot that did not open the request leads to it from its operation's page too.
	twin := l.SlotOperations(t, l.user, id, "deploy")["net2"]
	if req["operation_id"] == twin["id"] {
		twin = l.SlotOperations(t, l.user, id, "deploy")["net"]
	}
	apptest.WantIn(t, l.Call(t, "GET", "/operations/"+twin["id"].(string), l.admin, nil), `href="/approvals/`+req["id"].(string)+`"`)
	apptest.WantStatus(t, l.Call(t, "POST", "/api/v1/approvals/"+req["id"].(string)+"/approve", l.admin, map[string]any{"comment": "both"}), http.StatusOK)
	l.WaitInstance(t, l.user, id, apptest.Status("active"))

	if all := l.requests(t, ""); len(all) != 1 {
		t.Fatalf("the run asked for approval %d times: %v", len(all), all)
	}
	detail := l.Call(t, "GET", "/api/v1/approvals/"+req["id"].(string), l.admin, nil).JSON(t)
	slots, _ := detail["slots"].([]any)
	var names []string
	for _, x := range slots {
		sl := x.(map[string]any)
		names = append(names, sl["slot"].(string))
		if res, _ := sl["resources"].([]any); len(res) == 0 || sl["kind"] != "deploy" || sl["parameters"] == nil {
			t.Fatalf("slot %v shows no plan: %v", sl["slot"], sl)
		}
	}
	if strings.Join(names, ",") != "net,net2,a" {
		t.Fatalf("the request shows slots %v, want net, net2 and a", names)
	}
	for _, op := range l.SlotOperations(t, l.user, id, "deploy") {
		if op["status"] != "succeeded" {
			t.Fatalf("one approval did not deploy every slot: %v", op)
		}
	}

	b := apptest.NewBrowser(t, l.URL)
	apptest.WantStatus(t, b.SignIn(t, "admin-a@example.com", "long enough password"), http.StatusSeeOther)
	page := string(b.Get(t, "/approvals/"+req["id"].(string)).Body)
	for _, want := range []string{`data-testid="approval-slot" data-slot="net"`, `data-testid="approval-slot" data-slot="net2"`,
		`data-testid="approval-slot" data-slot="a"`, "run of shop"} {
		if !strings.Contains(page, want) {
			t.Fatalf("the request's page lacks %s:\n%.4000s", want, page)
		}
	}
	if list := string(b.Get(t, "/approvals").Body); strings.Count(list, `data-testid="approval-run-instance"`) != 1 {
		t.Fatalf("the list does not show the run's one request naming its instance:\n%.4000s", list)
	}
}

func TestApproval_RejectingAStackRunEndsItWithoutItsLaterSlots(t *testing.T) {
	l := newLayered(t)
	id, req := l.deploy(t, "shop")
	if req["run_id"] != l.deployRun(t, id) {
		t.Fatalf("the request is not the deploy run's: %v", req)
	}
	l.held(t, id)
	apptest.WantStatus(t, l.Call(t, "POST", "/api/v1/approvals/"+req["id"].(string)+"/reject", l.admin,
		map[string]any{"comment": "not today"}), http.StatusOK)
	run := l.WaitRun(t, l.user, id, l.deployRun(t, id))
	if run["status"] != "failed" || !strings.Contains(run["error"].(string), "not today") {
		t.Fatalf("the rejected run: %v", run)
	}
	l.WaitInstance(t, l.user, id, apptest.Status("failed"))
	ops := l.SlotOperations(t, l.user, id, "deploy")
	for _, slot := range []string{"net", "net2"} {
		if op := ops[slot]; op == nil || op["status"] != "rejected" || !strings.Contains(op["error"].(string), "not today") {
			t.Fatalf("slot %s's deploy after the rejection: %v", slot, op)
		}
	}
	if op, ok := ops["a"]; ok {
		t.Fatalf("the second slot was deployed after the run's rejection: %v", op)
	}
	if all := l.requests(t, ""); len(all) != 1 || all[0]["status"] != "rejected" {
		t.Fatalf("requests after the rejection: %v", all)
	}
}

func TestApproval_ASlotReachingTheGateAfterItsRunWasRejectedEndsRejectedAsItsSiblings(t *testing.T) {
	l := newLayered(t)
	r := l.Call(t, "POST", "/api/v1/stack-instances", l.user, map[string]any{"stack_id": l.stack, "environment_id": l.env,
		"name": "shop", "parameters": map[string]any{"prefix": "shop"}})
	apptest.WantStatus(t, r, http.StatusAccepted)
	id := r.JSON(t)["id"].(string)

	// net2 is held at the start of its approve step — by a lock on that step's row — so that net
	// opens the run's request and is turned down while net2 is still on its way to the gate.
	tx, err := l.Pool.Begin(t.Context())
	apptest.Must(t, err)
	t.Cleanup(func() { _ = tx.Rollback(context.WithoutCancel(t.Context())) })
	var late string
	for deadline := time.Now().Add(3 * time.Minute); late == ""; time.Sleep(10 * time.Millisecond) {
		err := tx.QueryRow(t.Context(), `SELECT s.operation_id::text FROM operation_steps s
			JOIN operations o ON o.id = s.operation_id JOIN deployed_components d ON d.id = o.deployment_id
			WHERE d.stack_instance_id = $1 AND d.slot = 'net2' AND o.kind = 'deploy' AND s.name = 'approve' AND s.status = 'pending'
			FOR UPDATE OF s`, id).Scan(&late)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("net2's deploy never had its approve step ahead of it")
		}
	}
	var req map[string]any
	for deadline := time.Now().Add(3 * time.Minute); req == nil; time.Sleep(200 * time.Millisecond) {
		if list := l.requests(t, "pending"); len(list) == 1 {
			req = list[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("net does not ask for approval")
		}
	}
	apptest.WantStatus(t, l.Call(t, "POST", "/api/v1/approvals/"+req["id"].(string)+"/reject", l.admin,
		map[string]any{"comment": "not today"}), http.StatusOK)
	apptest.Must(t, tx.Rollback(t.Context()))

	sibling := l.WaitOperation(t, l.user, req["operation_id"].(string))
	op := l.WaitOperation(t, l.user, late)
	if op["status"] != "rejected" || op["error"] != sibling["error"] || !reflect.DeepEqual(op["outcome"], sibling["outcome"]) {
		t.Fatalf("the slot that reached the gate late: %v\nits sibling turned down at the gate: %v", op, sibling)
	}
	if o, _ := op["outcome"].(map[string]any); o["kind"] != "rejected" || !strings.Contains(op["error"].(string), "not today") {
		t.Fatalf("the late slot's outcome: %v", op)
	}
}
