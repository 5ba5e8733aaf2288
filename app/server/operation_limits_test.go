package server_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"nimbus/app/deploy"
	"nimbus/app/environment"
	"nimbus/app/event"
	"nimbus/app/outbox"
	"nimbus/db/dbgen"
)

// longDelay keeps a machine's create waiting far longer than any test, and longOperations lets
// its operation run that long: it runs until it is cancelled.
const (
	longDelay      = 600000
	longOperations = 15 * time.Minute
)

// deployShared asks for a deployment of the shared component in env, its machine's create
// taking delayMs, and returns its first operation's id.
func (s *site) deployShared(t *testing.T, token string, env uuid.UUID, name string, delayMs int) string {
	t.Helper()
	params := map[string]any{"name": name}
	if delayMs > 0 {
		params["delay_ms"] = delayMs
	}
	r := s.call(t, "POST", "/api/v1/deployments", token, map[string]any{
		"component_id": s.shared.ID, "environment_id": env, "name": name, "parameters": params})
	wantStatus(t, r, http.StatusAccepted)
	return r.json(t)["operation"].(map[string]any)["id"].(string)
}

// cancelAtEnd cancels the operations when the test ends, before its server stops, and waits for
// them to end: a server stopping waits for its running jobs.
func (s *site) cancelAtEnd(t *testing.T, token string, ids ...string) {
	t.Cleanup(func() {
		for _, id := range ids {
			s.call(t, "POST", "/api/v1/operations/"+id+"/cancel", token, nil)
		}
		for _, id := range ids {
			s.waitOperation(t, token, id)
		}
	})
}

// runningOf counts the tenant's operations running now: those whose worker beats.
func (s *site) runningOf(t *testing.T, tenant uuid.UUID) int {
	t.Helper()
	var n int
	must(t, s.pool.QueryRow(t.Context(), `SELECT count(*) FROM operations o JOIN deployed_components d ON d.id = o.deployment_id
		WHERE d.tenant_id = $1 AND o.status = 'running' AND o.heartbeat_at > now() - interval '1 minute'`, tenant).Scan(&n))
	return n
}

// statusOf reads an operation's status through the API.
func (s *site) statusOf(t *testing.T, token, id string) map[string]any {
	t.Helper()
	r := s.call(t, "GET", "/api/v1/operations/"+id, token, nil)
	wantStatus(t, r, http.StatusOK)
	return r.json(t)
}

