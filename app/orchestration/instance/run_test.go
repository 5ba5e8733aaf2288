package instance_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"nimbus/app/apptest"
	"nimbus/app/domain/stack"
	"nimbus/app/orchestration/environment"
)

func TestStack_DeploysInGraphOrderWithIndependentSlotsAtOnce(t *testing.T) {
	s := apptest.NewSite(t)
	stackID := apptest.PublishedStack(t, s, "web", apptest.WebStack(t, s, 1500))
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	user, admin := s.Token(t, s.UserA), s.Token(t, s.AdminA)

	r := s.Call(t, "POST", "/api/v1/stack-instances", user, map[string]any{
		"stack_id": stackID, "environment_id": env.ID, "name": "shop", "parameters": map[string]any{"prefix": "shop", "cores": 3}})
	apptest.WantStatus(t, r, http.StatusAccepted)
	id := r.JSON(t)["id"].(string)
	inst := s.WaitInstance(t, user, id, apptest.Status("active", "failed"))
	if inst["status"] != "active" || inst["state"] != "active" {
		t.Fatalf("instance %v: want active, in its initial state", inst)
	}
	slots := map[string]map[string]any{}
	for _, sl := range inst["slots"].([]any) {
		slot := sl.(map[string]any)
		slots[slot["name"].(string)] = slot
		if slot["status"] != "deployed" {
			t.Fatalf("slot %v is not deployed", slot)
		}
	}
	netID := slots["net"]["outputs"].(map[string]any)["network_id"].(string)
	if !strings.HasPrefix(netID, "n-") {
		t.Fatalf("the network's outputs: %v", slots["net"]["outputs"])
	}
	// The machines on the network were given its ID, and the stack's cores.
	for _, name := range []string{"a", "b"} {
		d := s.Call(t, "GET", "/api/v1/deployments/"+slots[name]["deployment_id"].(string), user, nil).JSON(t)
		params := d["parameters"].(map[string]any)
		if params["network_id"] != netID || params["name"] != "shop-"+name || params["cores"] != float64(3) {
			t.Fatalf("slot %s deployed with %v, want on %s with 3 cores", name, params, netID)
		}
	}
	ops := s.SlotOperations(t, user, id, "deploy")
	at := func(slot, field string) time.Time {
		ts, err := time.Parse(time.RFC3339Nano, ops[slot][field].(string))
		apptest.Must(t, err)
		return ts
	}
	if !at("net", "finished_at").Before(at("a", "started_at")) || !at("net", "finished_at").Before(at("b", "started_at")) {
		t.Fatal("a machine started before the network it joins was deployed")
	}
	if !at("a", "started_at").Before(at("b", "finished_at")) || !at("b", "started_at").Before(at("a", "finished_at")) {
		t.Fatalf("a (%s–%s) and b (%s–%s) did not run at once", at("a", "started_at"), at("a", "finished_at"), at("b", "started_at"), at("b", "finished_at"))
	}
	if c := at("c", "started_at"); c.Before(at("a", "finished_at")) || c.Before(at("b", "finished_at")) {
		t.Fatal("c started before both machines it depends on were deployed")
	}
	if got := len(s.CloudFiles(t)); got != 7 {
		t.Fatalf("the cloud holds %d things, want a network, three machines and their disks", got)
	}

	// What a stack holds is changed through the stack, and stays while the stack needs it.
	r = s.Call(t, "POST", "/api/v1/deployments/"+slots["a"]["deployment_id"].(string)+"/destroy", admin, nil)
	if r.Status != http.StatusUnprocessableEntity || !strings.Contains(string(r.Body), "through the instance") {
		t.Fatalf("destroying a slot's deployment by hand: %d %s", r.Status, r.Body)
	}
	r = s.Call(t, "POST", "/api/v1/environments/"+env.ID.String()+"/decommission", admin, nil)
	if r.Status != http.StatusUnprocessableEntity || !strings.Contains(string(r.Body), "holds stack instances shop") {
		t.Fatalf("decommissioning the environment under the stack: %d %s", r.Status, r.Body)
	}

	r = s.Call(t, "DELETE", "/api/v1/stack-instances/"+id, admin, nil)
	apptest.WantStatus(t, r, http.StatusAccepted)
	inst = s.WaitInstance(t, admin, id, apptest.Status("destroyed", "failed"))
	if inst["status"] != "destroyed" {
		t.Fatalf("destroy: %v", inst)
	}
	if files := s.CloudFiles(t); len(files) != 0 {
		t.Fatalf("left in the cloud after destroy: %v", files)
	}
	// Nothing deploys the machine's version any more, but the stack's version would again.
	r = s.Call(t, "POST", "/api/v1/components/"+slots["a"]["component_id"].(string)+"/versions/1/archive", s.Token(t, s.Admin), nil)
	if r.Status != http.StatusUnprocessableEntity || !strings.Contains(string(r.Body), "slot of stacks web") {
		t.Fatalf("archiving a component version a stack pins: %d %s", r.Status, r.Body)
	}
	ops = s.SlotOperations(t, admin, id, "destroy")
	if !at("c", "finished_at").Before(at("a", "started_at")) || !at("a", "finished_at").Before(at("net", "started_at")) ||
		!at("b", "finished_at").Before(at("net", "started_at")) {
		t.Fatal("destroy did not go in reverse order")
	}
}

