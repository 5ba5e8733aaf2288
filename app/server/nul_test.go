package server_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"nimbus/app/apptest"
	"nimbus/app/domain/stack"
	"nimbus/app/orchestration/environment"
)

// Postgres's text cannot hold the NUL character: wherever a request carries one, in any text
// field, it is refused with the field named, before anything reaches the database.
func TestAPI_NULIsRefusedNamingTheField(t *testing.T) {
	s := apptest.NewSite(t)
	root, adminA := s.Token(t, s.Admin), s.Token(t, s.AdminA)
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	_, hook, secret := apptest.Webhook(t, s, "events")
	r := s.Call(t, "POST", "/api/v1/stacks", root, map[string]any{"provider": "simcloud", "name": "shop", "draft": apptest.StackDraft(s.Shared.ID, 1)})
	apptest.WantStatus(t, r, http.StatusCreated)
	stackPath := "/api/v1/stacks/" + r.JSON(t)["id"].(string)
	draft := func(change func(d *stack.Definition)) map[string]any {
		d := apptest.StackDraft(s.Shared.ID, 1)
		change(&d)
		return map[string]any{"display_name": "Shop", "draft": d}
	}
	event := func(contentType, body string) func() apptest.Reply {
		return func() apptest.Reply {
			return s.Send(t, hook, []byte(body), apptest.Signed(secret, time.Now(), []byte(body), contentType)...)
		}
	}
	call := func(method, path, token string, body any) func() apptest.Reply {
		return func() apptest.Reply { return s.Call(t, method, path, token, body) }
	}

	cases := []struct {
		name  string
		send  func() apptest.Reply
		field string
	}{
		{"an API token's name", call("POST", "/api/v1/tokens", adminA, map[string]any{"name": "ci\x00"}), "name"},
		{"a component's description", call("PATCH", "/api/v1/components/"+s.OfA.ID.String(), adminA,
			map[string]any{"description": "a\x00machine"}), "description"},
		{"a subscription's types", call("POST", "/api/v1/event-subscriptions", adminA, map[string]any{"tenant_id": s.A.ID,
			"name": "hook", "url": "https://hooks.example.com/nimbus", "types": []string{"deployment.*", "stack.\x00"}}), "types.1"},
		{"a stack draft's display name", call("PUT", stackPath, root, map[string]any{"display_name": "Sh\x00p",
			"draft": apptest.StackDraft(s.Shared.ID, 1)}), "display_name"},
		{"a stack draft's expression", call("PUT", stackPath, root, draft(func(d *stack.Definition) {
			d.Slots[1].Inputs["name"] = stack.Wiring{Kind: stack.Expression, Expr: "\"web-\x00\" + params.label"}
		})), "draft.slots.1.inputs.name.expr"},
		{"a stack draft's property name", call("PUT", stackPath, root, draft(func(d *stack.Definition) {
			d.Parameters = json.RawMessage(`{"type":"object","properties":{"si\u0000ze":{"type":"integer"}}}`)
		})), "draft.parameters.properties"},
		{"an inbound event's key", event("application/json", `{"type":"vm.stopped","subject":"vm-1","data":{"po\u0000wer":"off"}}`), "data"},
		{"an inbound event sent as a form (curl -d)", event("application/x-www-form-urlencoded",
			`{"type":"vm.stopped","subject":"vm-1","data":{"load":"100%","po\u0000wer":"off"}}`), "data"},
		{"a CloudEvent's data key", event("application/cloudevents+json", `{"specversion":"1.0","id":"e1","source":"/simcloud/eu",
			"type":"vm.stopped","subject":"vm-1","datacontenttype":"application/json","data":{"po\u0000wer":"off"}}`), "data"},
		{"an Alertmanager label name", event("application/json", string(apptest.Alertmanager(`"alertname":"Down","sev\u0000":"critical"`))),
			"alerts.0.labels"},
		{"a query parameter", call("GET", "/api/v1/environments/"+env.ID.String()+"/resolvers/naming/next?pattern=web-%00-{seq}", adminA, nil), "pattern"},
		{"a path parameter", call("PUT", "/api/v1/environments/"+env.ID.String()+"/resolvers/na%00ming", root, map[string]any{}), "type"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := c.send()
			apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
			apptest.WantProblem(t, r, c.field, "no_nul")
		})
	}

	t.Run("a form's field", func(t *testing.T) {
		b := apptest.NewBrowser(t, s.URL)
		b.Get(t, "/login")
		r := b.Post(t, "/login", url.Values{"_csrf": {b.CSRF}, "email": {"root\x00@example.com"}, "password": {"correct horse battery"}})
		apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
		apptest.Mentions(t, r, "email: must not hold the NUL character")
	})

	t.Run("JSON typed into a form's field", func(t *testing.T) {
		b := apptest.NewBrowser(t, s.URL)
		b.SignIn(t, "admin-a@example.com", "long enough password")
		b.Get(t, "/components/"+s.OfA.ID.String())
		r := b.Post(t, "/components/"+s.OfA.ID.String()+"/draft", url.Values{"_csrf": {b.CSRF},
			"input_schema": {`{"type":"object","properties":{"n":{"type":"string","description":"\u0000"}}}`}})
		apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
		apptest.Mentions(t, r, "input_schema.properties.n.description: must not hold the NUL character")
	})

	t.Run("an event sent as a form without a NUL still comes in", func(t *testing.T) {
		r := event("application/x-www-form-urlencoded", `{"type":"vm.stopped","subject":"vm-1","data":{"load":"100%"}}`)()
		apptest.WantStatus(t, r, http.StatusAccepted)
	})

	t.Run("text without a NUL still goes through", func(t *testing.T) {
		// An escaped backslash before u0000 is six characters of text, not a NUL.
		r := s.Call(t, "PATCH", "/api/v1/components/"+s.OfA.ID.String(), adminA, `{"description": "a \\u0000 b"}`)
		apptest.WantStatus(t, r, http.StatusOK)
		if got := r.JSON(t)["description"]; got != `a \u0000 b` || strings.ContainsRune(got.(string), 0) {
			t.Fatalf("the description is %q", got)
		}
	})
}
