package apptest

import (
	"context"
	"testing"

	"nimbus/app/kernel/access"
	"nimbus/app/server"
)

// Site is a running server over a world: the world's people and components, and a server on
// its database, with helpers to call it.
type Site struct {
	*World
	*Server
}

// NewSite starts a server keeping stack state on the file backend; configure, if given,
// changes its dependencies first.
func NewSite(t testing.TB, configure ...func(*server.Deps)) *Site {
	t.Helper()
	return NewSiteWith(t, SiteConfig{Backend: "file"}, configure...)
}

// Backends are the state backends the deploy tests run on.
var Backends = []string{"file", "s3"}

// OnBackends runs f once per state backend, as a subtest named after it.
func OnBackends(t *testing.T, f func(t *testing.T, s *Site)) {
	for _, b := range Backends {
		t.Run(b, func(t *testing.T) { f(t, NewSiteWith(t, SiteConfig{Backend: b})) })
	}
}

// NewSiteWith builds a world and starts a server on its database as cfg says.
func NewSiteWith(t testing.TB, cfg SiteConfig, configure ...func(*server.Deps)) *Site {
	t.Helper()
	w := NewWorld(t)
	return &Site{World: w, Server: Start(t, w.Pool, cfg, configure...)}
}

// Token is the secret of a new API token of p, to call the API as p.
func (s *Site) Token(t testing.TB, p access.Principal) string {
	t.Helper()
	return TokenOf(t, s.Pool, p)
}

// AuditCount is how many audit events the site's database holds.
func AuditCount(t *testing.T, s *Site) int {
	t.Helper()
	var n int
	if err := s.Pool.QueryRow(context.Background(), "SELECT count(*) FROM audit_events").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