func TestStack_SlotFailingOnFirstDeployTakesDownWhatWasMade(t *testing.T) {
	s := apptest.NewSite(t)
	def := apptest.WebStack(t, s, 0)
	def.Slots[3].Inputs["fail_on"] = stack.Wiring{Kind: stack.Literal, Value: "create"}
	stackID := apptest.PublishedStack(t, s, "doomed", def)
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	user := s.Token(t, s.UserA)
	r := s.Call(t, "POST", "/api/v1/stack-instances", user, map[string]any{
		"stack_id": stackID, "environment_id": env.ID, "name": "doomed", "parameters": map[string]any{"prefix": "doomed"}})
	apptest.WantStatus(t, r, http.StatusAccepted)
	id := r.JSON(t)["id"].(string)
	inst := s.WaitInstance(t, user, id, func(m map[string]any) bool {
		return m["status"] == "failed" && strings.Contains(m["error"].(string), "What it had made was removed.")
	})
	if !strings.Contains(inst["error"].(string), "c:") || !strings.Contains(inst["error"].(string), "injected failure") {
		t.Fatalf("the instance does not say which slot failed and why: %v", inst["error"])
	}
	if files := s.CloudFiles(t); len(files) != 0 {
		t.Fatalf("left in the cloud after a failed first deploy: %v", files)
	}
	for _, sl := range inst["slots"].([]any) {
		if slot := sl.(map[string]any); slot["status"] != "destroyed" && slot["status"] != "failed" {
			t.Fatalf("slot %v after compensation", slot)
		}
	}
	if inst["state"] != "" {
		t.Fatalf("a stack never deployed entered state %v", inst["state"])
	}
}

// publishVersion records version n of a stack straight in the database.
func publishVersion(t *testing.T, s *apptest.Site, stackID uuid.UUID, n int, def stack.Definition) {
	t.Helper()
	def.Operations = nil
	raw, _ := json.Marshal(def)
	_, err := s.Pool.Exec(context.Background(), `INSERT INTO stack_versions (stack_id, version, definition, changelog) VALUES ($1, $2, $3, 'next')`, stackID, n, raw)
	apptest.Must(t, err)
}

