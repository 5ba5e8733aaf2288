package policy_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/orchestration/environment"
)

// policed is a site with a simcloud landing zone and tenant A's environment in it.
type policed struct {
	*apptest.Site
	zone, env         string
	root, user, admin string
}

func newPoliced(t *testing.T) *policed {
	t.Helper()
	s := apptest.NewSite(t)
	p := &policed{Site: s, root: s.Token(t, s.Admin), user: s.Token(t, s.UserA), admin: s.Token(t, s.AdminA)}
	r := s.Call(t, "POST", "/api/v1/landing-zones", p.root, map[string]any{"name": "eu", "provider": "simcloud"})
	apptest.WantStatus(t, r, http.StatusCreated)
	p.zone = r.JSON(t)["id"].(string)
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	_, err = s.Pool.Exec(t.Context(), `UPDATE environments SET landing_zone_id = $1 WHERE id = $2`, p.zone, env.ID)
	apptest.Must(t, err)
	p.env = env.ID.String()
	return p
}

// addPolicy adds a policy to the zone as the provider admin, which must succeed.
func (p *policed) addPolicy(t *testing.T, name, level, expr, message string) map[string]any {
	t.Helper()
	r := p.Call(t, "POST", "/api/v1/landing-zones/"+p.zone+"/policies", p.root,
		map[string]any{"name": name, "level": level, "expression": expr, "message": message})
	apptest.WantStatus(t, r, http.StatusCreated)
	return r.JSON(t)
}

// deploy asks for a machine of the given cores as user A; it returns the deployment and its
// operation.
func (p *policed) deploy(t *testing.T, name string, cores int) (deployment, operation string) {
	t.Helper()
	r := p.Call(t, "POST", "/api/v1/deployments", p.user, map[string]any{"component_id": p.Shared.ID, "environment_id": p.env,
		"name": name, "parameters": map[string]any{"name": name, "cores": cores}})
	apptest.WantStatus(t, r, http.StatusAccepted)
	body := r.JSON(t)
	return body["deployment"].(map[string]any)["id"].(string), body["operation"].(map[string]any)["id"].(string)
}

// check is the policy check an operation shows.
func check(t *testing.T, op map[string]any) (version float64, violations []map[string]any) {
	t.Helper()
	c, ok := op["policy"].(map[string]any)
	if !ok {
		t.Fatalf("operation %v shows no policy check", op["id"])
	}
	for _, v := range c["violations"].([]any) {
		violations = append(violations, v.(map[string]any))
	}
	return c["version"].(float64), violations
}

const smallMachines = `resource.type != "simcloud:index:Machine" || resource.inputs.cores <= 2`

func TestPolicy_AMandatoryPolicyRefusesTheDeployBeforeAnythingIsMade(t *testing.T) {
	p := newPoliced(t)
	p.addPolicy(t, "small-machines", "mandatory", smallMachines, "machines have at most 2 cores")

	dep, id := p.deploy(t, "big", 4)
	op := p.WaitOperation(t, p.user, id)
	msg, _ := op["error"].(string)
	if op["status"] != "failed" {
		t.Fatalf("the deploy of a machine the policy refuses ended %v: %v", op["status"], msg)
	}
	for _, want := range []string{"small-machines", "machines have at most 2 cores", "machine", "simcloud:index:Machine"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the operation's error %q does not name %q", msg, want)
		}
	}
	steps := map[string]string{}
	for _, s := range op["steps"].([]any) {
		steps[s.(map[string]any)["name"].(string)] = s.(map[string]any)["status"].(string)
	}
	if steps["preview"] != "failed" || steps["approve"] != "pending" || steps["up"] != "pending" {
		t.Fatalf("steps of the refused deploy: %v", steps)
	}
	if files := p.CloudFiles(t); len(files) != 0 {
		t.Fatalf("the cloud holds %v after a refused deploy", files)
	}
	version, violations := check(t, op)
	if version != 1 || len(violations) != 1 || violations[0]["name"] != "machine" || violations[0]["level"] != "mandatory" {
		t.Fatalf("the check: version %v, %v", version, violations)
	}
	if got := p.Call(t, "GET", "/api/v1/deployments/"+dep, p.user, nil).JSON(t)["status"]; got != "failed" {
		t.Fatalf("the refused deployment is %v", got)
	}
	// The tenant's user reads why on the operation's page.
	b := apptest.NewBrowser(t, p.URL)
	b.SignIn(t, "user-a@example.com", "long enough password")
	page := b.Get(t, "/operations/"+id)
	apptest.WantStatus(t, page, http.StatusOK)
	apptest.WantIn(t, page, `data-testid="violation-small-machines"`, "machines have at most 2 cores")

	// What complies is deployed, through the plan that was checked.
	_, id = p.deploy(t, "small", 2)
	op = p.WaitOperation(t, p.user, id)
	if op["status"] != "succeeded" {
		t.Fatalf("the deploy of a machine the policy allows: %v", op["error"])
	}
	if _, violations := check(t, op); len(violations) != 0 {
		t.Fatalf("a compliant deploy shows %v", violations)
	}
	if got := strings.Join(p.CloudFiles(t), ","); got != "disk,machine" {
		t.Fatalf("the cloud holds %s", got)
	}
}

