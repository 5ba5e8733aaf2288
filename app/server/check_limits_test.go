package server_test

import (
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"nimbus/app/server"
)

// waitCheck polls a check through the API until it has finished.
func (s *site) waitCheck(t *testing.T, token, id string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		got := s.call(t, "GET", "/api/v1/checks/"+id, token, nil).json(t)
		if got["status"] == "succeeded" || got["status"] == "failed" {
			return got
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("check %s did not finish in 3 minutes", id)
	return nil
}

func (s *site) requestCheck(t *testing.T, token string, component uuid.UUID) string {
	t.Helper()
	r := s.call(t, "POST", "/api/v1/components/"+component.String()+"/check", token, nil)
	wantStatus(t, r, http.StatusAccepted)
	return r.json(t)["id"].(string)
}

func TestChecks_ATenantsExtraChecksWaitBehindItsOwn(t *testing.T) {
	// Four workers for checks, two of a tenant's at a time: a tenant that asks for more than
	// its two waits for its own, while other tenants' checks go ahead.
	s := newSiteWith(t, siteConfig{backend: "file", checkWorkers: 4, checksPerTenant: 2})
	ofB, err := s.components.Create(t.Context(), s.adminB, machine(t, "b-machine", &s.b.ID))
	must(t, err)
	tokA, tokB := s.token(t, s.adminA), s.token(t, s.adminB)

	var ofA []string
	for range 11 {
		ofA = append(ofA, s.requestCheck(t, tokA, s.ofA.ID))
	}
	b := s.waitCheck(t, tokB, s.requestCheck(t, tokB, ofB.ID))
	if b["status"] != "succeeded" {
		t.Fatalf("B's check: %v\n%v", b["status"], b["output"])
	}
	bFinished, err := time.Parse(time.RFC3339Nano, b["finished_at"].(string))
	must(t, err)

	// When B's check finished, some of A's had not started yet.
	var waiting int
	err = s.pool.QueryRow(t.Context(), `SELECT count(*) FROM component_checks
		WHERE id = ANY($1::uuid[]) AND (started_at IS NULL OR started_at > $2)`, ofA, bFinished).Scan(&waiting)
	must(t, err)
	if waiting == 0 {
		t.Fatal("B's check waited until every one of A's had started")
	}

	// And never did more than two of A's run at once.
	type edge struct {
		at    time.Time
		delta int
	}
	var edges []edge
	for _, id := range ofA {
		got := s.waitCheck(t, tokA, id)
		if got["status"] != "succeeded" {
			t.Fatalf("A's check %s: %v\n%v", id, got["status"], got["output"])
		}
		started, err1 := time.Parse(time.RFC3339Nano, got["started_at"].(string))
		finished, err2 := time.Parse(time.RFC3339Nano, got["finished_at"].(string))
		must(t, err1)
		must(t, err2)
		edges = append(edges, edge{started, +1}, edge{finished, -1})
	}
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].at.Equal(edges[j].at) {
			return edges[i].delta < edges[j].delta // an end at the same instant frees its place first
		}
		return edges[i].at.Before(edges[j].at)
	})
	running, most := 0, 0
	for _, e := range edges {
		running += e.delta
		most = max(most, running)
	}
	if most > 2 {
		t.Fatalf("%d of A's checks ran at once, want at most 2", most)
	}

	// The checks ran in a queue of their own, apart from deploys.
	var queues []string
	must(t, s.pool.QueryRow(t.Context(), `SELECT array_agg(DISTINCT queue) FROM river_job WHERE kind = 'component_check'`).Scan(&queues))
	if len(queues) != 1 || queues[0] != "checks" {
		t.Fatalf("checks ran in queues %v, want only checks", queues)
	}
}

func TestChecks_ATenantAskingTooOftenIsToldToWait(t *testing.T) {
	s := newSite(t, func(d *server.Deps) { d.ChecksPerMinute = 3 })
	ofB, err := s.components.Create(t.Context(), s.adminB, machine(t, "b-machine", &s.b.ID))
	must(t, err)
	tokA, tokB, root := s.token(t, s.adminA), s.token(t, s.adminB), s.token(t, s.admin)

	for range 3 {
		s.requestCheck(t, tokA, s.ofA.ID)
	}
	r := s.call(t, "POST", "/api/v1/components/"+s.ofA.ID.String()+"/check", tokA, nil)
	wantStatus(t, r, http.StatusTooManyRequests)
	if wait, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || wait < 1 || wait > 60 {
		t.Fatalf("Retry-After %q, want 1 to 60 seconds", r.header.Get("Retry-After"))
	}
	if msg := r.json(t)["error"].(string); !strings.Contains(msg, "too many checks") || !strings.Contains(msg, "3 a minute") {
		t.Fatalf("message %q", msg)
	}
	var n int
	must(t, s.pool.QueryRow(t.Context(), `SELECT count(*) FROM component_checks WHERE component_id = $1`, s.ofA.ID).Scan(&n))
	if n != 3 {
		t.Fatalf("%d checks recorded, want the 3 allowed", n)
	}

	// The editor's check button says so on the page.
	br := newBrowser(t, s.url)
	br.signIn(t, "admin-a@example.com", "long enough password")
	br.get(t, "/components/"+s.ofA.ID.String()+"/edit")
	r = br.post(t, "/components/"+s.ofA.ID.String()+"/check", url.Values{"_csrf": {br.csrf}}, "HX-Request", "true")
	wantStatus(t, r, http.StatusTooManyRequests)
	if r.header.Get("Retry-After") == "" || !strings.Contains(string(r.body), "too many checks: this tenant may ask for 3 a minute; try again in") {
		t.Fatalf("the page's answer: %q %s", r.header.Get("Retry-After"), r.body)
	}

	// Another tenant, and the provider's own components, count on their own.
	s.requestCheck(t, tokB, ofB.ID)
	s.requestCheck(t, root, s.shared.ID)
}
