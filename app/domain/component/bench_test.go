package component_test

import (
	"net/http"
	"testing"
	"time"

	"nimbus/app/apptest"
)

// BenchmarkCheckMachine measures what an author waits for: from asking for a check of the
// simcloud-machine draft to reading its result, with the real engine.
func BenchmarkCheckMachine(b *testing.B) {
	s := apptest.NewSite(b)
	admin := s.Token(b, s.Admin)
	r := s.Call(b, "POST", "/api/v1/components", admin, machineJSON(b, "bench-machine"))
	if r.Status != http.StatusCreated {
		b.Fatalf("create: %d %s", r.Status, r.Body)
	}
	id := r.JSON(b)["id"].(string)
	var l apptest.Latencies
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		checkID := s.Call(b, "POST", "/api/v1/components/"+id+"/check", admin, nil).JSON(b)["id"].(string)
		for {
			got := s.Call(b, "GET", "/api/v1/checks/"+checkID, admin, nil).JSON(b)
			if got["status"] == "succeeded" {
				break
			}
			if got["status"] == "failed" {
				b.Fatalf("check failed: %s", got["output"])
			}
			if time.Since(start) > 2*time.Minute {
				b.Fatal("check took over 2 minutes")
			}
			time.Sleep(20 * time.Millisecond)
		}
		l.Add(time.Since(start))
	}
	b.StopTimer()
	l.Report(b)
}
