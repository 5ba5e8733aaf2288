package stack_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"nimbus/app/apptest"
	"nimbus/app/domain/stack"
	"nimbus/app/kernel/problem"
)

func TestAPI_StackDraftProblemsNameTheFieldAndTheRule(t *testing.T) {
	s := apptest.NewSite(t)
	parts := s.StackParts(t)
	admin := s.Token(t, s.Admin)
	create := func(provider, name string) string {
		r := s.Call(t, "POST", "/api/v1/stacks", admin, map[string]any{"provider": provider, "name": name,
			"draft": apptest.StackDraft(parts.Machine, 1)})
		apptest.WantStatus(t, r, http.StatusCreated)
		if ps := apptest.Problems(t, r); provider == "simcloud" && len(ps) > 0 {
			t.Fatalf("the valid draft has problems: %+v", ps)
		}
		return r.JSON(t)["id"].(string)
	}
	simcloud, aws := create("simcloud", "checked"), create("aws", "other-provider")

	slot := func(d *stack.Definition, name string) *stack.Slot {
		for i := range d.Slots {
			if d.Slots[i].Name == name {
				return &d.Slots[i]
			}
		}
		t.Fatalf("no slot %s", name)
		return nil
	}
	web := func(d *stack.Definition) *stack.Slot { return slot(d, "web") }
	db := func(d *stack.Definition) *stack.Slot { return slot(d, "db") }
	transition := func(d *stack.Definition, trigger string) *stack.Transition {
		for i := range d.Machine.Transitions {
			if d.Machine.Transitions[i].Trigger == trigger {
				return &d.Machine.Transitions[i]
			}
		}
		t.Fatalf("no transition %s", trigger)
		return nil
	}
	op := func(d *stack.Definition, name string) *stack.Operation {
		for i := range d.Operations {
			if d.Operations[i].Name == name {
				return &d.Operations[i]
			}
		}
		t.Fatalf("no operation %s", name)
		return nil
	}
	for _, c := range []struct {
		name, field, rule string
		onAWS             bool
		change            func(d *stack.Definition)
	}{
		{"parameters not a schema", "parameters", "json_schema", false, func(d *stack.Definition) { d.Parameters = json.RawMessage(`{"type":"string"}`) }},
		{"no slots", "slots", "required", false, func(d *stack.Definition) {
			d.Slots, d.Machine.Transitions[1].Action, d.Operations = nil, nil, nil
		}},
		{"slot name", "slots.Web.name", "pattern", false, func(d *stack.Definition) { web(d).Name = "Web" }},
		{"slot name taken", "slots.db.name", "unique", false, func(d *stack.Definition) { d.Slots = append(d.Slots, *db(d)) }},
		{"unknown component", "slots.db.component_id", "exists", false, func(d *stack.Definition) { db(d).Component = uuid.New() }},
		{"tenant's component in a provider stack", "slots.db.component_id", "scope", false, func(d *stack.Definition) { db(d).Component = parts.OfA }},
		{"component of another provider", "slots.db.component_id", "provider", true, func(d *stack.Definition) {}},
		{"version not published", "slots.db.version", "published", false, func(d *stack.Definition) { db(d).Version = 9 }},
		{"version archived", "slots.db.version", "archived", false, func(d *stack.Definition) { db(d).Component = parts.Archived }},
		{"input not on the component", "slots.db.inputs.colour", "exists", false, func(d *stack.Definition) {
			db(d).Inputs["colour"] = stack.Wiring{Kind: stack.Literal, Value: "red"}
		}},
		{"literal of the wrong type", "slots.db.inputs.cores", "value", false, func(d *stack.Definition) {
			db(d).Inputs["cores"] = stack.Wiring{Kind: stack.Literal, Value: "many"}
		}},
		{"literal outside the enum", "slots.db.inputs.fail_on", "value", false, func(d *stack.Definition) {
			db(d).Inputs["fail_on"] = stack.Wiring{Kind: stack.Literal, Value: "explode"}
		}},
		{"literal below the minimum", "slots.db.inputs.cores", "value", false, func(d *stack.Definition) {
			db(d).Inputs["cores"] = stack.Wiring{Kind: stack.Literal, Value: 0}
		}},
		{"unknown parameter", "slots.web.inputs.cores", "param", false, func(d *stack.Definition) {
			web(d).Inputs["cores"] = stack.Wiring{Kind: stack.Param, Param: "nope"}
		}},
		{"parameter of the wrong type", "slots.web.inputs.cores", "type", false, func(d *stack.Definition) {
			web(d).Inputs["cores"] = stack.Wiring{Kind: stack.Param, Param: "label"}
		}},
		{"output of an unknown slot", "slots.web.inputs.ip_address", "slot", false, func(d *stack.Definition) {
			web(d).Inputs["ip_address"] = stack.Wiring{Kind: stack.Output, Slot: "cache", Output: "ip_address"}
		}},
		{"output of itself", "slots.web.inputs.ip_address", "slot", false, func(d *stack.Definition) {
			web(d).Inputs["ip_address"] = stack.Wiring{Kind: stack.Output, Slot: "web", Output: "ip_address"}
		}},
		{"unknown output", "slots.web.inputs.ip_address", "output", false, func(d *stack.Definition) {
			web(d).Inputs["ip_address"] = stack.Wiring{Kind: stack.Output, Slot: "db", Output: "address"}
		}},
		{"output of the wrong type", "slots.web.inputs.cores", "type", false, func(d *stack.Definition) {
			web(d).Inputs["cores"] = stack.Wiring{Kind: stack.Output, Slot: "db", Output: "machine_id"}
		}},
		{"expression reads an unknown name", "slots.web.inputs.name", "expression", false, func(d *stack.Definition) {
			web(d).Inputs["name"] = stack.Wiring{Kind: stack.Expression, Expr: `params.nope + "x"`}
		}},
		{"expression of the wrong type", "slots.web.inputs.name", "expression", false, func(d *stack.Definition) {
			web(d).Inputs["name"] = stack.Wiring{Kind: stack.Expression, Expr: `params.size + 1`}
		}},
		{"expression that does not parse", "slots.web.inputs.name", "expression", false, func(d *stack.Definition) {
			web(d).Inputs["name"] = stack.Wiring{Kind: stack.Expression, Expr: `"web-" +`}
		}},
		{"unknown wiring kind", "slots.web.inputs.name", "kind", false, func(d *stack.Definition) {
			web(d).Inputs["name"] = stack.Wiring{Kind: "magic"}
		}},
		{"required input not wired", "slots.db.inputs.name", "required", false, func(d *stack.Definition) { delete(db(d).Inputs, "name") }},
		{"depends on an unknown slot", "slots.web.depends_on", "exists", false, func(d *stack.Definition) { web(d).DependsOn = []string{"cache"} }},
		{"cycle", "slots", "cycle", false, func(d *stack.Definition) { db(d).DependsOn = []string{"web"} }},
		{"no states", "machine.states", "required", false, func(d *stack.Definition) { d.Machine = stack.Machine{}; d.Operations = nil }},
		{"no initial state", "machine.states", "initial", false, func(d *stack.Definition) { d.Machine.States[0].Initial = false }},
		{"two initial states", "machine.states", "initial", false, func(d *stack.Definition) { d.Machine.States[1].Initial = true }},
		{"state name", "machine.states.Paused.name", "pattern", false, func(d *stack.Definition) {
			d.Machine.States = append(d.Machine.States, stack.State{Name: "Paused"})
		}},
		{"state name taken", "machine.states.running.name", "unique", false, func(d *stack.Definition) {
			d.Machine.States = append(d.Machine.States, stack.State{Name: "running"})
		}},
		{"transition from an unknown state", "machine.transitions.4.from", "exists", false, func(d *stack.Definition) {
			d.Machine.Transitions = append(d.Machine.Transitions, stack.Transition{From: "paused", To: "running", Trigger: "resume"})
		}},
		{"transition to an unknown state", "machine.transitions.4.to", "exists", false, func(d *stack.Definition) {
			d.Machine.Transitions = append(d.Machine.Transitions, stack.Transition{From: "running", To: "paused", Trigger: "pause"})
		}},
		{"transition from a terminal state", "machine.transitions.4.from", "terminal", false, func(d *stack.Definition) {
			d.Machine.Transitions = append(d.Machine.Transitions, stack.Transition{From: "retired", To: "running", Trigger: "revive"})
		}},
		{"trigger taken in the state", "machine.transitions.4.trigger", "unique", false, func(d *stack.Definition) {
			d.Machine.Transitions = append(d.Machine.Transitions, stack.Transition{From: "running", To: "retired", Trigger: "stop"})
		}},
		{"unreachable state", "machine.states.paused", "reachable", false, func(d *stack.Definition) {
			d.Machine.States = append(d.Machine.States, stack.State{Name: "paused"})
		}},
		{"timeout not a duration", "machine.transitions.1.timeout", "duration", false, func(d *stack.Definition) { transition(d, "stop").Timeout = "soon" }},
		{"timeout not positive", "machine.transitions.1.timeout", "duration", false, func(d *stack.Definition) { transition(d, "stop").Timeout = "-5m" }},
		{"on_timeout does not leave the state", "machine.transitions.1.on_timeout", "trigger", false, func(d *stack.Definition) {
			transition(d, "stop").OnTimeout = "retire"
		}},
		{"transition action on an unknown slot", "machine.transitions.1.action.0.slot", "exists", false, func(d *stack.Definition) {
			transition(d, "stop").Action[0].Slot = "cache"
		}},
		{"route source", "routes.0.source", "enum", false, func(d *stack.Definition) {
			d.Routes = []stack.Route{{Source: "pagerduty", Type: "alert.firing", Trigger: "stop"}}
		}},
		{"route type", "routes.0.type", "pattern", false, func(d *stack.Definition) { d.Routes = []stack.Route{{Type: "vm.[", Trigger: "stop"}} }},
		{"route trigger", "routes.0.trigger", "trigger", false, func(d *stack.Definition) { d.Routes = []stack.Route{{Type: "vm.*", Trigger: "explode"}} }},
		{"route filter", "routes.0.filter", "expression", false, func(d *stack.Definition) {
			d.Routes = []stack.Route{{Type: "alert.firing", Filter: `"critical"`, Trigger: "stop"}}
		}},
		{"operation name", "operations.Resize.name", "pattern", false, func(d *stack.Definition) { op(d, "resize").Name = "Resize" }},
		{"operation name taken", "operations.resize.name", "unique", false, func(d *stack.Definition) { op(d, "restart").Name = "resize" }},
		{"operation input schema", "operations.resize.input_schema", "json_schema", false, func(d *stack.Definition) {
			op(d, "resize").InputSchema = json.RawMessage(`{"type":"object","properties":{"cores":{"type":"weird"}}}`)
		}},
		{"secret parameter into a plain input", "slots.web.inputs.name", "secret", false, func(d *stack.Definition) {
			d.Parameters = json.RawMessage(`{"type":"object","properties":{"size":{"type":"integer"},"pw":{"type":"string","x-secret":true}}}`)
			web(d).Inputs["name"] = stack.Wiring{Kind: stack.Param, Param: "pw"}
		}},
		{"expression reading a secret parameter into a plain input", "slots.web.inputs.name", "secret", false, func(d *stack.Definition) {
			d.Parameters = json.RawMessage(`{"type":"object","properties":{"size":{"type":"integer"},"pw":{"type":"string","x-secret":true}}}`)
			web(d).Inputs["name"] = stack.Wiring{Kind: stack.Expression, Expr: `"web-" + params.pw`}
		}},
		{"action reading a secret operation input into a plain input", "operations.resize.actions.0.inputs.name", "secret", false, func(d *stack.Definition) {
			op(d, "resize").InputSchema = json.RawMessage(`{"type":"object","properties":{"cores":{"type":"integer"},"token":{"type":"string","x-secret":true}}}`)
			op(d, "resize").Actions[0].Inputs["name"] = `"web-" + inputs.token`
		}},
		{"transition action reading a secret parameter into a plain input", "machine.transitions.1.action.0.inputs.name", "secret", false, func(d *stack.Definition) {
			d.Parameters = json.RawMessage(`{"type":"object","properties":{"size":{"type":"integer"},"pw":{"type":"string","x-secret":true}}}`)
			transition(d, "stop").Action = []stack.Action{{Slot: "web", Do: stack.Update, Inputs: map[string]string{"name": "params.pw"}}}
		}},
		{"operation without states", "operations.resize.required_states", "required", false, func(d *stack.Definition) { op(d, "resize").RequiredStates = nil }},
		{"operation in an unknown state", "operations.resize.required_states", "exists", false, func(d *stack.Definition) {
			op(d, "resize").RequiredStates = []string{"paused"}
		}},
		{"operation without actions", "operations.resize.actions", "required", false, func(d *stack.Definition) { op(d, "resize").Actions = nil }},
		{"action on an unknown slot", "operations.resize.actions.0.slot", "exists", false, func(d *stack.Definition) { op(d, "resize").Actions[0].Slot = "cache" }},
		{"action verb", "operations.restart.actions.0.do", "verb", false, func(d *stack.Definition) { op(d, "restart").Actions[0].Do = "reboot" }},
		{"update without inputs", "operations.resize.actions.0.inputs", "required", false, func(d *stack.Definition) { op(d, "resize").Actions[0].Inputs = nil }},
		{"update of an input not on the component", "operations.resize.actions.0.inputs.colour", "exists", false, func(d *stack.Definition) {
			op(d, "resize").Actions[0].Inputs = map[string]string{"colour": `"red"`}
		}},
		{"update expression reads an unknown name", "operations.resize.actions.0.inputs.cores", "expression", false, func(d *stack.Definition) {
			op(d, "resize").Actions[0].Inputs = map[string]string{"cores": "inputs.size"}
		}},
		{"update expression of the wrong type", "operations.resize.actions.0.inputs.cores", "expression", false, func(d *stack.Definition) {
			op(d, "resize").Actions[0].Inputs = map[string]string{"cores": `"four"`}
		}},
		{"operation fires a transition not leaving its states", "operations.restart.triggers_transition", "trigger", false, func(d *stack.Definition) {
			op(d, "restart").TriggersTransition = "start"
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			id := simcloud
			if c.onAWS {
				id = aws
			}
			d := apptest.StackDraft(parts.Machine, 1)
			c.change(&d)
			// A draft is kept with its problems, for the editor to show them.
			r := s.Call(t, "PUT", "/api/v1/stacks/"+id, admin, map[string]any{"draft": d})
			apptest.WantStatus(t, r, http.StatusOK)
			if got := apptest.Problems(t, r); !apptest.HasProblem(got, c.field, c.rule) {
				t.Fatalf("saved draft: want %s (%s) among %+v", c.field, c.rule, got)
			}
			r = s.Call(t, "POST", "/api/v1/stacks/"+id+"/publish", admin, map[string]any{"changelog": "try"})
			apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
			got := apptest.Problems(t, r)
			if !apptest.HasProblem(got, c.field, c.rule) {
				t.Fatalf("publish: want %s (%s) among %+v", c.field, c.rule, got)
			}
			for _, p := range got {
				if strings.Contains(p.Message, "%!") || p.Message == "" {
					t.Errorf("%s: badly worded: %q", p.Field, p.Message)
				}
			}
		})
	}

	t.Run("a secret operation input is taken", func(t *testing.T) {
		d := apptest.StackDraft(parts.Machine, 1)
		op(&d, "resize").InputSchema = json.RawMessage(`{"type":"object","properties":{"cores":{"type":"integer"},"token":{"type":"string","x-secret":true}}}`)
		r := s.Call(t, "PUT", "/api/v1/stacks/"+simcloud, admin, map[string]any{"draft": d})
		apptest.WantStatus(t, r, http.StatusOK)
		if got := apptest.Problems(t, r); len(got) > 0 {
			t.Fatalf("problems: %+v", got)
		}
	})
	t.Run("a resolver fills a required input", func(t *testing.T) {
		d := apptest.StackDraft(parts.Machine, 1)
		db(&d).Component = parts.Bound
		delete(db(&d).Inputs, "name")
		r := s.Call(t, "PUT", "/api/v1/stacks/"+simcloud, admin, map[string]any{"draft": d})
		apptest.WantStatus(t, r, http.StatusOK)
		if got := apptest.Problems(t, r); len(got) > 0 {
			t.Fatalf("problems: %+v", got)
		}
	})
	t.Run("a tenant's stack may use the tenant's components", func(t *testing.T) {
		d := apptest.StackDraft(parts.Machine, 1)
		db(&d).Component = parts.OfA
		r := s.Call(t, "POST", "/api/v1/stacks", s.Token(t, s.AdminA), map[string]any{"tenant_id": s.A.ID, "provider": "simcloud",
			"name": "own-parts", "draft": d})
		apptest.WantStatus(t, r, http.StatusCreated)
		if got := apptest.Problems(t, r); len(got) > 0 {
			t.Fatalf("problems: %+v", got)
		}
	})
	t.Run("another tenant's component is not looked into", func(t *testing.T) {
		ofB, err := s.Components.Create(context.Background(), s.AdminB, apptest.Machine(t, "b-machine", &s.B.ID))
		apptest.Must(t, err)
		_, err = s.Components.Publish(context.Background(), s.Admin, ofB.ID, ofB.Revision, "first")
		apptest.Must(t, err)
		d := apptest.StackDraft(parts.Machine, 1)
		db(&d).Component = ofB.ID
		db(&d).Inputs["colour"] = stack.Wiring{Kind: stack.Literal, Value: "red"}
		r := s.Call(t, "POST", "/api/v1/stacks", s.Token(t, s.AdminA), map[string]any{"tenant_id": s.A.ID, "provider": "simcloud",
			"name": "borrowed-parts", "draft": d})
		apptest.WantStatus(t, r, http.StatusCreated)
		got := apptest.Problems(t, r)
		if !apptest.HasProblem(got, "slots.db.component_id", "exists") || slices.ContainsFunc(got, func(f problem.FieldError) bool {
			return strings.HasPrefix(f.Field, "slots.db.inputs")
		}) {
			t.Fatalf("problems: %+v", got)
		}
	})
	t.Run("a draft not shaped as a definition is refused", func(t *testing.T) {
		for draft, says := range map[string]string{
			`{"slots": "web"}`: "slots must be a list",
			`{"slotz": []}`:    `unknown field "slotz"`,
			`{"slots": [{"name": "web", "version": "one"}]}`: "slots.version must be a number",
		} {
			r := s.Call(t, "PUT", "/api/v1/stacks/"+simcloud, admin, `{"draft": `+draft+`}`)
			apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
			if got := apptest.Problems(t, r); !apptest.HasProblem(got, "draft", "shape") || !strings.Contains(got[0].Message, says) {
				t.Fatalf("%s: %s", draft, r.Body)
			}
		}
	})
}

