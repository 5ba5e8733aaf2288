package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/google/uuid"

	"nimbus/app/domain/stack"
)

// deployShop deploys into the environment an instance of a stack newly published through the
// API: a network, and a machine on it, wired to its ID. It returns the instance's ID once the
// instance is active.
func deployShop(t *testing.T, s *process, token, envID string) string {
	t.Helper()
	component := func(name string) (uuid.UUID, int) {
		c := s.api(t, token, "GET", "/api/v1/components?search="+name, nil)["components"].([]any)[0].(map[string]any)
		return uuid.MustParse(c["id"].(string)), int(c["latest_version"].(float64))
	}
	network, networkVersion := component("simcloud-network")
	machine, machineVersion := component("simcloud-machine")
	def := stack.Definition{
		Parameters: json.RawMessage(`{"type":"object","properties":{}}`),
		Slots: []stack.Slot{
			{Name: "net", Component: network, Version: networkVersion, Inputs: map[string]stack.Wiring{
				"name": {Kind: stack.Literal, Value: "shop-net"}, "cidr": {Kind: stack.Literal, Value: "10.40.0.0/16"}}},
			{Name: "app", Component: machine, Version: machineVersion, Inputs: map[string]stack.Wiring{
				"name": {Kind: stack.Literal, Value: "shop-app"}, "network_id": {Kind: stack.Output, Slot: "net", Output: "network_id"}}},
		},
		Machine: stack.Machine{States: []stack.State{{Name: "running", Initial: true}}},
	}
	created := s.api(t, token, "POST", "/api/v1/stacks", map[string]any{"provider": "simcloud", "name": "shop", "draft": def})
	s.api(t, token, "POST", "/api/v1/stacks/"+created["id"].(string)+"/publish", map[string]any{"changelog": "first"})
	id := s.api(t, token, "POST", "/api/v1/stack-instances", map[string]any{
		"stack_id": created["id"], "environment_id": envID, "name": "shop"})["id"].(string)
	var inst map[string]any
	waitFor(t, s, "the stack instance's deploy", func() bool {
		inst = s.api(t, token, "GET", "/api/v1/stack-instances/"+id, nil)
		return inst["status"] != "pending" && inst["status"] != "deploying"
	})
	if inst["status"] != "active" {
		t.Fatalf("the stack instance ended %v: %v", inst["status"], inst["error"])
	}
	return id
}

// instanceSeen is what the API shows of a stack instance and its slots: their deployments,
// statuses and outputs.
func instanceSeen(t *testing.T, s *process, token, id string) string {
	t.Helper()
	inst := s.api(t, token, "GET", "/api/v1/stack-instances/"+id, nil)
	seen := fmt.Sprintf("%v %v in state %v, version %v", inst["name"], inst["status"], inst["state"], inst["version"])
	for _, sl := range inst["slots"].([]any) {
		slot := sl.(map[string]any)
		seen += fmt.Sprintf("\nslot %v: deployment %v %v, outputs %v", slot["name"], slot["deployment_id"], slot["status"], slot["outputs"])
	}
	return seen
}

// urns are the resources an operation's engine reported, each once, sorted.
func urns(op map[string]any) []string {
	var out []string
	for _, r := range op["resources"].([]any) {
		out = append(out, fmt.Sprint(r.(map[string]any)["urn"]))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// statusOf is each listed deployment's status by its ID.
func statusOf(list any) map[string]string {
	out := map[string]string{}
	for _, item := range list.([]any) {
		d := item.(map[string]any)
		out[fmt.Sprint(d["id"])] = fmt.Sprint(d["status"])
	}
	return out
}
