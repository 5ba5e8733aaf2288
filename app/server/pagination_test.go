package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"nimbus/app/auth"
	"nimbus/db/seed"
)

// TestAPI_ListsPageNewestFirstByCursor follows the next links of the lists that grow without
// bound through a seeded history: each page continues where the one before ended, newest first,
// with nothing repeated or skipped, and the last page has no next link.
func TestAPI_ListsPageNewestFirstByCursor(t *testing.T) {
	s := newSite(t)
	hash, err := auth.HashPassword("seeded password")
	if err != nil {
		t.Fatal(err)
	}
	size := seed.Size{Tenants: 3, Components: 30, Deployments: 60, Operations: 300, AuditEvents: 30}
	if err := seed.Run(context.Background(), s.pool, size, hash); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		who  string
		list string
		want int
	}{
		{seed.Provider, "operations", size.Operations},
		{seed.AdminEmail(2), "operations", size.Operations / size.Tenants},
		{seed.Provider, "deployments", size.Deployments + 0},
		{seed.AdminEmail(2), "deployments", size.Deployments / size.Tenants},
		{seed.Provider, "approvals", -1},
	} {
		t.Run(c.list+" as "+c.who, func(t *testing.T) {
			token := s.token(t, s.principal(t, c.who))
			seen := map[string]bool{}
			var last time.Time
			path := "/api/v1/" + c.list + "?limit=7"
			for pages := 0; path != ""; pages++ {
				if pages > 100 {
					t.Fatal("the pages never end")
				}
				r := s.call(t, "GET", path, token, nil)
				wantStatus(t, r, http.StatusOK)
				body := r.json(t)
				rows, _ := body[c.list].([]any)
				for _, row := range rows {
					m := row.(map[string]any)
					id := m["id"].(string)
					if seen[id] {
						t.Fatalf("%s shown twice", id)
					}
					seen[id] = true
					at, err := time.Parse(time.RFC3339Nano, m["created_at"].(string))
					if err != nil {
						t.Fatal(err)
					}
					if !last.IsZero() && at.After(last) {
						t.Fatalf("%s made %s comes after one made %s", id, at, last)
					}
					last = at
				}
				next, _ := body["next"].(string)
				if link := r.header.Get("Link"); next != "" && link != "<"+next+`>; rel="next"` {
					t.Fatalf("Link %q for next %q", link, next)
				}
				if next != "" && len(rows) != 7 {
					t.Fatalf("a page of %d rows links to another", len(rows))
				}
				path = next
			}
			if c.want >= 0 && len(seen) != c.want {
				t.Fatalf("saw %d, want %d", len(seen), c.want)
			}
			if c.want < 0 && len(seen) == 0 {
				t.Fatal("saw none")
			}
		})
	}
}

func TestAPI_ListRefusesAForeignCursor(t *testing.T) {
	s := newSite(t)
	token := s.token(t, s.admin)
	for _, path := range []string{"/api/v1/operations?before=nonsense", "/api/v1/deployments?limit=0", "/api/v1/approvals?before=x"} {
		r := s.call(t, "GET", path, token, nil)
		wantStatus(t, r, http.StatusUnprocessableEntity)
		if !strings.Contains(string(r.body), "before") && !strings.Contains(string(r.body), "limit") {
			t.Fatalf("%s: %s", path, r.body)
		}
	}
}