func TestAPI_StackLifecycle(t *testing.T) {
	s := apptest.NewSite(t)
	admin, adminA := s.Token(t, s.Admin), s.Token(t, s.AdminA)
	ctx := context.Background()
	draft := apptest.StackDraft(s.Shared.ID, 1)

	// A provider stack is the provider admins'.
	body := map[string]any{"provider": "simcloud", "name": "shop", "display_name": "Web shop", "draft": draft}
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/stacks", adminA, body), http.StatusForbidden)
	r := s.Call(t, "POST", "/api/v1/stacks", admin, body)
	apptest.WantStatus(t, r, http.StatusCreated)
	id := r.JSON(t)["id"].(string)
	apptest.WantField(t, errorOf(t, s.Call(t, "POST", "/api/v1/stacks", admin, body)), "name")
	for field, bad := range map[string]map[string]any{
		"name":     {"provider": "simcloud", "name": "Shop!"},
		"provider": {"provider": "nope", "name": "other"},
	} {
		r := s.Call(t, "POST", "/api/v1/stacks", admin, bad)
		apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
		if !apptest.HasProblem(apptest.Problems(t, r), field, map[string]string{"name": "pattern", "provider": "exists"}[field]) {
			t.Fatalf("%s: %s", field, r.Body)
		}
	}

	// Publishing needs a changelog, and writes the operations beside the definition.
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/stacks/"+id+"/publish", admin, map[string]any{"changelog": " "}), http.StatusUnprocessableEntity)
	r = s.Call(t, "POST", "/api/v1/stacks/"+id+"/publish", admin, map[string]any{"changelog": "first"})
	apptest.WantStatus(t, r, http.StatusCreated)
	var v1 stack.Version
	apptest.Must(t, json.Unmarshal(r.Body, &v1))
	if v1.Version != 1 || v1.Definition == nil || len(v1.Definition.Operations) != 2 || v1.Definition.Operations[0].Name != "resize" {
		t.Fatalf("version 1: %s", r.Body)
	}
	var ops int
	apptest.Must(t, s.Pool.QueryRow(ctx, `SELECT count(*) FROM stack_day2_operations WHERE stack_id = $1 AND version = 1`, id).Scan(&ops))
	var inDefinition bool
	apptest.Must(t, s.Pool.QueryRow(ctx, `SELECT definition ? 'operations' FROM stack_versions WHERE stack_id = $1 AND version = 1`, id).Scan(&inDefinition))
	if ops != 2 || inDefinition {
		t.Fatalf("%d operation rows; operations kept in the definition too: %v", ops, inDefinition)
	}

	// Version 2 moves web to another version of the machine, rewires db and adds a cache.
	other, err := s.Components.Publish(ctx, s.Admin, s.Shared.ID, s.Shared.Revision, "second")
	apptest.Must(t, err)
	draft.Slots[1].Version = other.Version
	draft.Slots[0].Inputs["cores"] = stack.Wiring{Kind: stack.Literal, Value: 4}
	draft.Slots = append(draft.Slots, stack.Slot{Name: "cache", Component: s.Shared.ID, Version: 1,
		Inputs: map[string]stack.Wiring{"name": {Kind: stack.Literal, Value: "cache"}}, DependsOn: []string{"db"}})
	draft.Operations = draft.Operations[:1]
	draft.Parameters = json.RawMessage(`{"type":"object","properties":{"size":{"type":"integer","default":4},"label":{"type":"string","default":"shop"},"zone":{"type":"string"}}}`)
	r = s.Call(t, "PUT", "/api/v1/stacks/"+id, admin, map[string]any{"display_name": "Web shop", "description": "Two machines", "draft": draft})
	apptest.WantStatus(t, r, http.StatusOK)
	if r.JSON(t)["description"] != "Two machines" {
		t.Fatalf("update: %s", r.Body)
	}
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/stacks/"+id+"/publish", admin, map[string]any{"changelog": "second"}), http.StatusCreated)

	r = s.Call(t, "GET", "/api/v1/stacks/"+id+"/versions", admin, nil)
	var vs struct{ Versions []stack.Version }
	apptest.Must(t, json.Unmarshal(r.Body, &vs))
	if len(vs.Versions) != 2 || vs.Versions[0].Version != 2 || vs.Versions[1].Changelog != "first" {
		t.Fatalf("versions: %s", r.Body)
	}
	apptest.WantStatus(t, s.Call(t, "GET", "/api/v1/stacks/"+id+"/versions/3", admin, nil), http.StatusNotFound)

	r = s.Call(t, "GET", "/api/v1/stacks/"+id+"/diff?from=1&to=2", admin, nil)
	apptest.WantStatus(t, r, http.StatusOK)
	var d stack.Diff
	apptest.Must(t, json.Unmarshal(r.Body, &d))
	if !slices.Equal(d.Parameters.Added, []string{"zone"}) || !slices.Equal(d.Parameters.Changed, []string{"size"}) {
		t.Errorf("parameters: %+v", d.Parameters)
	}
	if !slices.Equal(d.Slots.Added, []string{"cache"}) || len(d.Slots.Changed) != 2 {
		t.Fatalf("slots: %s", r.Body)
	}
	for _, c := range d.Slots.Changed {
		switch c.Slot {
		case "db":
			if len(c.Inputs) != 1 || c.Inputs[0].Input != "cores" || c.Inputs[0].From != nil || c.Inputs[0].To == nil || c.Version != nil {
				t.Errorf("db: %+v", c)
			}
		case "web":
			if c.Version == nil || c.Version.From != 1 || c.Version.To != other.Version || len(c.Inputs) != 0 {
				t.Errorf("web: %+v", c)
			}
		}
	}
	if !slices.Equal(d.Operations.Removed, []string{"restart"}) || !slices.Equal(d.Summary.Upgraded, []string{"web"}) ||
		!slices.Equal(d.Summary.Updated, []string{"db"}) || !slices.Equal(d.Summary.Added, []string{"cache"}) {
		t.Errorf("operations %+v, summary %+v", d.Operations, d.Summary)
	}
	apptest.WantStatus(t, s.Call(t, "GET", "/api/v1/stacks/"+id+"/diff?from=1&to=7", admin, nil), http.StatusNotFound)
	apptest.WantStatus(t, s.Call(t, "GET", "/api/v1/stacks/"+id+"/diff?from=x&to=2", admin, nil), http.StatusUnprocessableEntity)

	// Searching and filtering the list.
	list := func(query url.Values) []string {
		r := s.Call(t, "GET", "/api/v1/stacks?"+query.Encode(), adminA, nil)
		apptest.WantStatus(t, r, http.StatusOK)
		var got struct{ Stacks []stack.Stack }
		apptest.Must(t, json.Unmarshal(r.Body, &got))
		var names []string
		for _, st := range got.Stacks {
			names = append(names, st.Name)
		}
		return names
	}
	r = s.Call(t, "POST", "/api/v1/stacks", adminA, map[string]any{"tenant_id": s.A.ID, "provider": "simcloud", "name": "own-stack"})
	apptest.WantStatus(t, r, http.StatusCreated)
	if got := list(url.Values{"q": {"web sh"}}); !slices.Equal(got, []string{"shop"}) {
		t.Errorf("search by display name: %v", got)
	}
	if got := list(url.Values{"scope": {"tenant"}}); !slices.Equal(got, []string{"own-stack"}) {
		t.Errorf("tenant scope: %v", got)
	}
	if got := list(url.Values{"scope": {"provider"}, "provider": {"simcloud"}}); !slices.Equal(got, []string{"shop"}) {
		t.Errorf("provider scope: %v", got)
	}
	if got := list(url.Values{"provider": {"aws"}}); len(got) != 0 {
		t.Errorf("aws: %v", got)
	}

	// A version an instance uses is not archived, nor the stack deleted.
	var instance uuid.UUID
	apptest.Must(t, s.Pool.QueryRow(ctx, `INSERT INTO stack_instances (tenant_id, environment_id, stack_id, version, name, status)
		VALUES ($1, $2, $3, 1, 'shop-1', 'active') RETURNING id`, s.A.ID, s.Dev(t).ID, id).Scan(&instance))
	r = s.Call(t, "POST", "/api/v1/stacks/"+id+"/versions/1/archive", admin, nil)
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	if !apptest.HasProblem(apptest.Problems(t, r), "version", "in_use") {
		t.Fatalf("archive in use: %s", r.Body)
	}
	r = s.Call(t, "DELETE", "/api/v1/stacks/"+id, admin, nil)
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	if !apptest.HasProblem(apptest.Problems(t, r), "instances", "in_use") {
		t.Fatalf("delete in use: %s", r.Body)
	}
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/stacks/"+id+"/versions/2/archive", admin, nil), http.StatusNoContent)
	_, err = s.Pool.Exec(ctx, `UPDATE stack_instances SET status = 'destroyed' WHERE id = $1`, instance)
	apptest.Must(t, err)
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/stacks/"+id+"/versions/1/archive", admin, nil), http.StatusNoContent)
	r = s.Call(t, "GET", "/api/v1/stacks/"+id, admin, nil)
	var got stack.Stack
	apptest.Must(t, json.Unmarshal(r.Body, &got))
	if len(got.Versions) != 2 || got.Versions[0].ArchivedAt == nil || got.Versions[1].ArchivedAt == nil {
		t.Fatalf("archived versions: %s", r.Body)
	}
	var audited int
	apptest.Must(t, s.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE target_id = $1`, id).Scan(&audited))
	if audited != 6 { // create, publish, update, publish, two archives
		t.Errorf("%d audit events", audited)
	}
	apptest.WantStatus(t, s.Call(t, "DELETE", "/api/v1/stacks/"+id, admin, nil), http.StatusNoContent)
	apptest.WantStatus(t, s.Call(t, "GET", "/api/v1/stacks/"+id, admin, nil), http.StatusNotFound)
}

// errorOf turns a refusal into the validation error it carries, for wantField.
func errorOf(t *testing.T, r apptest.Reply) error {
	t.Helper()
	if r.Status != http.StatusUnprocessableEntity {
		t.Fatalf("status %d, want 422: %s", r.Status, r.Body)
	}
	return &problem.ValidationError{Fields: apptest.Problems(t, r)}
}