func TestOperations_ATenantsExtraOperationsWaitBehindItsOwn(t *testing.T) {
	// Three workers, two of a tenant's operations at a time: a tenant that asks for a third
	// waits for its own, while another tenant's deploy goes ahead on the worker left.
	s := newSiteWith(t, siteConfig{backend: "file", jobWorkers: 3, operationsPerTenant: 2, operationTimeout: longOperations})
	envs := environment.NewService(s.pool)
	envA, err := envs.Create(t.Context(), s.adminA, s.a.ID, "dev")
	must(t, err)
	envB, err := envs.Create(t.Context(), s.adminB, s.b.ID, "dev")
	must(t, err)
	tokA, tokB := s.token(t, s.adminA), s.token(t, s.adminB)

	var ofA []string
	for _, name := range []string{"slow-1", "slow-2", "slow-3"} {
		ofA = append(ofA, s.deployShared(t, tokA, envA.ID, name, longDelay))
	}
	s.cancelAtEnd(t, tokA, ofA...)
	deadline := time.Now().Add(2 * time.Minute)
	for s.runningOf(t, s.a.ID) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("after 2 minutes %d of A's operations run, want 2", s.runningOf(t, s.a.ID))
		}
		time.Sleep(100 * time.Millisecond)
	}

	// B's deploy runs to its end while A's hold their places, and A never runs more than two.
	ofB := s.deployShared(t, tokB, envB.ID, "quick", 0)
	most := 0
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		most = max(most, s.runningOf(t, s.a.ID))
		b := s.statusOf(t, tokB, ofB)
		if b["status"] == "succeeded" {
			break
		}
		if b["status"] == "failed" || b["status"] == "cancelled" {
			t.Fatalf("B's deploy: %v", b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("B's deploy is still %v after 3 minutes, behind A's long ones", b["status"])
		}
	}
	if most > 2 {
		t.Fatalf("%d of A's operations ran at once, want at most 2", most)
	}

	// A's third waits queued, saying for what, on the API and on its page.
	var waiting string
	for _, id := range ofA {
		if op := s.statusOf(t, tokA, id); op["status"] == "queued" {
			waiting = id
			if op["tenant_running"] != 2.0 || op["position"] != nil {
				t.Fatalf("A's waiting operation: %v, want tenant_running 2 and no position", op)
			}
		}
	}
	if waiting == "" {
		t.Fatal("none of A's operations waits")
	}
	page := s.call(t, "GET", "/operations/"+waiting, tokA, nil)
	wantStatus(t, page, http.StatusOK)
	if !strings.Contains(string(page.body), `data-testid="tenant-queue"`) ||
		!strings.Contains(string(page.body), "waiting for one of this tenant's 2 running operations to end") {
		t.Fatalf("the waiting operation's page does not say what it waits for:\n%s", page.body)
	}

	// One of A's ends, and the waiting one takes its place.
	for _, id := range ofA {
		if id != waiting {
			wantStatus(t, s.call(t, "POST", "/api/v1/operations/"+id+"/cancel", tokA, nil), http.StatusAccepted)
			s.waitOperation(t, tokA, id)
			break
		}
	}
	for deadline := time.Now().Add(time.Minute); s.statusOf(t, tokA, waiting)["status"] == "queued"; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("A's waiting operation did not start within a minute of a place freeing")
		}
	}
	if n := s.runningOf(t, s.a.ID); n > 2 {
		t.Fatalf("%d of A's operations run, want at most 2", n)
	}
}

func TestJobs_EventsDeliveriesAndSweepsGoOnWhileOperationsFillTheirQueue(t *testing.T) {
	got := make(chan string, 10)
	receiver := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- string(body)
	}))
	defer receiver.Close()
	// One worker for operations, taken by A's long deploy.
	s := newSiteWith(t, siteConfig{backend: "file", jobWorkers: 1, operationTimeout: longOperations, deliveries: event.DeliveryConfig{AllowPrivate: true,
		TLS: receiver.Client().Transport.(*http.Transport).TLSClientConfig}})
	envs := environment.NewService(s.pool)
	envA, err := envs.Create(t.Context(), s.adminA, s.a.ID, "dev")
	must(t, err)
	envB, err := envs.Create(t.Context(), s.adminB, s.b.ID, "dev")
	must(t, err)
	tokA, tokB := s.token(t, s.adminA), s.token(t, s.adminB)
	wantStatus(t, s.call(t, "POST", "/api/v1/event-subscriptions", tokA, map[string]any{"tenant_id": s.a.ID, "name": "hook",
		"url": receiver.URL + "/hook"}), http.StatusCreated)
	_, path, secret := webhook(t, s, "zone")

	slow := s.deployShared(t, tokA, envA.ID, "slow", longDelay)
	s.cancelAtEnd(t, tokA, slow)
	for deadline := time.Now().Add(2 * time.Minute); s.statusOf(t, tokA, slow)["status"] != "running"; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("A's deploy did not start in 2 minutes")
		}
	}
	behind := s.deployShared(t, tokB, envB.ID, "behind", 0)
	s.cancelAtEnd(t, tokB, behind)

	// An event comes in and is routed.
	wantStatus(t, s.send(t, path, []byte(`{"type":"backup.failed","subject":"db-1"}`),
		"Content-Type", "application/json", "Authorization", "Bearer "+secret), http.StatusAccepted)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		var outcome string
		must(t, s.pool.QueryRow(t.Context(), `SELECT outcome FROM event_log WHERE type = 'backup.failed'`).Scan(&outcome))
		if outcome != event.Pending {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the event was not routed within a minute while the operations' worker was busy")
		}
	}

	// One of Nimbus's own events is swept and delivered.
	must(t, outbox.Emit(t.Context(), dbgen.New(s.pool), outbox.Event{Type: "environment.active", Subject: "dev", Tenant: s.a.ID, Environment: envA.ID}))
	select {
	case body := <-got:
		if !strings.Contains(body, "environment.active") {
			t.Fatalf("delivered: %s", body)
		}
	case <-time.After(time.Minute):
		t.Fatal("nothing was delivered within a minute while the operations' worker was busy")
	}

	// The reaper sweeps.
	res, err := s.jobs.Insert(t.Context(), deploy.ReaperArgs{}, nil)
	must(t, err)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		var state string
		must(t, s.pool.QueryRow(t.Context(), `SELECT state FROM river_job WHERE id = $1`, res.Job.ID).Scan(&state))
		if state == "completed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the reaper is still %s after a minute while the operations' worker was busy", state)
		}
	}

	// All the while the operations' queue was full: B's deploy waited for its worker.
	if op := s.statusOf(t, tokB, behind); op["status"] != "queued" {
		t.Fatalf("B's deploy: %v, want it queued behind A's", op)
	}
}

