package deploy_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"nimbus/app/apptest"
	"nimbus/app/domain/auth"
	"nimbus/db/seed"
)

// TestAPI_ListsPageNewestFirstByCursor follows the next links of the lists that grow without
// bound through a seeded history: each page continues where the one before ended, newest first,
// with nothing repeated or skipped, and the last page has no next link.
func TestAPI_ListsPageNewestFirstByCursor(t *testing.T) {
	s := apptest.NewSite(t)
	hash, err := auth.HashPassword("seeded password")
	if err != nil {
		t.Fatal(err)
	}
	size := seed.Size{Tenants: 3, Components: 30, Deployments: 60, Operations: 300, AuditEvents: 30}
	if err := seed.Run(context.Background(), s.Pool, size, hash); err != nil {
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
			token := s.Token(t, s.Principal(t, c.who))
			seen := map[string]bool{}
			var last time.Time
			path := "/api/v1/" + c.list + "?limit=7"
			for pages := 0; path != ""; pages++ {
				if pages > 100 {
					t.Fatal("the pages never end")
				}
				r := s.Call(t, "GET", path, token, nil)
				apptest.WantStatus(t, r, http.StatusOK)
				body := r.JSON(t)
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
				if link := r.Header.Get("Link"); next != "" && link != "<"+next+`>; rel="next"` {
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
	s := apptest.NewSite(t)
	token := s.Token(t, s.Admin)
	for _, path := range []string{"/api/v1/operations?before=nonsense", "/api/v1/deployments?limit=0", "/api/v1/approvals?before=x"} {
		r := s.Call(t, "GET", path, token, nil)
		apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
		if !strings.Contains(string(r.Body), "before") && !strings.Contains(string(r.Body), "limit") {
			t.Fatalf("%s: %s", path, r.Body)
		}
	}
}

// A deployment's history pages as the lists do: following its Older links shows every
// operation on the deployment once, newest first.
func TestPages_DeploymentHistoryPages(t *testing.T) {
	s := apptest.NewSite(t)
	hash, err := auth.HashPassword("seeded password")
	if err != nil {
		t.Fatal(err)
	}
	if err := seed.Run(context.Background(), s.Pool, seed.Size{Tenants: 1, Components: 10, Deployments: 4, Operations: 20, AuditEvents: 3}, hash); err != nil {
		t.Fatal(err)
	}
	var deployment string
	var want int
	if err := s.Pool.QueryRow(context.Background(), `SELECT deployment_id::text, count(*) FROM operations
		GROUP BY deployment_id ORDER BY count(*) DESC LIMIT 1`).Scan(&deployment, &want); err != nil {
		t.Fatal(err)
	}
	if want < 3 {
		t.Fatalf("the busiest deployment has %d operations: too few to page", want)
	}
	b := apptest.NewBrowser(t, s.URL)
	b.SignIn(t, "root@example.com", "correct horse battery")
	operation := regexp.MustCompile(`href="/operations/([0-9a-f-]{36})"`)
	older := regexp.MustCompile(`<a href="([^"]+)">Older →</a>`)
	seen := map[string]bool{}
	path := "/deployments/" + deployment + "?limit=2"
	pages := 0
	for ; path != ""; pages++ {
		if pages > want {
			t.Fatal("the pages never end")
		}
		body := string(b.Get(t, path).Body)
		history := body[strings.Index(body, "<h2>History</h2>"):]
		for _, m := range operation.FindAllStringSubmatch(history, -1) {
			if seen[m[1]] {
				t.Fatalf("operation %s shown twice", m[1])
			}
			seen[m[1]] = true
		}
		path = ""
		if m := older.FindStringSubmatch(history); m != nil {
			path = html.UnescapeString(m[1])
		}
	}
	if len(seen) != want || pages != (want+1)/2 {
		t.Fatalf("the history showed %d operations of %d on %d pages of 2", len(seen), want, pages)
	}
}

// A list sorted by a column pages from the value its last row had on the page shown, not the
// one it has when the next is asked for: a row whose status moves on between two pages leaves
// the rows after it where they were, none skipped or shown twice. A cursor made for the list
// read newest first says nothing of where a sorted one continues, and is refused by name.
func TestPages_SortedPagesHoldTheirPlaceWhenTheCursorRowChanges(t *testing.T) {
	s := apptest.NewSite(t)
	hash, err := auth.HashPassword("seeded password")
	if err != nil {
		t.Fatal(err)
	}
	if err := seed.Run(context.Background(), s.Pool, seed.Size{Tenants: 1, Components: 10, Deployments: 6, Operations: 30, AuditEvents: 3}, hash); err != nil {
		t.Fatal(err)
	}
	b := apptest.NewBrowser(t, s.URL)
	b.SignIn(t, "root@example.com", "correct horse battery")
	next := regexp.MustCompile(`<a href="([^"]+)"[^>]*>(?:Next|Older) →</a>`)
	// walk follows a list's next links from path, calling moved with the last row of the first
	// page before it asks for the second, and returns the rows in the order shown.
	walk := func(t *testing.T, path, section string, row *regexp.Regexp, moved func(id string)) []string {
		t.Helper()
		var shown []string
		for pages := 0; path != ""; pages++ {
			if pages > 20 {
				t.Fatal("the pages never end")
			}
			r := b.Get(t, path)
			if r.Status != http.StatusOK {
				t.Fatalf("%s: %d %s", path, r.Status, r.Body)
			}
			body := string(r.Body)
			body = body[strings.Index(body, section):]
			var page []string
			for _, m := range row.FindAllStringSubmatch(body, -1) {
				if !slices.Contains(page, m[1]) {
					page = append(page, m[1])
				}
			}
			shown = append(shown, page...)
			if pages == 0 && len(page) > 0 {
				moved(page[len(page)-1])
			}
			path = ""
			if m := next.FindStringSubmatch(body); m != nil {
				path = html.UnescapeString(m[1])
			}
		}
		return shown
	}
	wantEachOnce := func(t *testing.T, shown []string, table string) {
		t.Helper()
		var want int
		if err := s.Pool.QueryRow(context.Background(), `SELECT count(*) FROM `+table).Scan(&want); err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, id := range shown {
			if seen[id] {
				t.Fatalf("%s shown twice in %v", id, shown)
			}
			seen[id] = true
		}
		if len(seen) != want {
			t.Fatalf("%d of %d shown: %v", len(seen), want, shown)
		}
	}
	setStatus := func(table, status string) func(string) {
		return func(id string) {
			if _, err := s.Pool.Exec(context.Background(), `UPDATE `+table+` SET status = $2 WHERE id = $1`, id, status); err != nil {
				t.Fatal(err)
			}
		}
	}

	t.Run("deployments by status", func(t *testing.T) {
		// Most seeded deployments are deployed; the first page's last turns cancelled, which
		// sorts before it, as a first deploy cancelled would.
		shown := walk(t, "/deployments?sort=status&limit=2", "<table", regexp.MustCompile(`<td><a href="/deployments/([0-9a-f-]{36})">`),
			setStatus("deployed_components", "cancelled"))
		wantEachOnce(t, shown, "deployed_components")
	})

	t.Run("a deployment's history by status", func(t *testing.T) {
		var deployment string
		if err := s.Pool.QueryRow(context.Background(), `SELECT deployment_id::text FROM operations
			GROUP BY deployment_id ORDER BY count(*) DESC LIMIT 1`).Scan(&deployment); err != nil {
			t.Fatal(err)
		}
		// Its operations succeeded; the first page's last is marked failed, which sorts before.
		shown := walk(t, "/deployments/"+deployment+"?sort=status&limit=2", "<h2>History</h2>",
			regexp.MustCompile(`href="/operations/([0-9a-f-]{36})"`), setStatus("operations", "failed"))
		wantEachOnce(t, shown, "operations WHERE deployment_id = '"+deployment+"'")
	})

	t.Run("a cursor of the newest first list", func(t *testing.T) {
		newest := b.Get(t, "/deployments?limit=2")
		m := next.FindStringSubmatch(string(newest.Body))
		if m == nil {
			t.Fatalf("the newest first list has no next page: %s", newest.Body)
		}
		u, err := url.Parse(html.UnescapeString(m[1]))
		if err != nil {
			t.Fatal(err)
		}
		r := b.Get(t, "/deployments?sort=name&before="+url.QueryEscape(u.Query().Get("before")))
		if r.Status != http.StatusUnprocessableEntity || !strings.Contains(string(r.Body), "cursor of a page of this list") {
			t.Fatalf("a sorted list after a newest first cursor: %d %s", r.Status, r.Body)
		}
	})
}
