package server_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"nimbus/app/environment"
)

// policed is a site with a simcloud landing zone and tenant A's environment in it.
type policed struct {
	*site
	zone, env         string
	root, user, admin string
}

func newPoliced(t *testing.T) *policed {
	t.Helper()
	s := newSite(t)
	p := &policed{site: s, root: s.token(t, s.admin), user: s.token(t, s.userA), admin: s.token(t, s.adminA)}
	r := s.call(t, "POST", "/api/v1/landing-zones", p.root, map[string]any{"name": "eu", "provider": "simcloud"})
	wantStatus(t, r, http.StatusCreated)
	p.zone = r.json(t)["id"].(string)
	env, err := environment.NewService(s.pool).Create(t.Context(), s.adminA, s.a.ID, "dev")
	must(t, err)
	_, err = s.pool.Exec(t.Context(), `UPDATE environments SET landing_zone_id = $1 WHERE id = $2`, p.zone, env.ID)
	must(t, err)
	p.env = env.ID.String()
	return p
}

// addPolicy adds a policy to the zone as the provider admin, which must succeed.
func (p *policed) addPolicy(t *testing.T, name, level, expr, message string) map[string]any {
	t.Helper()
	r := p.call(t, "POST", "/api/v1/landing-zones/"+p.zone+"/policies", p.root,
		map[string]any{"name": name, "level": level, "expression": expr, "message": message})
	wantStatus(t, r, http.StatusCreated)
	return r.json(t)
}