// Operations a dead node left running are resumed within their tenant's bound: the stale ones
// count for nothing, and one that finds no place waits queued until one frees.
func TestReaper_ResumesATenantsOperationsWithinItsBound(t *testing.T) {
	s := newSiteWith(t, siteConfig{backend: "file", operationsPerTenant: 2, operationTimeout: longOperations})
	env, err := environment.NewService(s.pool).Create(t.Context(), s.adminA, s.a.ID, "dev")
	must(t, err)
	tok := s.token(t, s.adminA)
	var deps, deploys []string
	for _, name := range []string{"web-1", "web-2"} {
		r := s.call(t, "POST", "/api/v1/deployments", tok, map[string]any{
			"component_id": s.shared.ID, "environment_id": env.ID, "name": name, "parameters": map[string]any{"name": name}})
		wantStatus(t, r, http.StatusAccepted)
		body := r.json(t)
		deps = append(deps, body["deployment"].(map[string]any)["id"].(string))
		deploys = append(deploys, body["operation"].(map[string]any)["id"].(string))
	}
	for _, id := range deploys {
		if op := s.waitOperation(t, tok, id); op["status"] != "succeeded" {
			t.Fatalf("deploy: %v", op)
		}
	}
	// A long deploy holds one of the tenant's two places.
	slow := s.deployShared(t, tok, env.ID, "slow", longDelay)
	s.cancelAtEnd(t, tok, slow)
	for deadline := time.Now().Add(2 * time.Minute); s.statusOf(t, tok, slow)["status"] != "running"; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the long deploy did not start in 2 minutes")
		}
	}

	// A node died while it refreshed both deployments.
	var crashed []string
	for _, dep := range deps {
		var id string
		must(t, s.pool.QueryRow(t.Context(), `INSERT INTO operations (deployment_id, kind, status, lease, heartbeat_at, started_at, created_at)
			VALUES ($1, 'refresh', 'running', gen_random_uuid(), now() - interval '2 minutes', now() - interval '3 minutes', now() - interval '3 minutes')
			RETURNING id::text`, dep).Scan(&id))
		crashed = append(crashed, id)
	}
	if _, err := s.jobs.Insert(t.Context(), deploy.ReaperArgs{}, nil); err != nil {
		t.Fatal(err)
	}

	most, requeued := 0, false
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		most = max(most, s.runningOf(t, s.a.ID))
		ended := 0
		for _, id := range crashed {
			switch op := s.statusOf(t, tok, id); op["status"] {
			case "queued":
				requeued = true
			case "succeeded":
				ended++
			case "running":
			default:
				t.Fatalf("a resumed refresh: %v", op)
			}
		}
		if ended == len(crashed) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the resumed refreshes did not end in 3 minutes")
		}
	}
	if most > 2 {
		t.Fatalf("%d of the tenant's operations ran at once, want at most 2", most)
	}
	if !requeued {
		t.Fatal("neither resumed refresh waited: the one without a place should have gone back to the queue")
	}
}