// Those who deploy into an environment read the policies of its zone before a preview names one
// they broke; a disabled policy is not among them, and another tenant sees nothing.
func TestPolicy_ThoseWhoDeployReadTheirZonesPolicies(t *testing.T) {
	p := newPoliced(t)
	p.addPolicy(t, "small-machines", "mandatory", smallMachines, "machines have at most 2 cores")
	p.addPolicy(t, "named", "advisory", `resource.name.size() > 2`, "names say what they are")
	off := p.addPolicy(t, "off", "mandatory", "false", "nothing passes")
	apptest.WantStatus(t, p.Call(t, "PUT", "/api/v1/landing-zones/"+p.zone+"/policies/"+off["id"].(string), p.root, map[string]any{
		"name": "off", "level": "mandatory", "expression": "false", "message": "nothing passes", "enabled": false}), http.StatusOK)

	r := p.Call(t, "GET", "/api/v1/environments/"+p.env+"/policies", p.user, nil)
	apptest.WantStatus(t, r, http.StatusOK)
	var got struct{ Policies []map[string]any }
	apptest.Must(t, json.Unmarshal(r.Body, &got))
	if len(got.Policies) != 2 || got.Policies[0]["name"] != "named" || got.Policies[1]["name"] != "small-machines" ||
		got.Policies[1]["level"] != "mandatory" || got.Policies[1]["message"] != "machines have at most 2 cores" || got.Policies[1]["expression"] != smallMachines {
		t.Fatalf("user A's environment's policies: %s", r.Body)
	}
	apptest.WantStatus(t, p.Call(t, "GET", "/api/v1/environments/"+p.env+"/policies", p.Token(t, p.AdminB), nil), http.StatusNotFound)

	b := apptest.NewBrowser(t, p.URL)
	b.SignIn(t, "user-a@example.com", "long enough password")
	page := b.Get(t, "/environments/"+p.env)
	apptest.WantStatus(t, page, http.StatusOK)
	apptest.WantIn(t, page, `data-testid="environment-policy-small-machines"`, "machines have at most 2 cores", `data-testid="environment-policy-named"`)
	if strings.Contains(string(page.Body), "nothing passes") {
		t.Error("the environment's page shows a disabled policy")
	}
}

