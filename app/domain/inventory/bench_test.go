package inventory_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"nimbus/app/apptest"
	"nimbus/app/domain/auth"
	"nimbus/db/seed"
)

// benchClients is how many searches the benchmark keeps in flight at once.
const benchClients = 8

// BenchmarkInventorySearch searches the inventory by address and by name through the API, and
// loads the inventory page (the first page, and a search by address), as a provider admin
// (every tenant) and a tenant admin (one), with 8 clients at once, against the full seed (a
// million items); it reports the median and the 99th percentile of each.
func BenchmarkInventorySearch(b *testing.B) {
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
	items := int64(seed.Full.Items)
	// Item i of tenant 1 is i = 1 + 100k; its address is 10.x.y.z spelt from i, its name srv-i.
	item := func(n int64) int64 { return 1 + 100*(n%(items/100)) }
	address := func(n int64) string {
		i := item(n)
		return fmt.Sprintf("10.%d.%d.%d", i/65536%256, i/256%256, i%256)
	}
	name := func(n int64) string { return fmt.Sprintf("srv-%d", item(n)) }
	for _, who := range []struct{ role, email string }{{"provider", seed.Provider}, {"tenant", seed.AdminEmail(1)}} {
		token := s.Token(b, s.Principal(b, who.email))
		br := apptest.NewBrowser(b, s.URL)
		br.SignIn(b, who.email, password)
		base, _ := url.Parse(s.URL)
		cookies := br.Jar.Cookies(base)
		for _, q := range []struct {
			name string
			path func(n int64) string
			page bool
		}{
			{"api/address", func(n int64) string { return "/api/v1/inventory?q=" + address(n) }, false},
			{"api/name", func(n int64) string { return "/api/v1/inventory?q=" + name(n) }, false},
			{"page", func(int64) string { return "/inventory" }, true},
			{"page/address", func(n int64) string { return "/inventory?q=" + address(n) }, true},
		} {
			b.Run(who.role+"/"+q.name, func(b *testing.B) {
				search(b, func(c *http.Client, n int64) (*http.Response, error) {
					req, _ := http.NewRequest("GET", s.URL+q.path(n), nil)
					if q.page {
						for _, ck := range cookies {
							req.AddCookie(ck)
						}
					} else {
						req.Header.Set("Authorization", "Bearer "+token)
					}
					return c.Do(req)
				})
			})
		}
	}
}

// search sends b.N requests through do from benchClients at once and reports their times.
func search(b *testing.B, do func(*http.Client, int64) (*http.Response, error)) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: benchClients}}
	var (
		l    apptest.Latencies
		next atomic.Int64
		wg   sync.WaitGroup
	)
	b.ResetTimer()
	for range benchClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := next.Add(1); n <= int64(b.N); n = next.Add(1) {
				start := time.Now()
				res, err := do(client, n)
				if err != nil {
					b.Error(err)
					return
				}
				res.Body.Close()
				if res.StatusCode != http.StatusOK {
					b.Errorf("search answered %d", res.StatusCode)
					return
				}
				l.Add(time.Since(start))
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	l.Report(b)
}
