package server_test

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/domain/auth"
	"nimbus/db/seed"
)

// clients is how many requests the seeded benchmarks keep in flight at once.
const clients = 32

// BenchmarkSeeded loads each list page and list endpoint, as a provider admin (who sees every
// tenant) and as a tenant admin (who sees one), against a database seeded at full size, with
// 32 clients at once; it reports the median and the 99th percentile of each.
func BenchmarkSeeded(b *testing.B) {
	s := apptest.NewSite(b)
	ctx := context.Background()
	const password = "seeded password"
	hash, err := auth.HashPassword(password)
	if err != nil {
		b.Fatal(err)
	}
	if err := seed.Run(ctx, s.Pool, seed.Full, hash); err != nil {
		b.Fatal(err)
	}
	var operation string
	if err := s.Pool.QueryRow(ctx, `SELECT o.id FROM operations o JOIN deployed_components d ON d.id = o.deployment_id
		JOIN tenants t ON t.id = d.tenant_id WHERE t.name = 'Tenant 001' ORDER BY o.created_at DESC LIMIT 1`).Scan(&operation); err != nil {
		b.Fatal(err)
	}
	for _, who := range []struct{ role, email string }{{"provider", seed.Provider}, {"tenant", seed.AdminEmail(1)}} {
		br := apptest.NewBrowser(b, s.URL)
		br.SignIn(b, who.email, password)
		cookies := br.Jar.Cookies(mustURL(s.URL))
		token := s.Token(b, s.Principal(b, who.email))
		for _, p := range []struct{ name, path string }{
			{"dashboard", "/"},
			{"catalog", "/catalog"},
			{"deployments", "/deployments"},
			{"operation", "/operations/" + operation},
			{"approvals", "/approvals"},
			{"audit", "/audit"},
		} {
			b.Run(who.role+"/page/"+p.name, func(b *testing.B) {
				loadSeeded(b, func(c *http.Client) (*http.Response, error) {
					req, _ := http.NewRequest("GET", s.URL+p.path, nil)
					for _, ck := range cookies {
						req.AddCookie(ck)
					}
					return c.Do(req)
				})
			})
		}
		for _, p := range []struct{ name, path string }{
			{"components", "/api/v1/components"},
			{"deployments", "/api/v1/deployments"},
			{"operations", "/api/v1/operations"},
			{"approvals", "/api/v1/approvals"},
			{"audit", "/api/v1/audit-events"},
		} {
			b.Run(who.role+"/api/"+p.name, func(b *testing.B) {
				loadSeeded(b, func(c *http.Client) (*http.Response, error) {
					req, _ := http.NewRequest("GET", s.URL+p.path, nil)
					req.Header.Set("Authorization", "Bearer "+token)
					return c.Do(req)
				})
			})
		}
	}
}

// loadSeeded sends b.N requests through do from the clients at once and reports the median and
// the 99th percentile in milliseconds.
func loadSeeded(b *testing.B, do func(*http.Client) (*http.Response, error)) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	var (
		l    apptest.Latencies
		next atomic.Int64
		wg   sync.WaitGroup
	)
	b.ResetTimer()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) && timed(b, client, do, &l) {
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	l.Report(b)
}