func TestPolicy_AnAdvisoryPolicyIsShownOnTheOperationAndInItsApproval(t *testing.T) {
	p := newPoliced(t)
	p.addPolicy(t, "current-image", "advisory", `!has(resource.inputs.image) || resource.inputs.image != "debian-11"`,
		"debian-11 is going away")
	r := p.Call(t, "POST", "/api/v1/approval-policies", p.admin, map[string]any{"scope": "environment", "scope_id": p.env,
		"operations": []string{"deploy"}, "approver_role": "tenant_admin"})
	apptest.WantStatus(t, r, http.StatusCreated)

	r = p.Call(t, "POST", "/api/v1/deployments", p.user, map[string]any{"component_id": p.Shared.ID, "environment_id": p.env,
		"name": "old", "parameters": map[string]any{"name": "old", "image": "debian-11"}})
	apptest.WantStatus(t, r, http.StatusAccepted)
	id := r.JSON(t)["operation"].(map[string]any)["id"].(string)
	g := &apptest.Gated{Site: p.Site}
	op := g.WaitStatus(t, p.user, id, "awaiting_approval")
	if _, violations := check(t, op); len(violations) != 2 || violations[0]["level"] != "advisory" {
		t.Fatalf("the disk and the machine should each fail the advisory policy: %v", violations)
	}
	req := g.RequestOf(t, p.admin, id, "")
	if req == nil {
		t.Fatal("no approval request for the deploy")
	}
	request := p.Call(t, "GET", "/api/v1/approvals/"+req["id"].(string), p.admin, nil)
	apptest.WantStatus(t, request, http.StatusOK)
	var withPolicy struct {
		Policy struct {
			Violations []struct{ Policy, Level, Name string }
		}
	}
	apptest.Must(t, json.Unmarshal(request.Body, &withPolicy))
	if len(withPolicy.Policy.Violations) != 2 || withPolicy.Policy.Violations[0].Policy != "current-image" {
		t.Fatalf("the approval request shows %+v", withPolicy.Policy)
	}
	b := apptest.NewBrowser(t, p.URL)
	b.SignIn(t, "admin-a@example.com", "long enough password")
	apptest.WantIn(t, b.Get(t, "/approvals/"+req["id"].(string)), `data-testid="violation-current-image"`, "debian-11 is going away")

	g.Decide(t, p.admin, req["id"].(string), "approve", "known", http.StatusOK)
	if op := p.WaitOperation(t, p.user, id); op["status"] != "succeeded" {
		t.Fatalf("the approved deploy: %v", op["error"])
	}
	if got := strings.Join(p.CloudFiles(t), ","); got != "disk,machine" {
		t.Fatalf("the cloud holds %s", got)
	}
	apptest.WantIn(t, b.Get(t, "/operations/"+id), `data-testid="violation-current-image"`, `data-level="advisory"`)
}

func TestPolicy_APreviewShowsItsCheckAndIsNotAppliedOncePoliciesChange(t *testing.T) {
	p := newPoliced(t)
	dep, id := p.deploy(t, "web", 2)
	if op := p.WaitOperation(t, p.user, id); op["status"] != "succeeded" {
		t.Fatalf("deploy: %v", op["error"])
	}
	made := p.addPolicy(t, "small-machines", "advisory", smallMachines, "machines have at most 2 cores")

	preview := func() map[string]any {
		r := p.Call(t, "POST", "/api/v1/deployments/"+dep+"/preview", p.user, map[string]any{"parameters": map[string]any{"name": "web", "cores": 4}})
		apptest.WantStatus(t, r, http.StatusAccepted)
		return p.WaitOperation(t, p.user, r.JSON(t)["id"].(string))
	}
	op := preview()
	if op["status"] != "succeeded" {
		t.Fatalf("preview: %v", op["error"])
	}
	if version, violations := check(t, op); version != 1 || len(violations) != 1 || violations[0]["name"] != "machine" {
		t.Fatalf("the preview's check: version %v, %v", version, violations)
	}
	b := apptest.NewBrowser(t, p.URL)
	b.SignIn(t, "user-a@example.com", "long enough password")
	apptest.WantIn(t, b.Get(t, "/components/"+p.Shared.ID.String()+"/deploy?preview="+op["id"].(string)),
		`data-testid="violation-small-machines"`, "machines have at most 2 cores")

	// The policy becomes mandatory: the preview's plan was not checked against that.
	r := p.Call(t, "PUT", "/api/v1/landing-zones/"+p.zone+"/policies/"+made["id"].(string), p.root, map[string]any{
		"name": "small-machines", "level": "mandatory", "expression": smallMachines, "message": "machines have at most 2 cores"})
	apptest.WantStatus(t, r, http.StatusOK)
	r = p.Call(t, "POST", "/api/v1/operations/"+op["id"].(string)+"/apply", p.user, nil)
	apptest.WantStatus(t, r, http.StatusAccepted)
	applied := p.WaitOperation(t, p.user, r.JSON(t)["id"].(string))
	if applied["status"] != "failed" || !strings.Contains(applied["error"].(string), "policies changed after the preview") {
		t.Fatalf("applying a preview checked against older policies: %v %v", applied["status"], applied["error"])
	}
	// Previewed again, it fails the mandatory policy itself, and the machine keeps its cores.
	op = preview()
	if op["status"] != "failed" || !strings.Contains(op["error"].(string), "machines have at most 2 cores") {
		t.Fatalf("a preview that fails a mandatory policy: %v %v", op["status"], op["error"])
	}
	if version, _ := check(t, op); version != 2 {
		t.Fatalf("checked against version %v, want 2", version)
	}
	if got := p.Call(t, "GET", "/api/v1/deployments/"+dep, p.user, nil).JSON(t)["parameters"].(map[string]any)["cores"]; got != 2.0 {
		t.Fatalf("the machine has %v cores", got)
	}
}