func TestStack_UpgradeAddsASlotAndAFailedUpgradeRollsBack(t *testing.T) {
	s := apptest.NewSite(t)
	v1 := apptest.WebStack(t, s, 0)
	stackID := apptest.PublishedStack(t, s, "web", v1)
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	user, admin := s.Token(t, s.UserA), s.Token(t, s.AdminA)
	r := s.Call(t, "POST", "/api/v1/stack-instances", user, map[string]any{
		"stack_id": stackID, "environment_id": env.ID, "name": "shop", "parameters": map[string]any{"prefix": "shop"}})
	apptest.WantStatus(t, r, http.StatusAccepted)
	id := r.JSON(t)["id"].(string)
	if inst := s.WaitInstance(t, user, id, apptest.Status("active", "failed")); inst["status"] != "active" {
		t.Fatalf("deploy: %v", inst)
	}

	// Version 2 adds a machine after c.
	v2 := apptest.WebStack(t, s, 0)
	d := v2.Slots[3]
	d.Name, d.DependsOn = "d", []string{"c"}
	d.Inputs = map[string]stack.Wiring{"name": {Kind: stack.Expression, Expr: `params.prefix + "-d"`}}
	v2.Slots = append(v2.Slots, d)
	publishVersion(t, s, stackID, 2, v2)
	plan := s.Call(t, "GET", "/api/v1/stack-instances/"+id+"/upgrade", user, nil).JSON(t)
	changes := map[string]string{}
	for _, p := range plan["slots"].([]any) {
		changes[p.(map[string]any)["slot"].(string)] = p.(map[string]any)["change"].(string)
	}
	if changes["d"] != "added" || changes["a"] != "untouched" || plan["to"] != float64(2) {
		t.Fatalf("upgrade plan %v", plan)
	}
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/stack-instances/"+id+"/upgrade", user, map[string]any{}), http.StatusForbidden)
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/stack-instances/"+id+"/upgrade", admin, map[string]any{"version": 2}), http.StatusAccepted)
	inst := s.WaitInstance(t, admin, id, func(m map[string]any) bool { return m["status"] != "upgrading" })
	if inst["status"] != "active" || inst["version"] != float64(2) || len(inst["slots"].([]any)) != 5 {
		t.Fatalf("after the upgrade: %v", inst)
	}
	s.MachineCores(t, "shop-d")

	// Version 3 gives a and b more cores and adds a machine that cannot be made: the upgrade
	// fails, and the machines that got their cores get their old ones back.
	v3 := apptest.WebStack(t, s, 0)
	v3.Slots = append(v3.Slots, d)
	for _, i := range []int{1, 2} {
		v3.Slots[i].Inputs["cores"] = stack.Wiring{Kind: stack.Literal, Value: 6}
	}
	e := d
	e.Name, e.DependsOn = "e", []string{"a", "b"}
	e.Inputs = map[string]stack.Wiring{"name": {Kind: stack.Expression, Expr: `params.prefix + "-e"`}, "fail_on": {Kind: stack.Literal, Value: "create"}}
	v3.Slots = append(v3.Slots, e)
	publishVersion(t, s, stackID, 3, v3)
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/stack-instances/"+id+"/upgrade", admin, map[string]any{}), http.StatusAccepted)
	inst = s.WaitInstance(t, admin, id, func(m map[string]any) bool {
		return m["status"] != "upgrading" && strings.Contains(m["error"].(string), "rolled back")
	})
	if inst["status"] != "active" || inst["version"] != float64(2) || !strings.Contains(inst["error"].(string), "e:") {
		t.Fatalf("after the failed upgrade: %v", inst)
	}
	for _, name := range []string{"shop-a", "shop-b"} {
		if got := s.MachineCores(t, name); got != 2 {
			t.Fatalf("%s has %v cores after the rollback, want its 2 again", name, got)
		}
	}
	if got := len(s.CloudFiles(t)); got != 9 {
		t.Fatalf("the cloud holds %d things after the rollback, want the network and four machines with their disks", got)
	}
}

