package deploy_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"nimbus/app/apptest"
	"nimbus/app/orchestration/environment"
	"nimbus/app/platform/tracing"
	"nimbus/db/dbtest"
)

// What a preview of a deployed machine may cost the database from its request to the exec of
// its engine, counted as BenchmarkRequestToEngine times it: the request's statements and the
// worker's, until the engine's process starts. These figures, unlike a latency, do not move
// with the machine's load: a change that adds a statement, a round trip or a commit that
// waits for the disk to this path shows here. (It was 39 statements in 51 round trips before
// checkpoints became one statement each and the worker's first reads one, and 31 in 35 before
// the request read its deployment once and its credential brought its roles. The one commit
// that waits for the disk is the request's flush: the request commits without waiting, so that
// its worker starts at once, then waits for the disk before it tells the user of the operation.)
var previewCut = dbtest.Cost{Statements: 29, RoundTrips: 33, Commits: 7, Durable: 1}

// TestPreview_CostBeforeTheEngineStaysWithinItsCut counts what previews of a deployed machine
// send the database before their engine starts, by the trace of each: the API request and the
// job that runs it. River's fetch of the job carries no trace: it is listed with whatever else
// the server did meanwhile, not counted, but must not wait for the disk.
func TestPreview_CostBeforeTheEngineStaysWithinItsCut(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	w := apptest.NewWorld(t)
	sent := &dbtest.Statements{}
	s := &apptest.Site{World: w, Server: apptest.Start(t, sent.Traced(t, w.Pool),
		apptest.SiteConfig{Backend: "file", Tracer: tracing.New(sdktrace.WithSyncer(spans))})}
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	user := s.Token(t, s.UserA)
	r := s.Call(t, "POST", "/api/v1/deployments", user, map[string]any{
		"component_id": s.Shared.ID, "environment_id": env.ID, "name": "web", "parameters": map[string]any{"name": "counted-machine"}})
	apptest.WantStatus(t, r, http.StatusAccepted)
	body := r.JSON(t)
	dep := body["deployment"].(map[string]any)["id"].(string)
	if op := s.WaitOperation(t, user, body["operation"].(map[string]any)["id"].(string)); op["status"] != "succeeded" {
		t.Fatalf("the deploy did not succeed: %v", op)
	}

	// The first preview on a node pays for statements prepared once per connection; the last
	// of a few is what every later one costs.
	var cost dbtest.Cost
	for range 3 {
		start := time.Now()
		r := s.Call(t, "POST", "/api/v1/deployments/"+dep+"/preview", user, nil)
		apptest.WantStatus(t, r, http.StatusAccepted)
		id := r.JSON(t)["id"].(string)
		if op := s.WaitOperation(t, user, id); op["status"] != "succeeded" {
			t.Fatalf("preview %s did not succeed: %v", id, op)
		}
		engine := engineStart(t, spans, id)
		var mine, others []dbtest.Sent
		for _, x := range sent.Since(start) {
			switch {
			case !x.At.Before(engine.StartTime):
			case x.Trace == engine.SpanContext.TraceID():
				mine = append(mine, x)
			default:
				others = append(others, x)
			}
		}
		cost = dbtest.CostOf(mine)
		t.Logf("preview %s before its engine: %s\n%s\nmeanwhile, outside its trace:\n%s", id, cost, listing(start, mine), listing(start, others))
		// River's fetch of the job stands between the request's commit and the job's work.
		var river []dbtest.Sent
		for _, x := range others {
			if strings.HasPrefix(x.SQL, "-- name: Job") {
				river = append(river, x)
			}
		}
		if c := dbtest.CostOf(river); c.Durable > 0 {
			t.Errorf("River's statements meanwhile cost %s: its fetch of the job need not wait for the disk\n%s", c, listing(start, river))
		}
	}
	if cost.Statements > previewCut.Statements || cost.RoundTrips > previewCut.RoundTrips ||
		cost.Commits > previewCut.Commits || cost.Durable > previewCut.Durable {
		t.Errorf("a preview costs %s before its engine starts; the cut is %s", cost, previewCut)
	}
}

// engineStart is the span of the preview's engine process, once the exporter has it.
func engineStart(t *testing.T, spans *tracetest.InMemoryExporter, op string) tracetest.SpanStub {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		mine := ofOperation(spans.GetSpans(), op)
		if i := slices.IndexFunc(mine, named("pulumi preview")); i >= 0 {
			return mine[i]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no span of preview %s's engine process in a minute; its spans: %v", op, names(mine))
		}
	}
}

// listing is statements one a line: their round trip, when they were answered after start,
// their first words, marked when they committed (D waiting for the disk, L not).
func listing(start time.Time, sent []dbtest.Sent) string {
	var b strings.Builder
	for _, x := range sent {
		sql := strings.Join(strings.Fields(x.SQL), " ")
		if len(sql) > 110 {
			sql = sql[:110] + "…"
		}
		mark := "  "
		switch {
		case x.Durable:
			mark = "D "
		case x.Commit:
			mark = "L "
		}
		fmt.Fprintf(&b, "%s%3d %6.1f ms %s\n", mark, x.Trip, float64(x.At.Sub(start).Microseconds())/1000, sql)
	}
	return b.String()
}
