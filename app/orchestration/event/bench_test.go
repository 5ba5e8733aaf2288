package event_test

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"nimbus/app/apptest"
	"nimbus/app/orchestration/environment"
)

// BenchmarkEvents measures the receiver and the router: events accepted per second from 20
// clients each sending its share of 2,000 signed-with-bearer CloudEvents, one a request and
// then ten a request (batched-events/s), and, for a stack instance whose routes move it on
// alerts, how long after an event is accepted its transition run starts (p50 and p99 over 50
// alerts, each waited out before the next).
func BenchmarkEvents(b *testing.B) {
	s := apptest.NewSite(b)
	root, admin := s.Token(b, s.Admin), s.Token(b, s.AdminA)
	zone, path, secret := apptest.Webhook(b, s, "bench")
	bearer := []string{"Content-Type", "application/cloudevents+json", "Authorization", "Bearer " + secret}
	for round := 0; b.Loop(); round++ {
		const clients, total = 20, 2000
		var wg sync.WaitGroup
		start := time.Now()
		for c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := c; i < total; i += clients {
					body := cloudEvent(fmt.Sprintf("bench-%d-%d", round, i), "vm.stopped", fmt.Sprintf("vm-%d", i))
					if r := s.Send(b, path, body, bearer...); r.Status != http.StatusAccepted {
						b.Errorf("%d %s", r.Status, r.Body)
						return
					}
				}
			}()
		}
		wg.Wait()
		b.ReportMetric(total/time.Since(start).Seconds(), "events/s")

		// The same again in CloudEvents batches of ten, as a sender that groups its events sends.
		const per = 10
		batch := []string{"Content-Type", "application/cloudevents-batch+json", "Authorization", "Bearer " + secret}
		start = time.Now()
		for c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := c * per; i < total; i += clients * per {
					var events []string
					for j := i; j < i+per; j++ {
						events = append(events, string(cloudEvent(fmt.Sprintf("batch-%d-%d", round, j), "vm.stopped", fmt.Sprintf("vm-%d", j))))
					}
					r := s.Send(b, path, []byte("["+strings.Join(events, ",")+"]"), batch...)
					if r.Status != http.StatusAccepted || r.JSON(b)["accepted"] != float64(per) {
						b.Errorf("%d %s", r.Status, r.Body)
						return
					}
				}
			}()
		}
		wg.Wait()
		b.ReportMetric(total/time.Since(start).Seconds(), "batched-events/s")
	}

	// Latency to a transition: an instance in the source's zone, moved by each alert in turn.
	r := s.Call(b, "POST", "/api/v1/stacks", root, map[string]any{"provider": "simcloud", "name": "bench", "draft": alertStack(b, s)})
	apptest.WantStatus(b, r, http.StatusCreated)
	stackID := r.JSON(b)["id"].(string)
	apptest.WantStatus(b, s.Call(b, "POST", "/api/v1/stacks/"+stackID+"/publish", root, map[string]any{"changelog": "first"}), http.StatusCreated)
	env, err := environment.NewService(s.Pool).Create(context.Background(), s.AdminA, s.A.ID, "bench")
	apptest.Must(b, err)
	_, err = s.Pool.Exec(context.Background(), `UPDATE environments SET landing_zone_id = $1 WHERE id = $2`, zone, env.ID)
	apptest.Must(b, err)
	r = s.Call(b, "POST", "/api/v1/stack-instances", admin, map[string]any{"stack_id": stackID, "environment_id": env.ID, "name": "bench"})
	apptest.WantStatus(b, r, http.StatusAccepted)
	id := r.JSON(b)["id"].(string)
	waitState := func(state string) {
		for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			inst := s.Call(b, "GET", "/api/v1/stack-instances/"+id, admin, nil).JSON(b)
			if inst["state"] == state && inst["status"] == "active" {
				return
			}
		}
		b.Fatalf("the instance did not reach %s", state)
	}
	waitState("active")
	alert := []string{"Content-Type", "application/json", "Authorization", "Bearer " + secret}
	for i := range 50 {
		status, to := "firing", "degraded"
		if i%2 == 1 {
			status, to = "resolved", "active"
		}
		body := fmt.Appendf(nil, `{"version":"4","status":%q,"receiver":"nimbus","externalURL":"http://alertmanager:9093","alerts":[{"status":%q,
			"labels":{"alertname":"Down","severity":"critical","stack_instance":%q},"startsAt":"2026-11-27T01:00:00Z","fingerprint":"bench-%d"}]}`,
			status, status, id, i)
		apptest.WantStatus(b, s.Send(b, path, body, alert...), http.StatusAccepted)
		waitState(to)
	}
	var lat []float64
	rows, err := s.Pool.Query(context.Background(), `SELECT extract(epoch FROM r.started_at - l.received_at) * 1000
		FROM event_log l JOIN stack_runs r ON r.id = l.run_id WHERE l.outcome = 'signalled'`)
	apptest.Must(b, err)
	for rows.Next() {
		var ms float64
		apptest.Must(b, rows.Scan(&ms))
		lat = append(lat, ms)
	}
	apptest.Must(b, rows.Err())
	if len(lat) != 50 {
		b.Fatalf("%d events started a transition, want 50", len(lat))
	}
	sort.Float64s(lat)
	b.ReportMetric(lat[len(lat)/2], "p50-to-transition-ms")
	b.ReportMetric(lat[len(lat)*99/100], "p99-to-transition-ms")
}
