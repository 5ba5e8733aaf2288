package component_test

import (
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"nimbus/app/apptest"
	"nimbus/app/server"
)

func TestChecks_ATenantsExtraChecksWaitBehindItsOwn(t *testing.T) {
	// Four workers for checks, two of a tenant's at a time: a tenant that asks for more than
	// its two waits for its own, while other tenants' checks go ahead.
	s := apptest.NewSiteWith(t, apptest.SiteConfig{Backend: "file", CheckWorkers: 4, ChecksPerTenant: 2})
	ofB, err := s.Components.Create(t.Context(), s.AdminB, apptest.Machine(t, "b-machine", &s.B.ID))
	apptest.Must(t, err)
	tokA, tokB := s.Token(t, s.AdminA), s.Token(t, s.AdminB)

	var ofA []string
	for range 11 {
		ofA = append(ofA, s.RequestCheck(t, tokA, s.OfA.ID))
	}
	b := s.WaitCheck(t, tokB, s.RequestCheck(t, tokB, ofB.ID))
	if b["status"] != "succeeded" {
		t.Fatalf("B's check: %v\n%v", b["status"], b["output"])
	}
	bFinished, err := time.Parse(time.RFC3339Nano, b["finished_at"].(string))
	apptest.Must(t, err)

	// When B's check finished, some of A's had not started yet.
	var waiting int
	err = s.Pool.QueryRow(t.Context(), `SELECT count(*) FROM component_checks
		WHERE id = ANY($1::uuid[]) AND (started_at IS NULL OR started_at > $2)`, ofA, bFinished).Scan(&waiting)
	apptest.Must(t, err)
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
		got := s.WaitCheck(t, tokA, id)
		if got["status"] != "succeeded" {
			t.Fatalf("A's check %s: %v\n%v", id, got["status"], got["output"])
		}
		started, err1 := time.Parse(time.RFC3339Nano, got["started_at"].(string))
		finished, err2 := time.Parse(time.RFC3339Nano, got["finished_at"].(string))
		apptest.Must(t, err1)
		apptest.Must(t, err2)
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
	apptest.Must(t, s.Pool.QueryRow(t.Context(), `SELECT array_agg(DISTINCT queue) FROM river_job WHERE kind = 'component_check'`).Scan(&queues))
	if len(queues) != 1 || queues[0] != "checks" {
		t.Fatalf("checks ran in queues %v, want only checks", queues)
	}
}

func TestChecks_ATenantAskingTooOftenIsToldToWait(t *testing.T) {
	s := apptest.NewSite(t, func(d *server.Deps) { d.ChecksPerMinute = 3 })
	ofB, err := s.Components.Create(t.Context(), s.AdminB, apptest.Machine(t, "b-machine", &s.B.ID))
	apptest.Must(t, err)
	tokA, tokB, root := s.Token(t, s.AdminA), s.Token(t, s.AdminB), s.Token(t, s.Admin)

	for range 3 {
		s.RequestCheck(t, tokA, s.OfA.ID)
	}
	r := s.Call(t, "POST", "/api/v1/components/"+s.OfA.ID.String()+"/check", tokA, nil)
	apptest.WantStatus(t, r, http.StatusTooManyRequests)
	if wait, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || wait < 1 || wait > 60 {
		t.Fatalf("Retry-After %q, want 1 to 60 seconds", r.Header.Get("Retry-After"))
	}
	if msg := r.JSON(t)["error"].(string); !strings.Contains(msg, "too many checks") || !strings.Contains(msg, "3 a minute") {
		t.Fatalf("message %q", msg)
	}
	var n int
	apptest.Must(t, s.Pool.QueryRow(t.Context(), `SELECT count(*) FROM component_checks WHERE component_id = $1`, s.OfA.ID).Scan(&n))
	if n != 3 {
		t.Fatalf("%d checks recorded, want the 3 allowed", n)
	}

	// The editor's check button says so on the page.
	br := apptest.NewBrowser(t, s.URL)
	br.SignIn(t, "admin-a@example.com", "long enough password")
	br.Get(t, "/components/"+s.OfA.ID.String()+"/edit")
	r = br.Post(t, "/components/"+s.OfA.ID.String()+"/check", url.Values{"_csrf": {br.CSRF}}, "HX-Request", "true")
	apptest.WantStatus(t, r, http.StatusTooManyRequests)
	if r.Header.Get("Retry-After") == "" || !strings.Contains(string(r.Body), "too many checks: this tenant may ask for 3 a minute; try again in") {
		t.Fatalf("the page's answer: %q %s", r.Header.Get("Retry-After"), r.Body)
	}

	// Another tenant, and the provider's own components, count on their own.
	s.RequestCheck(t, tokB, ofB.ID)
	s.RequestCheck(t, root, s.Shared.ID)
}