// deploy asks for a machine of the given cores as user A; it returns the deployment and its
// operation.
func (p *policed) deploy(t *testing.T, name string, cores int) (deployment, operation string) {
	t.Helper()
	r := p.call(t, "POST", "/api/v1/deployments", p.user, map[string]any{"component_id": p.shared.ID, "environment_id": p.env,
		"name": name, "parameters": map[string]any{"name": name, "cores": cores}})
	wantStatus(t, r, http.StatusAccepted)
	body := r.json(t)
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
	op := p.waitOperation(t, p.user, id)
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
	if files := p.cloudFiles(t); len(files) != 0 {
		t.Fatalf("the cloud holds %v after a refused deploy", files)
	}
	version, violations := check(t, op)
	if version != 1 || len(violations) != 1 || violations[0]["name"] != "machine" || violations[0]["level"] != "mandatory" {
		t.Fatalf("the check: version %v, %v", version, violations)
	}
	if got := p.call(t, "GET", "/api/v1/deployments/"+dep, p.user, nil).json(t)["status"]; got != "failed" {
		t.Fatalf("the refused deployment is %v", got)
	}
	// The tenant's user reads why on the operation's page.
	b := newBrowser(t, p.url)
	b.signIn(t, "user-a@example.com", "long enough password")
	page := b.get(t, "/operations/"+id)
	wantStatus(t, page, http.StatusOK)
	wantIn(t, page, `data-testid="violation-small-machines"`, "machines have at most 2 cores")

	// What complies is deployed, through the plan that was checked.
	_, id = p.deploy(t, "small", 2)
	op = p.waitOperation(t, p.user, id)
	if op["status"] != "succeeded" {
		t.Fatalf("the deploy of a machine the policy allows: %v", op["error"])
	}
	if _, violations := check(t, op); len(violations) != 0 {
		t.Fatalf("a compliant deploy shows %v", violations)
	}
	if got := strings.Join(p.cloudFiles(t), ","); got != "disk,machine" {
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
	wantStatus(t, p.call(t, "PUT", "/api/v1/landing-zones/"+p.zone+"/policies/"+off["id"].(string), p.root, map[string]any{
		"name": "off", "level": "mandatory", "expression": "false", "message": "nothing passes", "enabled": false}), http.StatusOK)

	r := p.call(t, "GET", "/api/v1/environments/"+p.env+"/policies", p.user, nil)
	wantStatus(t, r, http.StatusOK)
	var got struct{ Policies []map[string]any }
	must(t, json.Unmarshal(r.body, &got))
	if len(got.Policies) != 2 || got.Policies[0]["name"] != "named" || got.Policies[1]["name"] != "small-machines" ||
		got.Policies[1]["level"] != "mandatory" || got.Policies[1]["message"] != "machines have at most 2 cores" || got.Policies[1]["expression"] != smallMachines {
		t.Fatalf("user A's environment's policies: %s", r.body)
	}
	wantStatus(t, p.call(t, "GET", "/api/v1/environments/"+p.env+"/policies", p.token(t, p.adminB), nil), http.StatusNotFound)

	b := newBrowser(t, p.url)
	b.signIn(t, "user-a@example.com", "long enough password")
	page := b.get(t, "/environments/"+p.env)
	wantStatus(t, page, http.StatusOK)
	wantIn(t, page, `data-testid="environment-policy-small-machines"`, "machines have at most 2 cores", `data-testid="environment-policy-named"`)
	if strings.Contains(string(page.body), "nothing passes") {
		t.Error("the environment's page shows a disabled policy")
	}
}

func TestPolicy_AnAdvisoryPolicyIsShownOnTheOperationAndInItsApproval(t *testing.T) {
	p := newPoliced(t)
	p.addPolicy(t, "current-image", "advisory", `!has(resource.inputs.image) || resource.inputs.image != "debian-11"`,
		"debian-11 is going away")
	r := p.call(t, "POST", "/api/v1/approval-policies", p.admin, map[string]any{"scope": "environment", "scope_id": p.env,
		"operations": []string{"deploy"}, "approver_role": "tenant_admin"})
	wantStatus(t, r, http.StatusCreated)

	r = p.call(t, "POST", "/api/v1/deployments", p.user, map[string]any{"component_id": p.shared.ID, "environment_id": p.env,
		"name": "old", "parameters": map[string]any{"name": "old", "image": "debian-11"}})
	wantStatus(t, r, http.StatusAccepted)
	id := r.json(t)["operation"].(map[string]any)["id"].(string)
	g := &gated{site: p.site}
	op := g.waitStatus(t, p.user, id, "awaiting_approval")
	if _, violations := check(t, op); len(violations) != 2 || violations[0]["level"] != "advisory" {
		t.Fatalf("the disk and the machine should each fail the advisory policy: %v", violations)
	}
	req := g.requestOf(t, p.admin, id, "")
	if req == nil {
		t.Fatal("no approval request for the deploy")
	}
	request := p.call(t, "GET", "/api/v1/approvals/"+req["id"].(string), p.admin, nil)
	wantStatus(t, request, http.StatusOK)
	var withPolicy struct {
		Policy struct {
			Violations []struct{ Policy, Level, Name string }
		}
	}
	must(t, json.Unmarshal(request.body, &withPolicy))
	if len(withPolicy.Policy.Violations) != 2 || withPolicy.Policy.Violations[0].Policy != "current-image" {
		t.Fatalf("the approval request shows %+v", withPolicy.Policy)
	}
	b := newBrowser(t, p.url)
	b.signIn(t, "admin-a@example.com", "long enough password")
	wantIn(t, b.get(t, "/approvals/"+req["id"].(string)), `data-testid="violation-current-image"`, "debian-11 is going away")

	g.decide(t, p.admin, req["id"].(string), "approve", "known", http.StatusOK)
	if op := p.waitOperation(t, p.user, id); op["status"] != "succeeded" {
		t.Fatalf("the approved deploy: %v", op["error"])
	}
	if got := strings.Join(p.cloudFiles(t), ","); got != "disk,machine" {
		t.Fatalf("the cloud holds %s", got)
	}
	wantIn(t, b.get(t, "/operations/"+id), `data-testid="violation-current-image"`, `data-level="advisory"`)
}

func TestPolicy_APreviewShowsItsCheckAndIsNotAppliedOncePoliciesChange(t *testing.T) {
	p := newPoliced(t)
	dep, id := p.deploy(t, "web", 2)
	if op := p.waitOperation(t, p.user, id); op["status"] != "succeeded" {
		t.Fatalf("deploy: %v", op["error"])
	}
	made := p.addPolicy(t, "small-machines", "advisory", smallMachines, "machines have at most 2 cores")

	preview := func() map[string]any {
		r := p.call(t, "POST", "/api/v1/deployments/"+dep+"/preview", p.user, map[string]any{"parameters": map[string]any{"name": "web", "cores": 4}})
		wantStatus(t, r, http.StatusAccepted)
		return p.waitOperation(t, p.user, r.json(t)["id"].(string))
	}
	op := preview()
	if op["status"] != "succeeded" {
		t.Fatalf("preview: %v", op["error"])
	}
	if version, violations := check(t, op); version != 1 || len(violations) != 1 || violations[0]["name"] != "machine" {
		t.Fatalf("the preview's check: version %v, %v", version, violations)
	}
	b := newBrowser(t, p.url)
	b.signIn(t, "user-a@example.com", "long enough password")
	wantIn(t, b.get(t, "/components/"+p.shared.ID.String()+"/deploy?preview="+op["id"].(string)),
		`data-testid="violation-small-machines"`, "machines have at most 2 cores")

	// The policy becomes mandatory: the preview's plan was not checked against that.
	r := p.call(t, "PUT", "/api/v1/landing-zones/"+p.zone+"/policies/"+made["id"].(string), p.root, map[string]any{
		"name": "small-machines", "level": "mandatory", "expression": smallMachines, "message": "machines have at most 2 cores"})
	wantStatus(t, r, http.StatusOK)
	r = p.call(t, "POST", "/api/v1/operations/"+op["id"].(string)+"/apply", p.user, nil)
	wantStatus(t, r, http.StatusAccepted)
	applied := p.waitOperation(t, p.user, r.json(t)["id"].(string))
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
	if got := p.call(t, "GET", "/api/v1/deployments/"+dep, p.user, nil).json(t)["parameters"].(map[string]any)["cores"]; got != 2.0 {
		t.Fatalf("the machine has %v cores", got)
	}
}

func TestPolicy_SavingChecksEachFieldAndEveryChangeIsAVersionAndAudited(t *testing.T) {
	p := newPoliced(t)
	path := "/api/v1/landing-zones/" + p.zone + "/policies"
	fields := func(r reply) map[string]string {
		t.Helper()
		wantStatus(t, r, http.StatusUnprocessableEntity)
		var body struct {
			Errors []struct{ Field, Rule, Message string }
		}
		must(t, json.Unmarshal(r.body, &body))
		out := map[string]string{}
		for _, f := range body.Errors {
			out[f.Field] = f.Rule + ": " + f.Message
		}
		return out
	}
	got := fields(p.call(t, "POST", path, p.root, map[string]any{"name": "Bad Name", "level": "strict", "expression": "resource.type ==", "message": ""}))
	for field, want := range map[string]string{"name": "pattern", "level": "one_of", "message": "required", "expression": "line 1, column"} {
		if !strings.Contains(got[field], want) {
			t.Errorf("%s: %q, want it to say %q", field, got[field], want)
		}
	}
	got = fields(p.call(t, "POST", path, p.root, map[string]any{"name": "typo", "level": "advisory", "message": "m",
		"expression": `resourse.type == "x"`}))
	if !strings.Contains(got["expression"], "resourse is not known here") || len(got) != 1 {
		t.Errorf("an unknown name: %v", got)
	}
	got = fields(p.call(t, "POST", path, p.root, map[string]any{"name": "typed", "level": "advisory", "message": "m",
		"expression": `resource.name + "x"`}))
	if !strings.Contains(got["expression"], "must give true") {
		t.Errorf("a string result: %v", got)
	}

	made := p.addPolicy(t, "small-machines", "mandatory", smallMachines, "machines have at most 2 cores")
	if got := fields(p.call(t, "POST", path, p.root, map[string]any{"name": "small-machines", "level": "advisory", "message": "m",
		"expression": "true"})); !strings.HasPrefix(got["name"], "unique") {
		t.Errorf("a second policy of the name: %v", got)
	}
	one := path + "/" + made["id"].(string)
	wantStatus(t, p.call(t, "PUT", one, p.root, map[string]any{"name": "small-machines", "level": "advisory", "message": "prefer small",
		"expression": smallMachines, "enabled": false}), http.StatusOK)
	wantStatus(t, p.call(t, "DELETE", one, p.root, nil), http.StatusNoContent)
	wantStatus(t, p.call(t, "GET", one, p.root, nil), http.StatusNotFound)

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
	r := p.call(t, "GET", path+"/versions", p.root, nil)
	wantStatus(t, r, http.StatusOK)
	must(t, json.Unmarshal(r.body, &versions))
	v := versions.Versions
	if len(v) != 3 || v[0].Version != 3 || v[0].Change != "remove" || len(v[0].Policies) != 0 ||
		v[1].Change != "edit" || len(v[1].Policies) != 1 || v[1].Policies[0].Level != "advisory" || v[1].Policies[0].Enabled ||
		v[2].Change != "create" || v[2].Policies[0].Level != "mandatory" || v[2].PolicyName != "small-machines" ||
		v[2].ChangedBy != "root@example.com" {
		t.Fatalf("versions: %+v", v)
	}

	r = p.call(t, "GET", "/api/v1/audit-events?action=landing_zone.policy.", p.root, nil)
	wantStatus(t, r, http.StatusOK)
	var audit struct {
		Events []struct {
			Action   string
			TargetID string `json:"target_id"`
		}
	}
	must(t, json.Unmarshal(r.body, &audit))
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
	wantStatus(t, p.call(t, "GET", path, p.admin, nil), http.StatusNotFound)
	wantStatus(t, p.call(t, "POST", path, p.admin, map[string]any{"name": "mine", "level": "advisory", "message": "m", "expression": "true"}),
		http.StatusNotFound)
}

func TestPolicy_TheZonesPagesAddEditAndRemoveAPolicy(t *testing.T) {
	p := newPoliced(t)
	b := newBrowser(t, p.url)
	b.signIn(t, "root@example.com", "correct horse battery")
	wantIn(t, b.get(t, "/landing-zones/"+p.zone), `/landing-zones/`+p.zone+`/policies`)
	page := "/landing-zones/" + p.zone + "/policies"
	wantIn(t, b.get(t, page), `data-testid="no-policies"`)

	r := b.post(t, page, url.Values{"_csrf": {b.csrf}, "name": {"small-machines"}, "level": {"mandatory"}, "message": {""},
		"expression": {"resource.inputs.cores <="}, "enabled": {"true"}})
	wantStatus(t, r, http.StatusUnprocessableEntity)
	wantIn(t, r, `data-field-error="message"`, `data-field-error="expression"`, "resource.inputs.cores &lt;=")
	r = b.post(t, page, url.Values{"_csrf": {b.csrf}, "name": {"small-machines"}, "level": {"mandatory"}, "message": {"at most 2 cores"},
		"expression": {smallMachines}, "enabled": {"true"}})
	wantStatus(t, r, http.StatusSeeOther)
	list := b.get(t, page)
	wantIn(t, list, `data-testid="policy-small-machines"`, `data-testid="version-1"`)

	var id string
	must(t, p.pool.QueryRow(t.Context(), `SELECT id FROM plan_policies WHERE name = 'small-machines'`).Scan(&id))
	wantIn(t, b.get(t, page+"/"+id), "at most 2 cores")
	r = b.post(t, page+"/"+id, url.Values{"_csrf": {b.csrf}, "name": {"small-machines"}, "level": {"advisory"}, "message": {"prefer 2 cores"},
		"expression": {smallMachines}})
	wantStatus(t, r, http.StatusSeeOther)
	wantIn(t, b.get(t, page), "prefer 2 cores", "(disabled)", `data-testid="version-2"`)
	wantStatus(t, b.post(t, page+"/"+id+"/remove", url.Values{"_csrf": {b.csrf}}), http.StatusSeeOther)
	wantIn(t, b.get(t, page), `data-testid="no-policies"`, `data-testid="version-3"`)
}

// A policy added while a deploy waits for approval holds it: the plan it would apply was
// checked against other policies, and nothing is made.
func TestPolicy_APolicyAddedWhileADeployWaitsRefusesItsApply(t *testing.T) {
	p := newPoliced(t)
	p.addPolicy(t, "current-image", "advisory", `!has(resource.inputs.image) || resource.inputs.image != "debian-11"`, "debian-11 is going away")
	r := p.call(t, "POST", "/api/v1/approval-policies", p.admin, map[string]any{"scope": "environment", "scope_id": p.env,
		"operations": []string{"deploy"}, "approver_role": "tenant_admin"})
	wantStatus(t, r, http.StatusCreated)
	_, id := p.deploy(t, "big", 4)
	g := &gated{site: p.site}
	g.waitStatus(t, p.user, id, "awaiting_approval")
	p.addPolicy(t, "small-machines", "mandatory", smallMachines, "machines have at most 2 cores")
	req := g.requestOf(t, p.admin, id, "")
	g.decide(t, p.admin, req["id"].(string), "approve", "looks fine", http.StatusOK)
	op := p.waitOperation(t, p.user, id)
	if op["status"] != "failed" || !strings.Contains(op["error"].(string), "policies changed") {
		t.Fatalf("the approved deploy under a policy added since its check: %v", op)
	}
	if files := p.cloudFiles(t); len(files) != 0 {
		t.Fatalf("the cloud holds %v", files)
	}
}