// slotsByName returns an instance's slots by name, as the API shows them.
func slotsByName(inst map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, sl := range inst["slots"].([]any) {
		slot := sl.(map[string]any)
		out[slot["name"].(string)] = slot
	}
	return out
}

func TestStack_FailedUpgradeRollsAReplacedSlotBackOntoItsOldComponent(t *testing.T) {
	s := apptest.NewSite(t)
	ids := apptest.BuiltinIDs(t, s)
	stackID := apptest.PublishedStack(t, s, "web", apptest.WebStack(t, s, 0))
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	user, admin := s.Token(t, s.UserA), s.Token(t, s.AdminA)
	r := s.Call(t, "POST", "/api/v1/stack-instances", user, map[string]any{
		"stack_id": stackID, "environment_id": env.ID, "name": "shop", "parameters": map[string]any{"prefix": "shop"}})
	apptest.WantStatus(t, r, http.StatusAccepted)
	id := r.JSON(t)["id"].(string)
	before := slotsByName(s.WaitInstance(t, user, id, apptest.Status("active", "failed")))
	if before["a"]["status"] != "deployed" {
		t.Fatalf("deploy: %v", before)
	}

	// Version 2 puts a network in slot a, and adds after it a machine that cannot be made: the
	// upgrade destroys machine a, deploys the network, then fails.
	v2 := apptest.WebStack(t, s, 0)
	v2.Slots[1] = stack.Slot{Name: "a", Component: uuid.MustParse(ids["simcloud-network"]), Version: 1, Inputs: map[string]stack.Wiring{
		"name": {Kind: stack.Expression, Expr: `params.prefix + "-a-net"`},
		"cidr": {Kind: stack.Literal, Value: "10.30.0.0/16"},
	}}
	e := v2.Slots[3]
	e.Name, e.DependsOn = "e", []string{"a"}
	e.Inputs = map[string]stack.Wiring{"name": {Kind: stack.Expression, Expr: `params.prefix + "-e"`}, "fail_on": {Kind: stack.Literal, Value: "create"}}
	v2.Slots = append(v2.Slots, e)
	publishVersion(t, s, stackID, 2, v2)
	plan := s.Call(t, "GET", "/api/v1/stack-instances/"+id+"/upgrade", user, nil).JSON(t)
	if p := plan["slots"].([]any)[1].(map[string]any); p["slot"] != "a" || p["change"] != "replaced" {
		t.Fatalf("upgrade plan %v", plan)
	}
	inst := s.UpgradeAndRollBack(t, admin, id, 2, "e")

	// Slot a holds a machine again: a new deployment under its old name, of the old
	// component, wired from the stack's parameters and the network.
	a := slotsByName(inst)["a"]
	if a["deployment_id"] == before["a"]["deployment_id"] || a["deployment"] != "shop-a" {
		t.Fatalf("slot a after the rollback: %v, before the upgrade: %v", a, before["a"])
	}
	dep := s.Call(t, "GET", "/api/v1/deployments/"+a["deployment_id"].(string), user, nil).JSON(t)
	params := dep["parameters"].(map[string]any)
	if dep["component_id"] != ids["simcloud-machine"] || dep["version"] != float64(1) || params["name"] != "shop-a" ||
		params["network_id"] != before["net"]["outputs"].(map[string]any)["network_id"] {
		t.Fatalf("slot a's deployment after the rollback: %v", dep)
	}
	if got := s.MachineCores(t, "shop-a"); got != 2 {
		t.Fatalf("shop-a has %v cores after the rollback, want 2", got)
	}
	files := s.CloudFiles(t)
	networks := slices.DeleteFunc(slices.Clone(files), func(f string) bool { return f != "network" })
	if len(files) != 7 || len(networks) != 1 {
		t.Fatalf("the cloud holds %v after the rollback, want the network and three machines with their disks", files)
	}
	// The network the upgrade put in slot a went first, then the machine came back.
	ops := s.SlotOperations(t, admin, id, "rollback")
	if ops["e"]["kind"] != "destroy" || ops["a"]["kind"] != "deploy" || ops["a"]["deployment_id"] != a["deployment_id"] {
		t.Fatalf("the rollback's operations: %v", ops)
	}
}

