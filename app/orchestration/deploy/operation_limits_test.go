package deploy_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"nimbus/app/apptest"
	"nimbus/app/kernel/outbox"
	"nimbus/app/orchestration/deploy"
	"nimbus/app/orchestration/environment"
	"nimbus/app/orchestration/event"
	"nimbus/db"
)

// longDelay keeps a machine's create waiting far longer than any test, and longOperations lets
// its operation run that long: it runs until it is cancelled.
const (
	longDelay      = 600000
	longOperations = 15 * time.Minute
)

func TestOperations_ATenantsExtraOperationsWaitBehindItsOwn(t *testing.T) {
	// Three workers, two of a tenant's operations at a time: a tenant that asks for a third
	// waits for its own, while another tenant's deploy goes ahead on the worker left.
	s := apptest.NewSiteWith(t, apptest.SiteConfig{Backend: "file", JobWorkers: 3, OperationsPerTenant: 2, OperationTimeout: longOperations})
	envs := environment.NewService(s.Pool)
	envA, err := envs.Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	envB, err := envs.Create(t.Context(), s.AdminB, s.B.ID, "dev")
	apptest.Must(t, err)
	tokA, tokB := s.Token(t, s.AdminA), s.Token(t, s.AdminB)

	var ofA []string
	for _, name := range []string{"slow-1", "slow-2", "slow-3"} {
		ofA = append(ofA, s.DeployShared(t, tokA, envA.ID, name, longDelay))
	}
	s.CancelAtEnd(t, tokA, ofA...)
	deadline := time.Now().Add(2 * time.Minute)
	for s.RunningOf(t, s.A.ID) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("after 2 minutes %d of A's operations run, want 2", s.RunningOf(t, s.A.ID))
		}
		time.Sleep(100 * time.Millisecond)
	}

	// B's deploy runs to its end while A's hold their places, and A never runs more than two.
	ofB := s.DeployShared(t, tokB, envB.ID, "quick", 0)
	most := 0
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		most = max(most, s.RunningOf(t, s.A.ID))
		b := s.StatusOf(t, tokB, ofB)
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
		if op := s.StatusOf(t, tokA, id); op["status"] == "queued" {
			waiting = id
			if op["tenant_running"] != 2.0 || op["position"] != nil {
				t.Fatalf("A's waiting operation: %v, want tenant_running 2 and no position", op)
			}
		}
	}
	if waiting == "" {
		t.Fatal("none of A's operations waits")
	}
	page := s.Call(t, "GET", "/operations/"+waiting, tokA, nil)
	apptest.WantStatus(t, page, http.StatusOK)
	if !strings.Contains(string(page.Body), `data-testid="tenant-queue"`) ||
		!strings.Contains(string(page.Body), "waiting for one of this tenant's 2 running operations to end") {
		t.Fatalf("the waiting operation's page does not say what it waits for:\n%s", page.Body)
	}

	// One of A's ends, and the waiting one takes its place.
	for _, id := range ofA {
		if id != waiting {
			apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/operations/"+id+"/cancel", tokA, nil), http.StatusAccepted)
			s.WaitOperation(t, tokA, id)
			break
		}
	}
	for deadline := time.Now().Add(time.Minute); s.StatusOf(t, tokA, waiting)["status"] == "queued"; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("A's waiting operation did not start within a minute of a place freeing")
		}
	}
	if n := s.RunningOf(t, s.A.ID); n > 2 {
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
	s := apptest.NewSiteWith(t, apptest.SiteConfig{Backend: "file", JobWorkers: 1, OperationTimeout: longOperations, Deliveries: event.DeliveryConfig{AllowPrivate: true,
		TLS: receiver.Client().Transport.(*http.Transport).TLSClientConfig}})
	envs := environment.NewService(s.Pool)
	envA, err := envs.Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	envB, err := envs.Create(t.Context(), s.AdminB, s.B.ID, "dev")
	apptest.Must(t, err)
	tokA, tokB := s.Token(t, s.AdminA), s.Token(t, s.AdminB)
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/event-subscriptions", tokA, map[string]any{"tenant_id": s.A.ID, "name": "hook",
		"url": receiver.URL + "/hook"}), http.StatusCreated)
	_, path, secret := apptest.Webhook(t, s, "zone")

	slow := s.DeployShared(t, tokA, envA.ID, "slow", longDelay)
	s.CancelAtEnd(t, tokA, slow)
	for deadline := time.Now().Add(2 * time.Minute); s.StatusOf(t, tokA, slow)["status"] != "running"; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("A's deploy did not start in 2 minutes")
		}
	}
	behind := s.DeployShared(t, tokB, envB.ID, "behind", 0)
	s.CancelAtEnd(t, tokB, behind)

	// An event comes in and is routed.
	apptest.WantStatus(t, s.Send(t, path, []byte(`{"type":"backup.failed","subject":"db-1"}`),
		"Content-Type", "application/json", "Authorization", "Bearer "+secret), http.StatusAccepted)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		var outcome string
		apptest.Must(t, s.Pool.QueryRow(t.Context(), `SELECT outcome FROM event_log WHERE type = 'backup.failed'`).Scan(&outcome))
		if outcome != event.Pending {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the event was not routed within a minute while the operations' worker was busy")
		}
	}

	// One of Nimbus's own events is swept and delivered.
	apptest.Must(t, outbox.Emit(t.Context(), db.Queries(s.Pool), outbox.Event{Type: "environment.active", Subject: "dev", Tenant: s.A.ID, Environment: envA.ID}))
	select {
	case body := <-got:
		if !strings.Contains(body, "environment.active") {
			t.Fatalf("delivered: %s", body)
		}
	case <-time.After(time.Minute):
		t.Fatal("nothing was delivered within a minute while the operations' worker was busy")
	}

	// The reaper sweeps.
	res, err := s.Jobs.Insert(t.Context(), deploy.ReaperArgs{}, nil)
	apptest.Must(t, err)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		var state string
		apptest.Must(t, s.Pool.QueryRow(t.Context(), `SELECT state FROM river_job WHERE id = $1`, res.Job.ID).Scan(&state))
		if state == "completed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the reaper is still %s after a minute while the operations' worker was busy", state)
		}
	}

	// All the while the operations' queue was full: B's deploy waited for its worker.
	if op := s.StatusOf(t, tokB, behind); op["status"] != "queued" {
		t.Fatalf("B's deploy: %v, want it queued behind A's", op)
	}
}

