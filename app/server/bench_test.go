package server_test

import (
	"io"
	"net/http"
	"testing"
	"time"

	"nimbus/app/apptest"
)

// load sends b.N requests from 4 goroutines per core over loopback, each through do.
func load(b *testing.B, do func(*http.Client) (*http.Response, error)) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	var l apptest.Latencies
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() && timed(b, client, do, &l) {
		}
	})
	b.StopTimer()
	l.Report(b)
}

// timed sends one request through do, reads its answer whole and adds its latency to l; it
// reports false, having failed b, when the request failed or was refused.
func timed(b *testing.B, client *http.Client, do func(*http.Client) (*http.Response, error), l *apptest.Latencies) bool {
	start := time.Now()
	resp, err := do(client)
	if err != nil {
		b.Error(err)
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Errorf("status %d", resp.StatusCode)
		return false
	}
	l.Add(time.Since(start))
	return true
}

func BenchmarkHealthz(b *testing.B) {
	s := apptest.NewSite(b)
	load(b, func(c *http.Client) (*http.Response, error) { return c.Get(s.URL + "/healthz") })
}

// BenchmarkSignedInPage loads the tenants page as a signed-in tenant admin: session lookup,
// roles, a tenant query and the templ render.
func BenchmarkSignedInPage(b *testing.B) {
	s := apptest.NewSite(b)
	br := apptest.NewBrowser(b, s.URL)
	br.SignIn(b, "admin-a@example.com", "long enough password")
	cookies := br.Jar.Cookies(mustURL(s.URL))
	load(b, func(c *http.Client) (*http.Response, error) {
		req, _ := http.NewRequest("GET", s.URL+"/tenants", nil)
		for _, ck := range cookies {
			req.AddCookie(ck)
		}
		return c.Do(req)
	})
}

// BenchmarkAPITenants lists tenants with a bearer token: token lookup, roles, one query, JSON.
func BenchmarkAPITenants(b *testing.B) {
	s := apptest.NewSite(b)
	token := s.Token(b, s.Admin)
	load(b, func(c *http.Client) (*http.Response, error) {
		req, _ := http.NewRequest("GET", s.URL+"/api/v1/tenants", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		return c.Do(req)
	})
}
