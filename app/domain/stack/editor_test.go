package stack

import (
	"net/url"
	"reflect"
	"testing"

	"github.com/google/uuid"
)

// TestEditorForm_ReadsTheDraftAsTyped reads an editor form into a definition: a slot or a
// parameter renamed takes the wiring, waits, actions and expressions that name it along, a literal that does not fit its type is
// kept as typed, and the buttons add, move and remove rows.
func TestEditorForm_ReadsTheDraftAsTyped(t *testing.T) {
	net := uuid.New()
	form := url.Values{
		"p.0.was": {"pfx"}, "p.0.name": {"prefix"}, "p.0.type": {"string"}, "p.0.required": {"on"},
		"p.1.name": {"cores"}, "p.1.type": {"integer"}, "p.1.default": {"two"},
		"s.0.was": {"net"}, "s.0.name": {"network"}, "s.0.component": {net.String()}, "s.0.version": {"1"},
		"s.0.inputs": {"cidr", "name"}, "s.0.in.cidr.kind": {"literal"}, "s.0.in.cidr.literal": {"10.0.0.0/16"},
		"s.0.in.name.kind": {"expr"}, "s.0.in.name.expr": {"params.pfx"},
		"s.1.was": {"web"}, "s.1.name": {"web"}, "s.1.component": {net.String()}, "s.1.version": {"1"},
		"s.1.inputs": {"network_id", "cores"}, "s.1.in.network_id.kind": {"output:net.network_id"},
		"s.1.in.cores.kind": {"literal"}, "s.1.in.cores.literal": {"four"}, "s.1.dep": {"net"},
		"m.s.0.name": {"active"}, "m.s.1.name": {"retired"}, "m.s.1.terminal": {"on"}, "m.initial": {"0"},
		"m.t.0.from": {"active"}, "m.t.0.to": {"retired"}, "m.t.0.trigger": {"retire"},
		"m.t.0.a.0.slot": {"net"}, "m.t.0.a.0.do": {"refresh"},
		"o.0.name": {"resize"}, "o.0.states": {"active"}, "o.0.p.0.name": {"cores"}, "o.0.p.0.type": {"integer"},
		"o.0.a.0.slot": {"web"}, "o.0.a.0.do": {"update"}, "o.0.a.0.inputs": {"cores", "memory_mb"},
		"o.0.a.0.in.cores": {"inputs.cores"}, "o.0.a.0.in.memory_mb": {""},
		"o.0.a.1.slot": {"net"}, "o.0.a.1.do": {"update"}, "o.0.a.1.inputs": {"name"}, "o.0.a.1.in.name": {"slots.net.outputs.name"},
		"r.0.source": {"webhook"}, "r.0.type": {"alert.firing"}, "r.0.filter": {` event.data.labels.severity == "critical" `}, "r.0.trigger": {"retire"},
		"r.1.source": {""}, "r.1.type": {"vm.*"}, "r.1.filter": {""}, "r.1.trigger": {"retire"},
	}
	types := map[string]string{"cores": "integer"}
	def := definitionFrom(editorForm{form}, func(_ int, input string) string { return types[input] })

	if got := paramRows(def.Parameters); !reflect.DeepEqual(got, []ParamRow{
		{Name: "prefix", Type: "string", Required: true}, {Name: "cores", Type: "integer", Default: "two"},
	}) {
		t.Errorf("parameters read back as %+v", got)
	}
	if want := []Route{{Source: "webhook", Type: "alert.firing", Filter: ` event.data.labels.severity == "critical" `, Trigger: "retire"},
		{Type: "vm.*", Trigger: "retire"}}; !reflect.DeepEqual(def.Routes, want) {
		t.Errorf("the routes read back as %+v", def.Routes)
	}
	web := def.Slots[1]
	if w := web.Inputs["network_id"]; w.Kind != Output || w.Slot != "network" {
		t.Errorf("web's network_id is wired to %+v, want the renamed slot's output", w)
	}
	if !reflect.DeepEqual(web.DependsOn, []string{"network"}) {
		t.Errorf("web depends on %q, want the renamed slot", web.DependsOn)
	}
	if v := web.Inputs["cores"].Value; v != "four" {
		t.Errorf("a literal that is no integer reads %#v, want it kept as typed", v)
	}
	if a := def.Machine.Transitions[0].Action[0]; a.Slot != "network" || a.Do != Refresh {
		t.Errorf("the transition's action is %+v", a)
	}
	if a := def.Operations[0].Actions[0]; !reflect.DeepEqual(a.Inputs, map[string]string{"cores": "inputs.cores"}) {
		t.Errorf("the update sets %v, want only the inputs given an expression", a.Inputs)
	}
	if a := def.Operations[0].Actions[1]; a.Slot != "network" || a.Inputs["name"] != "slots.network.outputs.name" {
		t.Errorf("the second update is %+v, want it on the renamed slot, reading it by its new name", a)
	}
	if e := def.Slots[0].Inputs["name"].Expr; e != "params.prefix" {
		t.Errorf("the network's name reads %q, want the renamed parameter", e)
	}
	if s := def.Machine.States; !s[0].Initial || s[1].Initial || !s[1].Terminal {
		t.Errorf("states read back as %+v", s)
	}

	applyOp(&def, "down:0", editorForm{})
	if def.Slots[0].Name != "web" || def.Slots[1].Name != "network" {
		t.Errorf("after moving the first slot down the order is %s, %s", def.Slots[0].Name, def.Slots[1].Name)
	}
	applyOp(&def, "remove-param:0", editorForm{})
	if got := paramRows(def.Parameters); len(got) != 1 || got[0].Name != "cores" {
		t.Errorf("after removing the first parameter: %+v", got)
	}
	applyOp(&def, "add-op-action:0", editorForm{})
	if n := len(def.Operations[0].Actions); n != 3 {
		t.Errorf("resize has %d actions after adding one, want 3", n)
	}
	applyOp(&def, "add-slot", editorForm{url.Values{"new_slot.name": {"db"}, "new_slot.component": {net.String() + "@3"}}})
	if last := def.Slots[len(def.Slots)-1]; last.Name != "db" || last.Component != net || last.Version != 3 {
		t.Errorf("the slot added is %+v", last)
	}
}
