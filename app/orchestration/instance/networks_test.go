package instance_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/google/uuid"

	"nimbus/app/apptest"
	"nimbus/app/domain/stack"
)

// TestStack_MachinesJoinTheNetworkSlotsChosenInTheEditor: a stack of two networks and three
// machines, each machine's network_id chosen in the editor among the network slots (the only
// slots offered for it) and saved from the editor's form. Wiring a machine to another
// machine's output is refused where it is wired. Deployed in a zone handing out ranges and
// addresses, each machine gets an address inside the range of the network its slot joins,
// with that range's gateway.
func TestStack_MachinesJoinTheNetworkSlotsChosenInTheEditor(t *testing.T) {
	s := apptest.NewSite(t)
	net := uuid.MustParse(apptest.BuiltinIDs(t, s)["simcloud-network"])
	machine := uuid.MustParse(apptest.GatewayMachine(t, s))
	joins := map[string]string{"a": "core", "b": "core", "c": "edge"}
	slots := []stack.Slot{
		{Name: "core", Component: net, Version: 1, Inputs: map[string]stack.Wiring{"name": {Kind: stack.Literal, Value: "nested-core"}}},
		{Name: "edge", Component: net, Version: 1, Inputs: map[string]stack.Wiring{"name": {Kind: stack.Literal, Value: "nested-edge"}}},
		{Name: "a", Component: machine, Version: 1}, {Name: "b", Component: machine, Version: 1},
		// Wired to another machine: what the editor no longer offers, and the check refuses.
		{Name: "c", Component: machine, Version: 1, Inputs: map[string]stack.Wiring{"network_id": {Kind: stack.Output, Slot: "a", Output: "machine_id"}}},
	}
	def := stack.Definition{Parameters: []byte(`{"type":"object","properties":{}}`), Slots: slots,
		Machine: stack.Machine{States: []stack.State{{Name: "active", Initial: true}}}}
	root := s.Token(t, s.Admin)
	r := s.Call(t, "POST", "/api/v1/stacks", root, map[string]any{"provider": "simcloud", "name": "nested", "draft": def})
	apptest.WantStatus(t, r, http.StatusCreated)
	stackID := r.JSON(t)["id"].(string)
	r = s.Call(t, "POST", "/api/v1/stacks/"+stackID+"/publish", root, map[string]any{"changelog": "first"})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	apptest.WantProblem(t, r, "slots.c.inputs.network_id", "refers_to")

	// The editor offers each machine's network_id as a choice of the network slots alone.
	b := apptest.NewBrowser(t, s.URL)
	b.SignIn(t, "root@example.com", "correct horse battery")
	page := string(b.Get(t, "/stacks/"+stackID+"/edit").Body)
	form := url.Values{"_csrf": {b.CSRF}, "op": {"save"}, "display_name": {"nested"}, "m.s.0.name": {"active"}, "m.initial": {"0"}}
	for i, sl := range slots {
		at := "s." + strconv.Itoa(i) + "."
		form.Set(at+"name", sl.Name)
		form.Set(at+"component", sl.Component.String())
		form.Set(at+"version", "1")
		if sl.Component == net {
			form.Set(at+"inputs", "name")
			form.Set(at+"in.name.kind", "literal")
			form.Set(at+"in.name.type", "string")
			form.Set(at+"in.name.literal", "nested-"+sl.Name)
			continue
		}
		offered := slotChoices(t, page, at+"in.network_id.kind")
		want := []string{"slot core (VirtualNetwork)", "slot edge (VirtualNetwork)"}
		if sl.Name == "c" {
			want = append(want, "output a.machine_id (does not fit)")
		}
		var labels []string
		for _, o := range offered {
			if o[0] != "" && o[0] != "literal" && o[0] != "expr" {
				labels = append(labels, o[1])
			}
		}
		if slices.Sort(labels); !slices.Equal(labels, slices.Sorted(slices.Values(want))) {
			t.Fatalf("slot %s's network_id offers %q, want %q", sl.Name, labels, want)
		}
		i := slices.IndexFunc(offered, func(o [2]string) bool { return o[1] == "slot "+joins[sl.Name]+" (VirtualNetwork)" })
		form.Set(at+"inputs", "network_id")
		form.Set(at+"in.network_id.kind", offered[i][0])
	}
	r = b.Post(t, "/stacks/"+stackID+"/edit", form)
	apptest.WantStatus(t, r, http.StatusOK)
	if problems := regexp.MustCompile(`data-problem="[^"]*">[^<]*`).FindAllString(string(r.Body), -1); len(problems) > 0 {
		t.Fatalf("the draft saved from the editor has problems: %q", problems)
	}
	r = s.Call(t, "POST", "/api/v1/stacks/"+stackID+"/publish", root, map[string]any{"changelog": "first"})
	apptest.WantStatus(t, r, http.StatusCreated)

	env, _ := zoneEnvironment(t, s)
	user := s.Token(t, s.UserA)
	r = s.Call(t, "POST", "/api/v1/stack-instances", user, map[string]any{"stack_id": stackID, "environment_id": env, "name": "nested"})
	apptest.WantStatus(t, r, http.StatusAccepted)
	id := r.JSON(t)["id"].(string)
	if inst := s.WaitInstance(t, user, id, apptest.Status("active", "failed")); inst["status"] != "active" {
		t.Fatalf("deploy: %v", inst)
	}
	params := map[string]map[string]any{}
	rows, err := s.Pool.Query(context.Background(), `SELECT slot, parameters FROM deployed_components WHERE stack_instance_id = $1`, id)
	apptest.Must(t, err)
	for rows.Next() {
		var slot string
		var p map[string]any
		apptest.Must(t, rows.Scan(&slot, &p))
		params[slot] = p
	}
	apptest.Must(t, rows.Err())
	apptest.WantJoined(t, params, joins)
}

// slotChoices are the options of the editor's select named name, as value and label.
func slotChoices(t *testing.T, page, name string) [][2]string {
	t.Helper()
	sel := regexp.MustCompile(`(?s)<select name="` + regexp.QuoteMeta(name) + `"[^>]*>(.*?)</select>`).FindStringSubmatch(page)
	if sel == nil {
		t.Fatalf("the editor has no select %s", name)
	}
	var out [][2]string
	for _, m := range regexp.MustCompile(`<option value="([^"]*)"[^>]*>([^<]*)</option>`).FindAllStringSubmatch(sel[1], -1) {
		out = append(out, [2]string{m[1], m[2]})
	}
	return out
}