func TestStack_FailedUpgradeRedeploysADroppedSlotItHadDestroyed(t *testing.T) {
	s := apptest.NewSite(t)
	ids := apptest.BuiltinIDs(t, s)
	net, machine := uuid.MustParse(ids["simcloud-network"]), uuid.MustParse(ids["simcloud-machine"])
	keep := stack.Slot{Name: "net", Component: net, Version: 1, Inputs: map[string]stack.Wiring{
		"name": {Kind: stack.Literal, Value: "keep-net"}, "cidr": {Kind: stack.Literal, Value: "10.40.0.0/16"}}}
	machines := stack.Machine{States: []stack.State{{Name: "active", Initial: true}}}
	// Machine y cannot be destroyed; machine x is named after y's, so it reads from y.
	stackID := apptest.PublishedStack(t, s, "pair", stack.Definition{
		Parameters: json.RawMessage(`{"type":"object","properties":{}}`),
		Slots: []stack.Slot{keep,
			{Name: "y", Component: machine, Version: 1, Inputs: map[string]stack.Wiring{
				"name": {Kind: stack.Literal, Value: "pair-y"}, "fail_on": {Kind: stack.Literal, Value: "delete"}}},
			{Name: "x", Component: machine, Version: 1, Inputs: map[string]stack.Wiring{
				"name": {Kind: stack.Expression, Expr: `slots.y.outputs.machine_id + "-x"`}}},
		},
		Machine: machines,
	})
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	admin := s.Token(t, s.AdminA)
	r := s.Call(t, "POST", "/api/v1/stack-instances", admin, map[string]any{"stack_id": stackID, "environment_id": env.ID, "name": "pair"})
	apptest.WantStatus(t, r, http.StatusAccepted)
	id := r.JSON(t)["id"].(string)
	before := slotsByName(s.WaitInstance(t, admin, id, apptest.Status("active", "failed")))
	if before["x"]["status"] != "deployed" {
		t.Fatalf("deploy: %v", before)
	}
	xName := before["y"]["outputs"].(map[string]any)["machine_id"].(string) + "-x"
	s.MachineCores(t, xName)

	// Version 2 drops both machines. Dropped slots go last, x before y, which it reads from:
	// x is destroyed, then y's destroy fails.
	publishVersion(t, s, stackID, 2, stack.Definition{Parameters: json.RawMessage(`{"type":"object","properties":{}}`),
		Slots: []stack.Slot{keep}, Machine: machines})
	inst := s.UpgradeAndRollBack(t, admin, id, 2, "y")

	after := slotsByName(inst)
	if after["x"]["deployment_id"] == before["x"]["deployment_id"] || after["y"]["deployment_id"] != before["y"]["deployment_id"] {
		t.Fatalf("slots after the rollback: %v, before the upgrade: %v", after, before)
	}
	s.MachineCores(t, xName)
	if files := s.CloudFiles(t); len(files) != 5 {
		t.Fatalf("the cloud holds %v after the rollback, want the network and both machines with their disks", files)
	}
	// The upgrade destroyed x before y's destroy failed; the rollback applied y again, then
	// deployed x anew from y's outputs.
	ups := s.SlotOperations(t, admin, id, "upgrade")
	if ups["x"]["kind"] != "destroy" || ups["x"]["status"] != "succeeded" || ups["y"]["status"] != "failed" {
		t.Fatalf("the upgrade's operations: %v", ups)
	}
	ops := s.SlotOperations(t, admin, id, "rollback")
	if ops["y"]["kind"] != "update" || ops["x"]["kind"] != "deploy" {
		t.Fatalf("the rollback's operations: %v", ops)
	}
	yDone, err := time.Parse(time.RFC3339Nano, ops["y"]["finished_at"].(string))
	apptest.Must(t, err)
	xStart, err := time.Parse(time.RFC3339Nano, ops["x"]["started_at"].(string))
	apptest.Must(t, err)
	if xStart.Before(yDone) {
		t.Fatal("x was deployed again before y, which it reads from, was back")
	}
}

