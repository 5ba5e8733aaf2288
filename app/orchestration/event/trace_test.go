package event_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"nimbus/app/apptest"
	"nimbus/app/orchestration/environment"
	"nimbus/app/platform/tracing"
)

// A stack run is one trace: the request that asked for it, each job of its graph, each slot it
// started and the slot's operation job beneath it. An event is one too: the request that
// accepted it, the job that routed it, and the run of the transition it started, each naming
// what it is about.
func TestTrace_StackRunsAndRoutedEventsAreTracesOfTheirJobs(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	s := apptest.NewSiteWith(t, apptest.SiteConfig{Backend: "file", Tracer: tracing.New(sdktrace.WithSyncer(spans))})
	root, user := s.Token(t, s.Admin), s.Token(t, s.UserA)
	zone, path, secret := apptest.Webhook(t, s, "watched")
	r := s.Call(t, "POST", "/api/v1/stacks", root, map[string]any{"provider": "simcloud", "name": "watched", "draft": alertStack(t, s)})
	apptest.WantStatus(t, r, http.StatusCreated)
	stackID := r.JSON(t)["id"].(string)
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/stacks/"+stackID+"/publish", root, map[string]any{"changelog": "first"}), http.StatusCreated)
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "ops")
	apptest.Must(t, err)
	_, err = s.Pool.Exec(t.Context(), `UPDATE environments SET landing_zone_id = $1 WHERE id = $2`, zone, env.ID)
	apptest.Must(t, err)

	r = s.Call(t, "POST", "/api/v1/stack-instances", user, map[string]any{"stack_id": stackID, "environment_id": env.ID, "name": "watched"})
	apptest.WantStatus(t, r, http.StatusAccepted)
	id := r.JSON(t)["id"].(string)
	if inst := s.WaitInstance(t, user, id, apptest.Status("active", "failed")); inst["state"] != "active" {
		t.Fatalf("deploy: %v", inst)
	}
	var deployRun string
	apptest.Must(t, s.Pool.QueryRow(t.Context(), `SELECT id::text FROM stack_runs WHERE instance_id = $1 AND kind = 'deploy'`, id).Scan(&deployRun))
	run := await(t, spans, string(tracing.RunID), deployRun, "slot")
	request := one(t, run, "POST /api/v1/stack-instances")
	if attr(request, string(tracing.InstanceID)) != id {
		t.Errorf("the request's span names instance %q, want %s", attr(request, string(tracing.InstanceID)), id)
	}
	inTrace(t, run, request.SpanContext.TraceID())
	graphs := named(run, "job graph")
	if len(graphs) == 0 {
		t.Fatalf("no graph job's span names the run; those that do: %v", names(run))
	}
	// Each slot is a child of a graph job, and its operation's job a child of the slot.
	all := spans.GetSpans()
	slots := children(all, graphs, "slot")
	if len(slots) != 1 || attr(slots[0], "nimbus.slot") != "net" {
		t.Fatalf("the graph jobs started slots %v, want net", slots)
	}
	// The operation's job span ends as its worker returns, after the instance shows it.
	var ops tracetest.SpanStubs
	for deadline := time.Now().Add(time.Minute); len(ops) == 0 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		ops = children(spans.GetSpans(), slots, "job operation")
	}
	if len(ops) != 1 || attr(ops[0], string(tracing.OperationKind)) != "deploy" || ops[0].SpanContext.TraceID() != request.SpanContext.TraceID() {
		t.Fatalf("the slot's operation job: %v", ops)
	}

	// A critical alert degrades the instance: a transition run, started by the event's routing.
	apptest.WantStatus(t, s.Send(t, path, apptest.Alertmanager(`"alertname":"Down","severity":"critical","stack_instance":"`+id+`"`),
		"Content-Type", "application/json", "Authorization", "Bearer "+secret), http.StatusAccepted)
	s.WaitInstance(t, user, id, func(m map[string]any) bool { return m["state"] == "degraded" && m["status"] == "active" })
	var eventID, transition string
	apptest.Must(t, s.Pool.QueryRow(t.Context(), `SELECT id::text, run_id::text FROM event_log WHERE type = 'alert.firing'`).Scan(&eventID, &transition))
	routed := await(t, spans, string(tracing.EventID), eventID, "job event_route")
	route := one(t, routed, "job event_route")
	if attr(route, string(tracing.RunID)) != transition {
		t.Errorf("the routing's span names run %q, want the transition it started, %s", attr(route, string(tracing.RunID)), transition)
	}
	all = spans.GetSpans()
	byID := map[trace.SpanID]tracetest.SpanStub{}
	for _, sp := range all {
		byID[sp.SpanContext.SpanID()] = sp
	}
	parent, ok := byID[route.Parent.SpanID()]
	if !ok || parent.SpanKind != trace.SpanKindServer || parent.SpanContext.TraceID() != route.SpanContext.TraceID() {
		t.Errorf("the routing's span is not a child of the request that accepted the event: %v", parent.Name)
	}
	moved := await(t, spans, string(tracing.RunID), transition, "job graph")
	if g := children(all, []tracetest.SpanStub{route}, "job graph"); len(g) != 1 || attr(g[0], string(tracing.RunID)) != transition {
		t.Errorf("the routing's span has graph jobs %v beneath it, want the transition's; the run's spans: %v", names(g), names(moved))
	}
	for _, sp := range all {
		for _, a := range sp.Attributes {
			if v := a.Value.Emit(); strings.Contains(v, "watched-net") || strings.Contains(v, "10.30.0.0") {
				t.Errorf("span %q shows a parameter's value in %s", sp.Name, a.Key)
			}
		}
	}
}

