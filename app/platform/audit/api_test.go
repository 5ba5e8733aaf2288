package audit_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"nimbus/app/apptest"
)

func TestAPI_AuditEventsRedactAndFilter(t *testing.T) {
	s := apptest.NewSite(t)
	admin := s.Token(t, s.Admin)
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/users", admin, map[string]any{"email": "secretive@example.com", "password": "do not log me please"}), 201)

	r := s.Call(t, "GET", "/api/v1/audit-events?action=user.create&limit=2", admin, nil)
	apptest.WantStatus(t, r, 200)
	var page struct {
		Events []struct {
			Action string
			Diff   map[string]any
		}
		NextBefore int64 `json:"next_before"`
	}
	if err := json.Unmarshal(r.Body, &page); err != nil {
		t.Fatal(err)
	}
	if len(page.Events) != 2 || page.NextBefore == 0 {
		t.Fatalf("want a full first page and a next page, got %d events, next %d", len(page.Events), page.NextBefore)
	}
	for _, e := range page.Events {
		if e.Action != "user.create" {
			t.Fatalf("filter let through %s", e.Action)
		}
	}
	// The user's own event must be in what is searched, or finding no password proves nothing.
	var dump string
	if err := s.Pool.QueryRow(context.Background(), "SELECT coalesce(string_agg(diff::text, ' '), '') FROM audit_events").Scan(&dump); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(dump, "secretive@example.com") {
		t.Fatalf("the audit log does not record the user's creation: %q", dump)
	}
	if strings.Contains(dump, "do not log me please") {
		t.Fatal("a password reached the audit log")
	}
}