func TestStack_RollbackThatFailsLeavesTheInstanceDegraded(t *testing.T) {
	s := apptest.NewSite(t)
	stackID := apptest.PublishedStack(t, s, "web", apptest.WebStack(t, s, 0))
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	admin := s.Token(t, s.AdminA)
	r := s.Call(t, "POST", "/api/v1/stack-instances", admin, map[string]any{
		"stack_id": stackID, "environment_id": env.ID, "name": "shop", "parameters": map[string]any{"prefix": "shop"}})
	apptest.WantStatus(t, r, http.StatusAccepted)
	id := r.JSON(t)["id"].(string)
	if inst := s.WaitInstance(t, admin, id, apptest.Status("active", "failed")); inst["status"] != "active" {
		t.Fatalf("deploy: %v", inst)
	}
	// Version 2 adds a machine that cannot be destroyed, and after it one that cannot be made:
	// the rollback cannot take the first down.
	v2 := apptest.WebStack(t, s, 0)
	d := v2.Slots[3]
	d.Name, d.DependsOn = "d", []string{"c"}
	d.Inputs = map[string]stack.Wiring{"name": {Kind: stack.Expression, Expr: `params.prefix + "-d"`}, "fail_on": {Kind: stack.Literal, Value: "delete"}}
	e := d
	e.Name, e.DependsOn = "e", []string{"d"}
	e.Inputs = map[string]stack.Wiring{"name": {Kind: stack.Expression, Expr: `params.prefix + "-e"`}, "fail_on": {Kind: stack.Literal, Value: "create"}}
	v2.Slots = append(v2.Slots, d, e)
	publishVersion(t, s, stackID, 2, v2)
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/stack-instances/"+id+"/upgrade", admin, map[string]any{"version": 2}), http.StatusAccepted)
	inst := s.WaitInstance(t, admin, id, func(m map[string]any) bool { return m["status"] != "upgrading" })
	msg := inst["error"].(string)
	if inst["status"] != "degraded" || inst["version"] != float64(1) || !strings.Contains(msg, "e:") ||
		!strings.Contains(msg, "Rolling back stopped too: d:") {
		t.Fatalf("after the failed rollback: %v", inst)
	}
}

// zoneEnvironment opens an environment in a published landing zone whose resolvers hand out
// names and addresses from a pool, and returns it with the pool's ID. The environment comes
// with a network of its own, holding one range of the pool.
func zoneEnvironment(t *testing.T, s *apptest.Site) (env, pool string) {
	t.Helper()
	root, admin := s.Token(t, s.Admin), s.Token(t, s.AdminA)
	r := s.Call(t, "POST", "/api/v1/landing-zones", root, map[string]any{"name": "sim-eu", "provider": "simcloud"})
	apptest.WantStatus(t, r, http.StatusCreated)
	zone := r.JSON(t)["id"].(string)
	r = s.Call(t, "POST", "/api/v1/ipam/pools", root, map[string]any{"name": "eu-net", "prefix": "10.60.0.0/16", "landing_zone_id": zone})
	apptest.WantStatus(t, r, http.StatusCreated)
	pool = r.JSON(t)["id"].(string)
	apptest.WantStatus(t, s.Call(t, "PUT", "/api/v1/landing-zones/"+zone+"/resolvers/ipam", root, map[string]any{"pool_id": pool, "subnet_bits": 24}), http.StatusOK)
	apptest.WantStatus(t, s.Call(t, "PUT", "/api/v1/landing-zones/"+zone+"/resolvers/naming", root,
		map[string]any{"pattern": "{tenant}-{env}-{seq:02d}", "domain": "eu.example.com"}), http.StatusOK)
	ids := apptest.BuiltinIDs(t, s)
	r = s.Call(t, "POST", "/api/v1/landing-zones/"+zone+"/templates", root, map[string]any{"name": "base", "mandatory_components": []map[string]any{
		{"component_id": ids["simcloud-network"], "name": "base", "parameters": map[string]any{"name": "base-net"}}}})
	apptest.WantStatus(t, r, http.StatusCreated)
	template := r.JSON(t)["id"].(string)
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/landing-zones/"+zone+"/publish", root, nil), http.StatusAccepted)
	s.WaitZoneServices(t, root, zone)
	r = s.Call(t, "POST", "/api/v1/environments", admin, map[string]any{"tenant_id": s.A.ID, "name": "dev", "template_id": template})
	apptest.WantStatus(t, r, http.StatusAccepted)
	env = r.JSON(t)["id"].(string)
	if got := s.WaitEnvironment(t, admin, env); got["status"] != "active" {
		t.Fatalf("the environment: %v", got)
	}
	return env, pool
}