func TestPolicy_SavingChecksEachFieldAndEveryChangeIsAVersionAndAudited(t *testing.T) {
	p := newPoliced(t)
	path := "/api/v1/landing-zones/" + p.zone + "/policies"
	fields := func(r apptest.Reply) map[string]string {
		t.Helper()
		apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
		var body struct {
			Errors []struct{ Field, Rule, Message string }
		}
		apptest.Must(t, json.Unmarshal(r.Body, &body))
		out := map[string]string{}
		for _, f := range body.Errors {
			out[f.Field] = f.Rule + ": " + f.Message
		}
		return out
	}
	got := fields(p.Call(t, "POST", path, p.root, map[string]any{"name": "Bad Name", "level": "strict", "expression": "resource.type ==", "message": ""}))
	for field, want := range map[string]string{"name": "pattern", "level": "one_of", "message": "required", "expression": "line 1, column"} {
		if !strings.Contains(got[field], want) {
			t.Errorf("%s: %q, want it to say %q", field, got[field], want)
		}
	}
	got = fields(p.Call(t, "POST", path, p.root, map[string]any{"name": "typo", "level": "advisory", "message": "m",
		"expression": `resourse.type == "x"`}))
	if !strings.Contains(got["expression"], "resourse is not known here") || len(got) != 1 {
		t.Errorf("an unknown name: %v", got)
	}
	got = fields(p.Call(t, "POST", path, p.root, map[string]any{"name": "typed", "level": "advisory", "message": "m",
		"expression": `resource.name + "x"`}))
	if !strings.Contains(got["expression"], "must give true") {
		t.Errorf("a string result: %v", got)
	}

	made := p.addPolicy(t, "small-machines", "mandatory", smallMachines, "machines have at most 2 cores")
	if got := fields(p.Call(t, "POST", path, p.root, map[string]any{"name": "small-machines", "level": "advisory", "message": "m",
		"expression": "true"})); !strings.HasPrefix(got["name"], "unique") {
		t.Errorf("a second policy of the name: %v", got)
	}
	one := path + "/" + made["id"].(string)
	apptest.WantStatus(t, p.Call(t, "PUT", one, p.root, map[string]any{"name": "small-machines", "level": "advisory", "message": "prefer small",
		"expression": smallMachines, "enabled": false}), http.StatusOK)
	apptest.WantStatus(t, p.Call(t, "DELETE", one, p.root, nil), http.StatusNoContent)
	apptest.WantStatus(t, p.Call(t, "GET", one, p.root, nil), http.StatusNotFound)

	var versions struct {
		Versions []struct {
			Version    int
			Change     string
			PolicyName string `json:"policy_name"`
			ChangedBy  string `json:"changed_by"`
			Policies   []struct {
				Name, Level, Message string
				Enabled              bool
			}
		}
	}
	r := p.Call(t, "GET", path+"/versions", p.root, nil)
	apptest.WantStatus(t, r, http.StatusOK)
	apptest.Must(t, json.Unmarshal(r.Body, &versions))
	v := versions.Versions
	if len(v) != 3 || v[0].Version != 3 || v[0].Change != "remove" || len(v[0].Policies) != 0 ||
		v[1].Change != "edit" || len(v[1].Policies) != 1 || v[1].Policies[0].Level != "advisory" || v[1].Policies[0].Enabled ||
		v[2].Change != "create" || v[2].Policies[0].Level != "mandatory" || v[2].PolicyName != "small-machines" ||
		v[2].ChangedBy != "root@example.com" {
		t.Fatalf("versions: %+v", v)
	}

	r = p.Call(t, "GET", "/api/v1/audit-events?action=landing_zone.policy.", p.root, nil)
	apptest.WantStatus(t, r, http.StatusOK)
	var audit struct {
		Events []struct {
			Action   string
			TargetID string `json:"target_id"`
		}
	}
	apptest.Must(t, json.Unmarshal(r.Body, &audit))
	var actions []string
	for _, e := range audit.Events {
		actions = append(actions, e.Action)
		if e.TargetID != made["id"] {
			t.Errorf("audit event %s is about %s", e.Action, e.TargetID)
		}
	}
	if strings.Join(actions, ",") != "landing_zone.policy.remove,landing_zone.policy.edit,landing_zone.policy.create" {
		t.Fatalf("audited: %v", actions)
	}

	// Tenants do not see a zone's policies, not even that they are there.
	apptest.WantStatus(t, p.Call(t, "GET", path, p.admin, nil), http.StatusNotFound)
	apptest.WantStatus(t, p.Call(t, "POST", path, p.admin, map[string]any{"name": "mine", "level": "advisory", "message": "m", "expression": "true"}),
		http.StatusNotFound)
}

