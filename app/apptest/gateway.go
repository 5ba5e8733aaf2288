package apptest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"nimbus/app/domain/component"
)

// GatewayMachine publishes gw-machine, a provider-level copy of the built-in simulated machine
// that also takes its gateway from the IPAM resolver (ipam.gateway) and gives it back as its
// output gateway: the built-in machine joins a network without being told its gateway, so
// tests of where a machine's address comes from read the gateway from this one. It returns
// the component's ID.
func GatewayMachine(t *testing.T, s *Site) string {
	t.Helper()
	ctx := context.Background()
	base, err := s.Components.Get(ctx, s.Admin, uuid.MustParse(BuiltinIDs(t, s)["simcloud-machine"]))
	Must(t, err)
	var in, out map[string]any
	Must(t, json.Unmarshal(base.InputSchema, &in))
	Must(t, json.Unmarshal(base.OutputSchema, &out))
	in["properties"].(map[string]any)["gateway"] = map[string]any{"type": "string", "title": "Gateway", "default": ""}
	in["x-order"] = append(in["x-order"].([]any), "gateway")
	out["properties"].(map[string]any)["gateway"] = map[string]any{"type": "string", "title": "Gateway"}
	out["x-order"] = append(out["x-order"].([]any), "gateway")
	code := strings.Replace(strings.Replace(base.Code, "name: simcloud-machine", "name: gw-machine", 1), "\nconfig:\n", "\nconfig:\n  gateway:\n    type: string\n    default: \"\"\n", 1)
	code = strings.TrimRight(code, "\n") + "\n  gateway: ${gateway}\n"
	bindings := map[string]any{}
	Must(t, json.Unmarshal(base.ResolverBindings, &bindings))
	bindings["gateway"] = "ipam.gateway"
	raw := func(v any) json.RawMessage {
		b, err := json.Marshal(v)
		Must(t, err)
		return b
	}
	c, err := s.Components.Create(ctx, s.Admin, component.New{Draft: component.Draft{Name: "gw-machine", Language: "yaml", Code: code,
		InputSchema: raw(in), OutputSchema: raw(out), ResolverBindings: raw(bindings)},
		Provider: "simcloud", SemanticType: "VirtualMachine"})
	Must(t, err)
	_, err = s.Components.Publish(ctx, s.Admin, c.ID, c.Revision, "first")
	Must(t, err)
	return c.ID.String()
}

// WantJoined fails t unless each machine of joins (machine → network, by deployment or slot
// name) lies in the network it names: its address inside the network's range and not the
// range's gateway, and its gateway that range's. params are the parameters each was deployed
// with: a network's cidr, a machine's ip_address and gateway.
func WantJoined(t *testing.T, params map[string]map[string]any, joins map[string]string) {
	t.Helper()
	ranges := map[string]string{}
	for _, network := range joins {
		ranges[fmt.Sprint(params[network]["cidr"])] = network
	}
	if len(ranges) != len(slices.Compact(slices.Sorted(maps.Values(joins)))) {
		t.Fatalf("the networks do not each hold a range of their own: %v", params)
	}
	for _, machine := range slices.Sorted(maps.Keys(joins)) {
		network := joins[machine]
		subnet, err := netip.ParsePrefix(fmt.Sprint(params[network]["cidr"]))
		if err != nil {
			t.Errorf("network %s holds no range: %v", network, params[network])
			continue
		}
		gateway := subnet.Masked().Addr().Next()
		addr, err := netip.ParseAddr(fmt.Sprint(params[machine]["ip_address"]))
		switch {
		case err != nil || !subnet.Contains(addr) || addr == gateway:
			t.Errorf("machine %s got address %v, outside %s's range %s or its gateway", machine, params[machine]["ip_address"], network, subnet)
		case params[machine]["gateway"] != gateway.String():
			t.Errorf("machine %s got gateway %v, want %s's %s", machine, params[machine]["gateway"], network, gateway)
		}
	}
}