func TestStack_FailedSlotInAZoneLeavesNoAddressesHeld(t *testing.T) {
	s := apptest.NewSite(t)
	ids := apptest.BuiltinIDs(t, s)
	net, machine := uuid.MustParse(ids["simcloud-network"]), uuid.MustParse(ids["simcloud-machine"])
	// The zone names the machines and hands out the network's range and the machines' addresses.
	onNet := func(name string, fail string) stack.Slot {
		return stack.Slot{Name: name, Component: machine, Version: 1, Inputs: map[string]stack.Wiring{
			"network_id": {Kind: stack.Output, Slot: "net", Output: "network_id"},
			"fail_on":    {Kind: stack.Literal, Value: fail},
		}}
	}
	bad := onNet("c", "create")
	bad.DependsOn = []string{"a", "b"}
	stackID := apptest.PublishedStack(t, s, "zoned", stack.Definition{
		Parameters: json.RawMessage(`{"type":"object","properties":{}}`),
		Slots: []stack.Slot{
			{Name: "net", Component: net, Version: 1, Inputs: map[string]stack.Wiring{"name": {Kind: stack.Literal, Value: "zoned-net"}}},
			onNet("a", ""), onNet("b", ""), bad,
		},
		Machine: stack.Machine{States: []stack.State{{Name: "active", Initial: true}}},
	})
	env, pool := zoneEnvironment(t, s)
	user := s.Token(t, s.UserA)
	r := s.Call(t, "POST", "/api/v1/stack-instances", user, map[string]any{"stack_id": stackID, "environment_id": env, "name": "zoned"})
	apptest.WantStatus(t, r, http.StatusAccepted)
	id := r.JSON(t)["id"].(string)
	inst := s.WaitInstance(t, user, id, func(m map[string]any) bool {
		return m["status"] == "failed" && strings.Contains(m["error"].(string), "What it had made was removed.")
	})
	if files := s.CloudFiles(t); len(files) != 1 || files[0] != "network" {
		t.Fatalf("the cloud holds %v, want only the environment's own network (%v)", files, inst)
	}
	if n := apptest.PoolAllocations(t, s, pool); n != 1 {
		t.Fatalf("%d ranges and addresses of the zone's pool held after the failed stack was taken down, want only the environment's own network's", n)
	}
	// What it deployed had been given its addresses from the pool while it stood.
	var held int
	apptest.Must(t, s.Pool.QueryRow(context.Background(), `SELECT count(*) FROM deployed_components WHERE stack_instance_id = $1 AND parameters->>'ip_address' LIKE '10.60.%'`, id).Scan(&held))
	if held < 2 {
		t.Fatalf("only %d of the stack's machines had an address from the pool: the test proves nothing", held)
	}
}
