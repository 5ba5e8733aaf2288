package environment_test

import (
	"context"
	"net/http"
	"testing"

	"nimbus/app/apptest"
)

// A template of two networks and three machines, each machine naming the network it joins by
// an earlier member: the environment opened from it deploys each machine after its network,
// with that network's ID, an address inside its range and its gateway; decommissioning takes
// each machine down before its network. A template whose machine names a later member, one
// of another type or none is refused, naming the field and the rule.
func TestAPI_TemplateMachinesJoinTheNetworksTheyName(t *testing.T) {
	s := apptest.NewSite(t)
	ids := apptest.BuiltinIDs(t, s)
	machine := apptest.GatewayMachine(t, s)
	root, admin := s.Token(t, s.Admin), s.Token(t, s.AdminA)
	r := s.Call(t, "POST", "/api/v1/landing-zones", root, map[string]any{"name": "sim-eu", "provider": "simcloud"})
	apptest.WantStatus(t, r, http.StatusCreated)
	zone := r.JSON(t)["id"].(string)
	r = s.Call(t, "POST", "/api/v1/ipam/pools", root, map[string]any{"name": "eu-net", "prefix": "10.70.0.0/16", "landing_zone_id": zone})
	apptest.WantStatus(t, r, http.StatusCreated)
	pool := r.JSON(t)["id"].(string)
	apptest.WantStatus(t, s.Call(t, "PUT", "/api/v1/landing-zones/"+zone+"/resolvers/ipam", root, map[string]any{"pool_id": pool, "subnet_bits": 24}), http.StatusOK)

	network := func(name string) map[string]any {
		return map[string]any{"component_id": ids["simcloud-network"], "name": name, "parameters": map[string]any{"name": name}}
	}
	on := func(name, net string) map[string]any {
		return map[string]any{"component_id": machine, "name": name, "parameters": map[string]any{"name": name},
			"refers": map[string]any{"network_id": net}}
	}
	template := func(members ...map[string]any) apptest.Reply {
		return s.Call(t, "POST", "/api/v1/landing-zones/"+zone+"/templates", root, map[string]any{"name": "nets", "mandatory_components": members})
	}
	r = s.Call(t, "POST", "/api/v1/landing-zones/"+zone+"/system-services", root, on("dns", "core"))
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	apptest.WantProblem(t, r, "refers.network_id", "exists")
	for _, c := range []struct {
		members     []map[string]any
		field, rule string
	}{
		{[]map[string]any{on("a", "core"), network("core")}, "mandatory_components[0].refers.network_id", "earlier"},
		{[]map[string]any{network("core"), on("a", "core"), on("b", "a")}, "mandatory_components[2].refers.network_id", "semantic_type"},
		{[]map[string]any{network("core"), on("a", "edge")}, "mandatory_components[1].refers.network_id", "exists"},
		{[]map[string]any{network("core"), {"component_id": machine, "name": "a", "parameters": map[string]any{"name": "a"},
			"refers": map[string]any{"image": "core"}}}, "mandatory_components[1].refers.image", "refers_to"},
	} {
		r := template(c.members...)
		apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
		apptest.WantProblem(t, r, c.field, c.rule)
	}

	r = template(network("core"), network("edge"), on("a", "core"), on("b", "core"), on("c", "edge"))
	apptest.WantStatus(t, r, http.StatusCreated)
	tpl := r.JSON(t)
	if got := tpl["mandatory_components"].([]any)[4].(map[string]any)["refers"]; got.(map[string]any)["network_id"] != "edge" {
		t.Fatalf("the template keeps c's refers as %v", got)
	}
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/landing-zones/"+zone+"/publish", root, nil), http.StatusAccepted)
	s.WaitZoneServices(t, root, zone)
	r = s.Call(t, "POST", "/api/v1/environments", admin, map[string]any{"tenant_id": s.A.ID, "name": "dev", "template_id": tpl["id"]})
	apptest.WantStatus(t, r, http.StatusAccepted)
	env := r.JSON(t)["id"].(string)
	if got := s.WaitEnvironment(t, admin, env); got["status"] != "active" {
		t.Fatalf("the environment: %v", got)
	}

	params, outputs := map[string]map[string]any{}, map[string]map[string]any{}
	rows, err := s.Pool.Query(context.Background(), `SELECT name, parameters, outputs FROM deployed_components WHERE environment_id = $1`, env)
	apptest.Must(t, err)
	for rows.Next() {
		var name string
		var p, o map[string]any
		apptest.Must(t, rows.Scan(&name, &p, &o))
		params[name], outputs[name] = p, o
	}
	apptest.Must(t, rows.Err())
	joins := map[string]string{"a": "core", "b": "core", "c": "edge"}
	for m, net := range joins {
		if got, want := params[m]["network_id"], outputs[net]["network_id"]; got != want || got == nil {
			t.Errorf("machine %s joined network %v, want %s's %v", m, got, net, want)
		}
	}
	apptest.WantJoined(t, params, joins)
	if early := startedBeforeEnded(t, s, env, "deploy", joins); early != 0 {
		t.Errorf("%d machines started deploying before the network they join was deployed", early)
	}

	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/environments/"+env+"/decommission", admin, nil), http.StatusAccepted)
	if got := s.WaitEnvironment(t, admin, env); got["status"] != "decommissioned" {
		t.Fatalf("after decommissioning: %v", got)
	}
	var early int
	apptest.Must(t, s.Pool.QueryRow(context.Background(), `SELECT count(*) FROM operations n, operations m, deployed_components dn, deployed_components dm
		WHERE dn.id = n.deployment_id AND dm.id = m.deployment_id AND dn.environment_id = $1 AND dm.environment_id = $1
		AND n.kind = 'destroy' AND m.kind = 'destroy' AND dm.parameters->>'network_id' = dn.outputs->>'network_id'
		AND dn.name IN ('core', 'edge') AND n.started_at < m.finished_at`, env).Scan(&early))
	if early != 0 {
		t.Errorf("%d networks started being destroyed before a machine on them was gone", early)
	}
}

// startedBeforeEnded counts the machines of joins whose operation of kind started before
// their network's operation of that kind finished.
func startedBeforeEnded(t *testing.T, s *apptest.Site, env, kind string, joins map[string]string) int {
	t.Helper()
	n := 0
	for m, net := range joins {
		var early bool
		apptest.Must(t, s.Pool.QueryRow(context.Background(), `SELECT om.started_at < onet.finished_at
			FROM operations om JOIN deployed_components dm ON dm.id = om.deployment_id,
			     operations onet JOIN deployed_components dn ON dn.id = onet.deployment_id
			WHERE dm.environment_id = $1 AND dn.environment_id = $1 AND dm.name = $2 AND dn.name = $3
			AND om.kind = $4 AND onet.kind = $4`, env, m, net, kind).Scan(&early))
		if early {
			n++
		}
	}
	return n
}
