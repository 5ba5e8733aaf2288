package stack

import (
	"reflect"
	"testing"
)

// TestRenameIn rewrites only selections from the root: not text in strings, not a longer name
// sharing the old one's start, not the same field of another variable.
func TestRenameIn(t *testing.T) {
	names := map[string]string{"net": "network", "web": "front"}
	for _, c := range []struct{ name, in, want string }{
		{"a selection", "slots.net.outputs.subnet_id", "slots.network.outputs.subnet_id"},
		{"each selection", "slots.net.outputs.a + slots.web.outputs.b + slots.net.outputs.c",
			"slots.network.outputs.a + slots.front.outputs.b + slots.network.outputs.c"},
		{"a string literal", `"slots.net.outputs.x" + slots.net.outputs.x`, `"slots.net.outputs.x" + slots.network.outputs.x`},
		{"a raw and a triple-quoted string", `r'slots.net' + '''slots.net''' + slots.net.outputs.x`, `r'slots.net' + '''slots.net''' + slots.network.outputs.x`},
		{"a longer name sharing the start", "slots.netx.outputs.a + slots.net.outputs.b", "slots.netx.outputs.a + slots.network.outputs.b"},
		{"another variable's field", "params.net + slots.net.outputs.b", "params.net + slots.network.outputs.b"},
		{"blanks and comments around the dot", "slots .\n // the network\n net.outputs.a", "slots .\n // the network\n network.outputs.a"},
		{"within has()", "has(slots.net.outputs.a) ? 1 : 2", "has(slots.network.outputs.a) ? 1 : 2"},
		{"within a macro", "[1, 2].map(x, slots.net.outputs.a + x)", "[1, 2].map(x, slots.network.outputs.a + x)"},
		{"after text of several bytes", `"héé" + slots.net.outputs.a`, `"héé" + slots.network.outputs.a`},
		{"two slots swapping names", "slots.net.outputs.a + slots.web.outputs.a", "slots.network.outputs.a + slots.front.outputs.a"},
		{"an expression that does not parse", "slots.net.outputs.a +", "slots.net.outputs.a +"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := renameIn(c.in, "slots", names); got != c.want {
				t.Errorf("renameIn(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
	if got := renameIn("slots.net.outputs.a", "slots", map[string]string{"net": "my-net"}); got != "slots.net.outputs.a" {
		t.Errorf("a name an expression cannot say was written in: %q", got)
	}
}

// TestDefinition_RenameSlotsAndParams: a renamed slot's output wirings, waits, actions and
// expressions follow it, and a renamed parameter's wirings and expressions follow it.
func TestDefinition_RenameSlotsAndParams(t *testing.T) {
	def := Definition{
		Slots: []Slot{
			{Name: "net"},
			{Name: "netx"},
			{Name: "web", DependsOn: []string{"net", "netx"}, Inputs: map[string]Wiring{
				"network_id": {Kind: Output, Slot: "net", Output: "network_id"},
				"other_id":   {Kind: Output, Slot: "netx", Output: "network_id"},
				"name":       {Kind: Expression, Expr: `params.prefix + "-" + slots.net.outputs.name + "slots.net"`},
				"label":      {Kind: Param, Param: "prefix"},
				"tag":        {Kind: Param, Param: "prefixed"},
			}},
		},
		Machine: Machine{Transitions: []Transition{{Trigger: "retire", Action: []Action{{Slot: "net", Do: Refresh}}}}},
		Operations: []Operation{{Name: "resize", Actions: []Action{
			{Slot: "net", Do: Update, Inputs: map[string]string{"cores": "inputs.cores + params.prefixed.size() + slots.net.outputs.n"}},
		}}},
	}
	def.renameSlots(map[string]string{"net": "network"})
	def.renameParams(map[string]string{"prefix": "name_prefix"})
	def.Operations[0].renameInputs(map[string]string{"cores": "vcpus"})

	web := def.Slots[2]
	if !reflect.DeepEqual(web.DependsOn, []string{"network", "netx"}) {
		t.Errorf("web waits for %q", web.DependsOn)
	}
	want := map[string]Wiring{
		"network_id": {Kind: Output, Slot: "network", Output: "network_id"},
		"other_id":   {Kind: Output, Slot: "netx", Output: "network_id"},
		"name":       {Kind: Expression, Expr: `params.name_prefix + "-" + slots.network.outputs.name + "slots.net"`},
		"label":      {Kind: Param, Param: "name_prefix"},
		"tag":        {Kind: Param, Param: "prefixed"},
	}
	if !reflect.DeepEqual(web.Inputs, want) {
		t.Errorf("web's wiring is %+v, want %+v", web.Inputs, want)
	}
	if a := def.Machine.Transitions[0].Action[0]; a.Slot != "network" {
		t.Errorf("the transition's action is on %q", a.Slot)
	}
	a := def.Operations[0].Actions[0]
	if a.Slot != "network" || a.Inputs["cores"] != "inputs.vcpus + params.prefixed.size() + slots.network.outputs.n" {
		t.Errorf("the operation's action is %+v", a)
	}
}