// Operations a dead node left running are resumed within their tenant's bound: the stale ones
// count for nothing, and one that finds no place waits queued until one frees.
func TestReaper_ResumesATenantsOperationsWithinItsBound(t *testing.T) {
	s := apptest.NewSiteWith(t, apptest.SiteConfig{Backend: "file", OperationsPerTenant: 2, OperationTimeout: longOperations})
	env, err := environment.NewService(s.Pool).Create(t.Context(), s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	tok := s.Token(t, s.AdminA)
	var deps, deploys []string
	for _, name := range []string{"web-1", "web-2"} {
		r := s.Call(t, "POST", "/api/v1/deployments", tok, map[string]any{
			"component_id": s.Shared.ID, "environment_id": env.ID, "name": name, "parameters": map[string]any{"name": name}})
		apptest.WantStatus(t, r, http.StatusAccepted)
		body := r.JSON(t)
		deps = append(deps, body["deployment"].(map[string]any)["id"].(string))
		deploys = append(deploys, body["operation"].(map[string]any)["id"].(string))
	}
	for _, id := range deploys {
		if op := s.WaitOperation(t, tok, id); op["status"] != "succeeded" {
			t.Fatalf("deploy: %v", op)
		}
	}
	// A long deploy holds one of the tenant's two places.
	slow := s.DeployShared(t, tok, env.ID, "slow", longDelay)
	s.CancelAtEnd(t, tok, slow)
	for deadline := time.Now().Add(2 * time.Minute); s.StatusOf(t, tok, slow)["status"] != "running"; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the long deploy did not start in 2 minutes")
		}
	}

	// A node died while it refreshed both deployments.
	var crashed []string
	for _, dep := range deps {
		var id string
		apptest.Must(t, s.Pool.QueryRow(t.Context(), `INSERT INTO operations (deployment_id, kind, status, lease, heartbeat_at, started_at, created_at)
			VALUES ($1, 'refresh', 'running', gen_random_uuid(), now() - interval '2 minutes', now() - interval '3 minutes', now() - interval '3 minutes')
			RETURNING id::text`, dep).Scan(&id))
		crashed = append(crashed, id)
	}
	if _, err := s.Jobs.Insert(t.Context(), deploy.ReaperArgs{}, nil); err != nil {
		t.Fatal(err)
	}

	most, requeued := 0, false
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		most = max(most, s.RunningOf(t, s.A.ID))
		ended := 0
		for _, id := range crashed {
			switch op := s.StatusOf(t, tok, id); op["status"] {
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
