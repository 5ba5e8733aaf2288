package resolver_test

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/orchestration/environment"
)

// A machine updated to join another network gets an address in that network's subnet, with its
// gateway, and the address it left is free for the next machine joining the first network; the
// environment's page and the pool list the new address and not the old. An update that fails
// and is rolled back leaves the machine its address and gives back the one it was handed; a
// machine leaving its network for none gets one of the pool's.
func TestResolvers_AMachineMovedToAnotherNetworkTakesAnAddressThere(t *testing.T) {
	s := apptest.NewSite(t)
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	provider, user := s.Token(t, s.Admin), s.Token(t, s.UserA)
	r := s.Call(t, "POST", "/api/v1/ipam/pools", provider, map[string]any{"name": "eu-pool", "prefix": "10.20.0.0/24", "environment_id": env.ID})
	apptest.WantStatus(t, r, http.StatusCreated)
	poolID := r.JSON(t)["id"].(string)
	apptest.WantStatus(t, s.Call(t, "PUT", "/api/v1/environments/"+env.ID.String()+"/resolvers/ipam", provider,
		`{"pool_id": "`+poolID+`", "subnet_bits": 26}`), http.StatusOK)
	ids := apptest.BuiltinIDs(t, s)
	machine := apptest.GatewayMachine(t, s)
	wait := func(what string, r apptest.Reply, status string) map[string]any {
		t.Helper()
		apptest.WantStatus(t, r, http.StatusAccepted)
		body := r.JSON(t)
		op := body
		if o, ok := body["operation"].(map[string]any); ok {
			op = o
		}
		if got := s.WaitOperation(t, user, op["id"].(string)); got["status"] != status {
			t.Fatalf("%s: %v, want it %s", what, got, status)
		}
		return body
	}
	deploy := func(component, name string, params map[string]any) string {
		t.Helper()
		r := s.Call(t, "POST", "/api/v1/deployments", user, map[string]any{"component_id": component, "environment_id": env.ID,
			"name": name, "parameters": params})
		return wait(name, r, "succeeded")["deployment"].(map[string]any)["id"].(string)
	}
	update := func(id string, params map[string]any, status string) {
		t.Helper()
		wait("update "+fmt.Sprint(params), s.Call(t, "POST", "/api/v1/deployments/"+id+"/update", user, map[string]any{"parameters": params}), status)
	}
	get := func(id string) map[string]any {
		return s.Call(t, "GET", "/api/v1/deployments/"+id, user, nil).JSON(t)
	}
	params := func(names map[string]string) map[string]map[string]any {
		out := map[string]map[string]any{}
		for name, id := range names {
			out[name] = get(id)["parameters"].(map[string]any)
		}
		return out
	}
	held := func(id string) string {
		var got []string
		rows, err := s.Pool.Query(t.Context(), `SELECT host(prefix) FROM ipam_allocations WHERE deployment_id = $1 ORDER BY prefix`, id)
		apptest.Must(t, err)
		for rows.Next() {
			var a string
			apptest.Must(t, rows.Scan(&a))
			got = append(got, a)
		}
		apptest.Must(t, rows.Err())
		return strings.Join(got, " ")
	}
	core, edge := deploy(ids["simcloud-network"], "core-net", map[string]any{"name": "core"}), deploy(ids["simcloud-network"], "edge-net", map[string]any{"name": "edge"})
	on := func(net string) string { return get(net)["outputs"].(map[string]any)["network_id"].(string) }
	vm := deploy(machine, "vm", map[string]any{"name": "vm", "network_id": on(core)})
	apptest.WantJoined(t, params(map[string]string{"vm": vm, "core-net": core}), map[string]string{"vm": "core-net"})
	if got := held(vm); got != "10.20.0.2" {
		t.Fatalf("on core-net the machine holds %s", got)
	}

	// A preview of the move hands out the address it would take, marked as moving there, beside
	// the one the machine keeps until the move succeeds; the update goes on with it.
	wait("preview the move", s.Call(t, "POST", "/api/v1/deployments/"+vm+"/preview", user, map[string]any{"parameters": map[string]any{"network_id": on(edge)}}), "succeeded")
	if got := held(vm); got != "10.20.0.2 10.20.0.66" {
		t.Fatalf("after a preview of the move the machine holds %s, want both addresses", got)
	}
	b := apptest.NewBrowser(t, s.URL)
	b.SignIn(t, "user-a@example.com", "long enough password")
	if got := addresses(t, b, env.ID.String()); !strings.Contains(got, "10.20.0.2 address in 10.20.0.0/26 (core-net) |") ||
		!strings.Contains(got, "10.20.0.66 address in 10.20.0.64/26 (edge-net) moving here") {
		t.Errorf("during the move the environment's addresses read %q", got)
	}
	if got := fmt.Sprint(s.Call(t, "GET", "/api/v1/ipam/pools/"+poolID, provider, nil).JSON(t)["allocations"]); !regexp.MustCompile(`prefix:10\.20\.0\.66/32 replaces:`).MatchString(got) {
		t.Errorf("during the move the pool's allocations read %s, want the new address to name the one it replaces", got)
	}
	update(vm, map[string]any{"network_id": on(edge)}, "succeeded")
	apptest.WantJoined(t, params(map[string]string{"vm": vm, "core-net": core, "edge-net": edge}), map[string]string{"vm": "edge-net"})
	if got := held(vm); got != "10.20.0.66" {
		t.Fatalf("moved to edge-net the machine holds %s, want its address there alone", got)
	}
	if out := get(vm)["outputs"].(map[string]any); out["ip_address"] != "10.20.0.66" {
		t.Errorf("the machine in the cloud has %v", out["ip_address"])
	}
	if got := addresses(t, b, env.ID.String()); !strings.Contains(got, "10.20.0.66 address in 10.20.0.64/26 (edge-net)") ||
		strings.Contains(got, "10.20.0.2 address") || strings.Contains(got, "moving") {
		t.Errorf("after the move the environment's addresses read %q", got)
	}
	if got := fmt.Sprint(s.Call(t, "GET", "/api/v1/ipam/pools/"+poolID, provider, nil).JSON(t)["allocations"]); !strings.Contains(got, "10.20.0.66/32") || strings.Contains(got, "10.20.0.2/32") {
		t.Errorf("after the move the pool's allocations read %s", got)
	}
	next := deploy(machine, "next", map[string]any{"name": "next", "network_id": on(core)})
	if got := held(next); got != "10.20.0.2" {
		t.Errorf("the next machine joining core-net got %s, want the address the moved one gave back", got)
	}

	// Back to core-net, failing: rolled back, on edge-net with its address, and core-net's next
	// address handed out for the move given back.
	update(vm, map[string]any{"network_id": on(core), "fail_on": "update"}, "failed")
	apptest.WantJoined(t, params(map[string]string{"vm": vm, "edge-net": edge}), map[string]string{"vm": "edge-net"})
	if got, dep := held(vm), get(vm); got != "10.20.0.66" || dep["status"] != "deployed" {
		t.Fatalf("after the failed move the machine (%v) holds %s, want edge-net's address alone", dep["status"], got)
	}
	if got := held(next); got != "10.20.0.2" {
		t.Fatalf("the failed move touched another machine's address: %s", got)
	}

	// Off every network: one of the pool's addresses, outside the subnets, with its gateway.
	update(vm, map[string]any{"network_id": ""}, "succeeded")
	if p := params(map[string]string{"vm": vm})["vm"]; p["ip_address"] != "10.20.0.128" || p["gateway"] != "10.20.0.1" || held(vm) != "10.20.0.128" {
		t.Fatalf("off every network the machine has %v with gateway %v and holds %s", p["ip_address"], p["gateway"], held(vm))
	}
	if got := addresses(t, b, env.ID.String()); strings.Contains(got, "10.20.0.66") || !strings.Contains(got, "10.20.0.128 address") {
		t.Errorf("after leaving its network the environment's addresses read %q", got)
	}
}