// await waits until a span named want carries key=value, and returns every span that does.
func await(t *testing.T, spans *tracetest.InMemoryExporter, key, value, want string) tracetest.SpanStubs {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		var mine tracetest.SpanStubs
		for _, sp := range spans.GetSpans() {
			if attr(sp, key) == value {
				mine = append(mine, sp)
			}
		}
		if len(named(mine, want)) > 0 {
			return mine
		}
		if time.Now().After(deadline) {
			t.Fatalf("no span %q with %s=%s in a minute; those with it: %v", want, key, value, names(mine))
		}
	}
}

func one(t *testing.T, spans tracetest.SpanStubs, name string) tracetest.SpanStub {
	t.Helper()
	found := named(spans, name)
	if len(found) == 0 {
		t.Fatalf("no span %q; there are %v", name, names(spans))
	}
	return found[0]
}

func inTrace(t *testing.T, spans tracetest.SpanStubs, id trace.TraceID) {
	t.Helper()
	for _, sp := range spans {
		if sp.SpanContext.TraceID() != id {
			t.Errorf("span %q is in trace %s, want %s", sp.Name, sp.SpanContext.TraceID(), id)
		}
	}
}

// children are the spans named name whose parent is one of parents.
func children(all tracetest.SpanStubs, parents []tracetest.SpanStub, name string) tracetest.SpanStubs {
	var out tracetest.SpanStubs
	for _, sp := range all {
		if sp.Name == name && slices.ContainsFunc(parents, func(p tracetest.SpanStub) bool { return p.SpanContext.SpanID() == sp.Parent.SpanID() }) {
			out = append(out, sp)
		}
	}
	return out
}

func named(spans tracetest.SpanStubs, name string) tracetest.SpanStubs {
	var out tracetest.SpanStubs
	for _, sp := range spans {
		if sp.Name == name {
			out = append(out, sp)
		}
	}
	return out
}

func attr(sp tracetest.SpanStub, key string) string {
	for _, a := range sp.Attributes {
		if string(a.Key) == key {
			return a.Value.Emit()
		}
	}
	return ""
}

func names(spans tracetest.SpanStubs) []string {
	var out []string
	for _, sp := range spans {
		out = append(out, sp.Name)
	}
	return out
}
