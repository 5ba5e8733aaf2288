package component_test

import (
	"fmt"
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

// BenchmarkGitSync measures what a team whose component lives in git waits for, with the real
// git server, Postgres and engine. Push to draft checked: from the signed push webhook, sent
// after a git push of a changed program, to the engine's check of the new draft having
// succeeded. Tag to version: from the webhook of an annotated tag pushed at that commit to its
// version published. Beside the first, the check's run as the check records it (started to
// finished: the engine's preview in its sandbox, with its scratch workspace), the floor on
// this machine, and what Nimbus adds to it in the same round (the webhook, two River jobs
// picked up, the repository read, the draft written). The tagged program was checked as the
// draft, so a tag runs no engine: tag to version is Nimbus's own (a job picked up, the
// repository read, the version written). The ends are seen through the API, as a client sees
// them, polled every 20 ms; that wait is counted in both, and in what Nimbus adds.
func BenchmarkGitSync(b *testing.B) {
	// The poll stays out of the way, so that each commit and tag is taken by its webhook.
	l := newLinkedSite(b, apptest.SiteConfig{RepositoryPoll: time.Hour})
	linked := l.synced(b, "main", l.repo.Head(b))
	l.checked(b, linked["check_id"].(string)) // the link's first commit is checked before the rounds start
	var checked, engine, own, published apptest.Latencies
	for round := 0; b.Loop(); round++ {
		l.repo.Write(b, "components/machine/Pulumi.yaml", fmt.Sprintf("%s# round %d\n", l.program, round))
		commit := l.repo.Commit(b, "Ada Lovelace", fmt.Sprintf("Round %d", round))
		l.repo.Push(b)
		start := time.Now()
		apptest.WantStatus(b, l.push(b, l.secret), http.StatusAccepted)
		chk := l.checked(b, l.synced(b, "main", commit)["check_id"].(string))
		took, run := time.Since(start), ranFor(b, chk)
		checked.Add(took)
		engine.Add(run)
		own.Add(took - run)

		tag := fmt.Sprintf("v1.%d.0", round)
		l.repo.Tag(b, tag, fmt.Sprintf("Round %d", round), commit)
		l.repo.Push(b)
		start = time.Now()
		apptest.WantStatus(b, l.pushed(b, l.secret, []byte(`{"ref":"refs/tags/`+tag+`"}`)), http.StatusAccepted)
		if s := l.synced(b, tag, commit); s["version"] != float64(round+1) {
			b.Fatalf("tag %s published as version %v, want %d", tag, s["version"], round+1)
		}
		published.Add(time.Since(start))
	}
	checked.ReportAs(b, "push-to-checked")
	engine.ReportAs(b, "check-engine")
	own.ReportAs(b, "push-to-checked-own")
	published.ReportAs(b, "tag-to-version")
}

// synced waits for the sync of ref at commit to end synced, and returns it.
func (l *linkedSite) synced(b *testing.B, ref, commit string) map[string]any {
	var sync map[string]any
	until(b, ref+" at "+commit+" synced", func() bool {
		for _, s := range l.link(b)["syncs"].([]any) {
			if s := s.(map[string]any); s["ref"] == ref && s["commit"] == commit && s["finished_at"] != nil {
				sync = s
			}
		}
		return sync != nil
	})
	if sync["status"] != "synced" {
		b.Fatalf("%s at %s: %v", ref, commit, sync)
	}
	return sync
}

// checked waits for the check to end succeeded, and returns it.
func (l *linkedSite) checked(b *testing.B, id string) map[string]any {
	var chk map[string]any
	until(b, "check "+id, func() bool {
		chk = l.Call(b, "GET", "/api/v1/checks/"+id, l.admin, nil).JSON(b)
		return chk["status"] == "succeeded" || chk["status"] == "failed"
	})
	if chk["status"] != "succeeded" {
		b.Fatalf("check %s failed: %s", id, chk["output"])
	}
	return chk
}

// ranFor is how long a check's engine ran, as the check records it.
func ranFor(b *testing.B, chk map[string]any) time.Duration {
	started, err := time.Parse(time.RFC3339Nano, chk["started_at"].(string))
	apptest.Must(b, err)
	finished, err := time.Parse(time.RFC3339Nano, chk["finished_at"].(string))
	apptest.Must(b, err)
	return finished.Sub(started)
}

// until polls done every 20 ms; a busy machine gets five minutes before what is waited for is
// called missing.
func until(b *testing.B, what string, done func() bool) {
	for deadline := time.Now().Add(5 * time.Minute); !done(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatalf("%s: not in 5 minutes", what)
		}
	}
}
