package server_test

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"nimbus/app/environment"
)

// BenchmarkEvents measures the receiver and the router: events accepted per second from 20
// clients each sending its share of 2,000 signed-with-bearer CloudEvents, one a request and
// then ten a request (batched-events/s), and, for a stack instance whose routes move it on
// alerts, how long after an event is accepted its transition run starts (p50 and p99 over 50
// alerts, each waited out before the next).
func BenchmarkEvents(b *testing.B) {
	s := newSite(b)
	root, admin := s.token(b, s.admin), s.token(b, s.adminA)
	zone, path, secret := webhook(b, s, "bench")
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
					if r := s.send(b, path, body, bearer...); r.status != http.StatusAccepted {
						b.Errorf("%d %s", r.status, r.body)
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
					r := s.send(b, path, []byte("["+strings.Join(events, ",")+"]"), batch...)
					if r.status != http.StatusAccepted || r.json(b)["accepted"] != float64(per) {
						b.Errorf("%d %s", r.status, r.body)
						return
					}
				}
			}()
		}
		wg.Wait()
		b.ReportMetric(total/time.Since(start).Seconds(), "batched-events/s")
	}

	// Latency to a transition: an instance in the source's zone, moved by each alert in turn.
	r := s.call(b, "POST", "/api/v1/stacks", root, map[string]any{"provider": "simcloud", "name": "bench", "draft": alertStack(b, s)})
	wantStatus(b, r, http.StatusCreated)
	stackID := r.json(b)["id"].(string)
	wantStatus(b, s.call(b, "POST", "/api/v1/stacks/"+stackID+"/publish", root, map[string]any{"changelog": "first"}), http.StatusCreated)
	env, err := environment.NewService(s.pool).Create(context.Background(), s.adminA, s.a.ID, "bench")
	must(b, err)
	_, err = s.pool.Exec(context.Background(), `UPDATE environments SET landing_zone_id = $1 WHERE id = $2`, zone, env.ID)
	must(b, err)
	r = s.call(b, "POST", "/api/v1/stack-instances", admin, map[string]any{"stack_id": stackID, "environment_id": env.ID, "name": "bench"})
	wantStatus(b, r, http.StatusAccepted)
	id := r.json(b)["id"].(string)
	waitState := func(state string) {
		for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			inst := s.call(b, "GET", "/api/v1/stack-instances/"+id, admin, nil).json(b)
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
		wantStatus(b, s.send(b, path, body, alert...), http.StatusAccepted)
		waitState(to)
	}
	var lat []float64
	rows, err := s.pool.Query(context.Background(), `SELECT extract(epoch FROM r.started_at - l.received_at) * 1000
		FROM event_log l JOIN stack_runs r ON r.id = l.run_id WHERE l.outcome = 'signalled'`)
	must(b, err)
	for rows.Next() {
		var ms float64
		must(b, rows.Scan(&ms))
		lat = append(lat, ms)
	}
	must(b, rows.Err())
	if len(lat) != 50 {
		b.Fatalf("%d events started a transition, want 50", len(lat))
	}
	sort.Float64s(lat)
	b.ReportMetric(lat[len(lat)/2], "p50-to-transition-ms")
	b.ReportMetric(lat[len(lat)*99/100], "p99-to-transition-ms")
}