func TestPolicy_TheZonesPagesAddEditAndRemoveAPolicy(t *testing.T) {
	p := newPoliced(t)
	b := apptest.NewBrowser(t, p.URL)
	b.SignIn(t, "root@example.com", "correct horse battery")
	apptest.WantIn(t, b.Get(t, "/landing-zones/"+p.zone), `/landing-zones/`+p.zone+`/policies`)
	page := "/landing-zones/" + p.zone + "/policies"
	apptest.WantIn(t, b.Get(t, page), `data-testid="no-policies"`)

	r := b.Post(t, page, url.Values{"_csrf": {b.CSRF}, "name": {"small-machines"}, "level": {"mandatory"}, "message": {""},
		"expression": {"resource.inputs.cores <="}, "enabled": {"true"}})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	apptest.WantIn(t, r, `data-field-error="message"`, `data-field-error="expression"`, "resource.inputs.cores &lt;=")
	r = b.Post(t, page, url.Values{"_csrf": {b.CSRF}, "name": {"small-machines"}, "level": {"mandatory"}, "message": {"at most 2 cores"},
		"expression": {smallMachines}, "enabled": {"true"}})
	apptest.WantStatus(t, r, http.StatusSeeOther)
	list := b.Get(t, page)
	apptest.WantIn(t, list, `data-testid="policy-small-machines"`, `data-testid="version-1"`)

	var id string
	apptest.Must(t, p.Pool.QueryRow(t.Context(), `SELECT id FROM plan_policies WHERE name = 'small-machines'`).Scan(&id))
	apptest.WantIn(t, b.Get(t, page+"/"+id), "at most 2 cores")
	r = b.Post(t, page+"/"+id, url.Values{"_csrf": {b.CSRF}, "name": {"small-machines"}, "level": {"advisory"}, "message": {"prefer 2 cores"},
		"expression": {smallMachines}})
	apptest.WantStatus(t, r, http.StatusSeeOther)
	apptest.WantIn(t, b.Get(t, page), "prefer 2 cores", "(disabled)", `data-testid="version-2"`)
	apptest.WantStatus(t, b.Post(t, page+"/"+id+"/remove", url.Values{"_csrf": {b.CSRF}}), http.StatusSeeOther)
	apptest.WantIn(t, b.Get(t, page), `data-testid="no-policies"`, `data-testid="version-3"`)
}

// A policy added while a deploy waits for approval holds it: the plan it would apply was
// checked against other policies, and nothing is made.
func TestPolicy_APolicyAddedWhileADeployWaitsRefusesItsApply(t *testing.T) {
	p := newPoliced(t)
	p.addPolicy(t, "current-image", "advisory", `!has(resource.inputs.image) || resource.inputs.image != "debian-11"`, "debian-11 is going away")
	r := p.Call(t, "POST", "/api/v1/approval-policies", p.admin, map[string]any{"scope": "environment", "scope_id": p.env,
		"operations": []string{"deploy"}, "approver_role": "tenant_admin"})
	apptest.WantStatus(t, r, http.StatusCreated)
	_, id := p.deploy(t, "big", 4)
	g := &apptest.Gated{Site: p.Site}
	g.WaitStatus(t, p.user, id, "awaiting_approval")
	p.addPolicy(t, "small-machines", "mandatory", smallMachines, "machines have at most 2 cores")
	req := g.RequestOf(t, p.admin, id, "")
	g.Decide(t, p.admin, req["id"].(string), "approve", "looks fine", http.StatusOK)
	op := p.WaitOperation(t, p.user, id)
	if op["status"] != "failed" || !strings.Contains(op["error"].(string), "policies changed") {
		t.Fatalf("the approved deploy under a policy added since its check: %v", op)
	}
	if files := p.CloudFiles(t); len(files) != 0 {
		t.Fatalf("the cloud holds %v", files)
	}
}
