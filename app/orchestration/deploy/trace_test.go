package deploy_test

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

// A deploy through the API is one trace: the request that queued it, the job that ran it (from
// when it fell due), its claim, each saga step and checkpoint, and the engine's run and process,
// every span naming the operation, each child within its parent's time.
func TestTrace_DeployIsOneTraceOfItsSteps(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	s := apptest.NewSiteWith(t, apptest.SiteConfig{Backend: "file", Tracer: tracing.New(sdktrace.WithSyncer(spans))})
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	user := s.Token(t, s.UserA)
	r := s.Call(t, "POST", "/api/v1/deployments", user, map[string]any{
		"component_id": s.Shared.ID, "environment_id": env.ID, "name": "web", "parameters": map[string]any{"name": "traced-machine-7"}})
	apptest.WantStatus(t, r, http.StatusAccepted)
	id := r.JSON(t)["operation"].(map[string]any)["id"].(string)
	if op := s.WaitOperation(t, user, id); op["status"] != "succeeded" {
		t.Fatalf("the deploy did not succeed: %v", op)
	}

	// The job's span ends once the worker has recorded the ending, after the API shows it.
	var mine tracetest.SpanStubs
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		mine = ofOperation(spans.GetSpans(), id)
		if slices.ContainsFunc(mine, named("job operation")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no span of the operation's job in a minute; the operation's spans: %v", names(mine))
		}
	}

	for _, want := range []string{"POST /api/v1/deployments", "job operation", "claim",
		"step resolve", "step govern", "step preview", "step approve", "step up", "step record", "checkpoint",
		"engine up", "pulumi up", "engine events"} {
		if !slices.ContainsFunc(mine, named(want)) {
			t.Errorf("no span %q carries the operation's id; those that do: %v", want, names(mine))
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	request := mine[slices.IndexFunc(mine, named("POST /api/v1/deployments"))]
	for _, sp := range mine {
		if sp.SpanContext.TraceID() != request.SpanContext.TraceID() {
			t.Errorf("span %q is in trace %s, the request's in %s", sp.Name, sp.SpanContext.TraceID(), request.SpanContext.TraceID())
		}
		if kind := attr(sp, string(tracing.OperationKind)); kind != "deploy" {
			t.Errorf("span %q says the operation's kind is %q, want deploy", sp.Name, kind)
		}
		for _, a := range sp.Attributes {
			if strings.Contains(a.Value.Emit(), "traced-machine-7") {
				t.Errorf("span %q shows a parameter's value in %s", sp.Name, a.Key)
			}
		}
	}

	byID := map[trace.SpanID]tracetest.SpanStub{}
	for _, sp := range mine {
		byID[sp.SpanContext.SpanID()] = sp
	}
	for _, sp := range mine {
		parent, ok := byID[sp.Parent.SpanID()]
		if !ok {
			if sp.Name != "POST /api/v1/deployments" {
				t.Errorf("span %q has no parent among the operation's spans", sp.Name)
			}
			continue
		}
		if sp.Name == "job operation" {
			// Queued by the request, it runs after it: it begins, as it falls due, before the
			// request's transaction commits.
			if sp.StartTime.Before(parent.StartTime) || sp.StartTime.After(parent.EndTime) {
				t.Errorf("the job's span starts at %s, outside the request's %s–%s", sp.StartTime, parent.StartTime, parent.EndTime)
			}
			continue
		}
		if sp.StartTime.Before(parent.StartTime) || sp.EndTime.After(parent.EndTime) {
			t.Errorf("span %q (%s–%s) is not within its parent %q (%s–%s)",
				sp.Name, sp.StartTime, sp.EndTime, parent.Name, parent.StartTime, parent.EndTime)
		}
	}

	process := mine[slices.IndexFunc(mine, named("pulumi up"))]
	if attr(process, "nimbus.engine.exit_code") != "0" || !slices.ContainsFunc(process.Events, func(e sdktrace.Event) bool { return e.Name == "started" }) {
		t.Errorf("the engine process's span tells no start or exit code 0: %v, %v", process.Attributes, process.Events)
	}
	engine := mine[slices.IndexFunc(mine, named("engine up"))]
	var events []string
	for _, e := range engine.Events {
		events = append(events, e.Name)
	}
	if !slices.Equal(events, []string{"first engine event", "last engine event"}) {
		t.Errorf("the engine run's span has events %q, want the first and last engine events", events)
	}
}

// ofOperation are the spans naming the operation id.
func ofOperation(all tracetest.SpanStubs, id string) tracetest.SpanStubs {
	var out tracetest.SpanStubs
	for _, sp := range all {
		if attr(sp, string(tracing.OperationID)) == id {
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

func named(name string) func(tracetest.SpanStub) bool {
	return func(sp tracetest.SpanStub) bool { return sp.Name == name }
}

func names(spans tracetest.SpanStubs) []string {
	var out []string
	for _, sp := range spans {
		out = append(out, sp.Name)
	}
	return out
}

// Approving an operation that waited resumes it in the approving request's trace: the request's
// span names the operation, and the job that goes on with it is a child of that span.
func TestTrace_ApprovingRequestNamesTheOperationItResumes(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	g := apptest.NewGated(t, apptest.SiteConfig{Backend: "file", Tracer: tracing.New(sdktrace.WithSyncer(spans))})
	g.Policy(t, g.As.Admin, map[string]any{"scope": "environment", "scope_id": g.Env, "operations": []string{"destroy"},
		"approver_role": "tenant_admin"})
	op, req := g.Destroy(t)
	id := op["id"].(string)
	g.Decide(t, g.As.Admin2, req["id"].(string), "approve", "", http.StatusOK)
	if op = g.WaitOperation(t, g.As.Admin, id); op["status"] != "succeeded" {
		t.Fatalf("the approved destroy: %v", op)
	}

	// The resumed job's span ends once its worker has recorded the ending, after the API shows it.
	const approving = "POST /api/v1/approvals/:id/approve"
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		mine := ofOperation(spans.GetSpans(), id)
		if i := slices.IndexFunc(mine, named(approving)); i >= 0 {
			request := mine[i]
			if slices.ContainsFunc(mine, func(sp tracetest.SpanStub) bool {
				return sp.Name == "job operation" && sp.Parent.SpanID() == request.SpanContext.SpanID() &&
					sp.SpanContext.TraceID() == request.SpanContext.TraceID()
			}) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no approving request's span naming the operation, with the resumed job beneath it, in a minute; the operation's spans: %v", names(mine))
		}
	}
}
