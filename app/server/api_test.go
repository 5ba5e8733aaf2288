package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"nimbus/app/access"
	"nimbus/app/event"
	"nimbus/app/objstore"
	"nimbus/app/objstore/s3test"
	"nimbus/app/pulumix"
	"nimbus/app/sandbox"
	"nimbus/app/secrets"
	"nimbus/app/server"
	"nimbus/app/system"
	"nimbus/jobs"
)

// site is a running server over a world, with helpers to call it.
type site struct {
	*world
	handler http.Handler // the server's handler, for requests that must not go over the network
	url     string
	cloud   string      // the simulated cloud's folder
	data    string      // the runner's data directory: stack states, work directories
	logs    *syncBuffer // everything the server and its workers logged
	objects objstore.Store
	bucket  *objstore.S3 // where the state is, on the S3 backend; nil on the file backend
	jobs    *river.Client[pgx.Tx]
}

// syncBuffer is a bytes.Buffer many goroutines may write.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// newSite starts a server keeping stack state on the file backend; configure, if given,
// changes its dependencies first.
func newSite(t testing.TB, configure ...func(*server.Deps)) *site {
	t.Helper()
	return newSiteWith(t, siteConfig{backend: "file"}, configure...)
}

// backends are the state backends the deploy tests run on.
var backends = []string{"file", "s3"}

// onBackends runs f once per state backend.
func onBackends(t *testing.T, f func(t *testing.T, s *site)) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) { f(t, newSiteWith(t, siteConfig{backend: b})) })
	}
}

// siteConfig is how a test's server differs from the usual one.
type siteConfig struct {
	// backend keeps stack state and blobs in "file" (the data directory) or "s3" (a bucket of
	// its own on the package's S3 server).
	backend string
	// operationTimeout bounds each operation; a minute when zero.
	operationTimeout time.Duration
	// approvalTTL is how long an operation waits for approval; the default when zero.
	approvalTTL time.Duration
	// sandbox confines the engine as NIMBUS_SANDBOX does; auto when empty.
	sandbox sandbox.Mode
	// probes turns on the simulated cloud's test-only probe (see e2e/simcloud).
	probes bool
	// checkWorkers and checksPerTenant bound the checks running at once, on the node and per
	// tenant; the defaults when zero.
	checkWorkers, checksPerTenant int
	// jobWorkers and operationsPerTenant bound the operations running at once, on the node and
	// per tenant; the defaults when zero.
	jobWorkers, operationsPerTenant int
	// graphParallel bounds the deployments of one graph running at once; the default when zero.
	graphParallel int
	// pollInterval is how often the clouds of event sources are polled; the default when zero.
	pollInterval time.Duration
	// toolchain is the engine's toolchain directory; NIMBUS_PULUMI_DIR when empty.
	toolchain string
	// deliveries is how events are sent to subscriptions.
	deliveries event.DeliveryConfig
	// expiryCheck is how often environments' expiries are looked at; the default when zero.
	expiryCheck time.Duration
}

// newSiteWith starts a server as cfg says.
func newSiteWith(t testing.TB, cfg siteConfig, configure ...func(*server.Deps)) *site {
	t.Helper()
	if cfg.operationTimeout == 0 {
		cfg.operationTimeout = time.Minute
	}
	w := newWorld(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	// Checks run for real when the toolchain is here; without it they fail saying so.
	keys := testKeys(t)
	cloud, data, logs := t.TempDir(), t.TempDir(), &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var (
		objects objstore.Store
		bucket  *objstore.S3
		opts    []pulumix.Option
		err     error
	)
	switch cfg.backend {
	case "file":
		objects, err = objstore.NewDir(filepath.Join(data, "objects"))
	case "s3":
		if bucket, err = objstore.NewS3(ctx, s3test.Shared(t)); err == nil {
			objects, opts = bucket, []pulumix.Option{pulumix.WithSharedState(bucket)}
		}
	default:
		t.Fatalf("no backend %q", cfg.backend)
	}
	if err != nil {
		t.Fatal(err)
	}
	opts = append(opts, pulumix.CloudDirs(cloud))
	if cfg.sandbox != "" {
		opts = append(opts, pulumix.WithSandbox(cfg.sandbox))
	}
	if cfg.toolchain == "" {
		cfg.toolchain = os.Getenv("NIMBUS_PULUMI_DIR")
	}
	engineEnv := map[string]string{"SIMCLOUD_DIR": cloud}
	if cfg.probes {
		engineEnv["SIMCLOUD_PROBES"] = "1"
	}
	runner, _ := pulumix.NewRunner(cfg.toolchain, data, engineEnv, opts...)
	eng := server.Engine{Runner: runner, Keys: keys, Objects: objects, OperationTimeout: cfg.operationTimeout, ApprovalTTL: cfg.approvalTTL,
		ChecksPerTenant: cfg.checksPerTenant, OperationsPerTenant: cfg.operationsPerTenant, GraphParallel: cfg.graphParallel, Cloud: cloud, PollInterval: cfg.pollInterval, Deliveries: cfg.deliveries,
		ExpiryCheck: cfg.expiryCheck}
	client, err := jobs.NewClient(w.pool, log, jobs.Config{Workers: cfg.jobWorkers, CheckWorkers: cfg.checkWorkers, Register: server.Workers(w.pool, eng, log), Periodic: server.Periodic(eng)})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Stop(context.Background()) })
	deps := server.Deps{Pool: w.pool, Log: log, Jobs: client, SessionTTL: time.Hour, Keys: keys, Runner: runner, Objects: objects,
		Info: system.Info{Version: "test"}, WebhooksPrivate: cfg.deliveries.AllowPrivate, OperationsPerTenant: cfg.operationsPerTenant}
	for _, f := range configure {
		f(&deps)
	}
	h, err := server.New(ctx, deps)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &site{world: w, handler: h, url: srv.URL, cloud: cloud, data: data, logs: logs, objects: objects, bucket: bucket, jobs: client}
}

func (s *site) token(t testing.TB, p access.Principal) string {
	t.Helper()
	tok, err := s.auth.CreateToken(context.Background(), p, "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	return tok.Secret
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("reply is not JSON (%d): %s", r.status, r.body)
	}
	return m
}

func (s *site) call(t testing.TB, method, path, token string, body any) reply {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, _ := json.Marshal(b)
		rd = bytes.NewReader(data)
	}
	req, _ := http.NewRequest(method, s.url+path, rd)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: data}
}

func wantStatus(t testing.TB, r reply, status int) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
}

func TestAPI_TokenAuthentication(t *testing.T) {
	s := newSite(t)
	tok := s.token(t, s.adminA)

	r := s.call(t, "GET", "/api/v1/me", tok, nil)
	wantStatus(t, r, http.StatusOK)
	if r.json(t)["email"] != "admin-a@example.com" {
		t.Fatalf("me = %s", r.body)
	}
	wantStatus(t, s.call(t, "GET", "/api/v1/me", "", nil), http.StatusUnauthorized)
	wantStatus(t, s.call(t, "GET", "/api/v1/me", "nmb_notatoken", nil), http.StatusUnauthorized)

	// A revoked token stops working at once.
	var list struct{ Tokens []struct{ ID string } }
	_ = json.Unmarshal(s.call(t, "GET", "/api/v1/tokens", tok, nil).body, &list)
	if len(list.Tokens) != 1 {
		t.Fatalf("tokens = %+v", list)
	}
	wantStatus(t, s.call(t, "DELETE", "/api/v1/tokens/"+list.Tokens[0].ID, tok, nil), http.StatusNoContent)
	wantStatus(t, s.call(t, "GET", "/api/v1/me", tok, nil), http.StatusUnauthorized)
}

func TestAPI_TenantsAndMembers(t *testing.T) {
	s := newSite(t)
	admin := s.token(t, s.admin)

	r := s.call(t, "POST", "/api/v1/tenants", admin, map[string]any{"name": "Globex"})
	wantStatus(t, r, http.StatusCreated)
	id := r.json(t)["id"].(string)

	r = s.call(t, "POST", "/api/v1/users", admin, map[string]any{"email": "hank@example.com", "password": "a long password"})
	wantStatus(t, r, http.StatusCreated)
	userID := r.json(t)["id"].(string)
	if strings.Contains(string(r.body), "password") {
		t.Fatalf("user reply mentions the password: %s", r.body)
	}

	r = s.call(t, "POST", "/api/v1/tenants/"+id+"/members", admin, map[string]any{"user_id": userID, "role": "tenant_admin"})
	wantStatus(t, r, http.StatusCreated)
	r = s.call(t, "GET", "/api/v1/tenants/"+id+"/members", admin, nil)
	wantStatus(t, r, http.StatusOK)
	if !strings.Contains(string(r.body), `"hank@example.com"`) || !strings.Contains(string(r.body), `"tenant_admin"`) {
		t.Fatalf("members = %s", r.body)
	}
	wantStatus(t, s.call(t, "DELETE", "/api/v1/tenants/"+id+"/members", admin, map[string]any{"user_id": userID}), http.StatusNoContent)
	wantStatus(t, s.call(t, "DELETE", "/api/v1/tenants/"+id+"/members/"+userID, admin, nil), http.StatusNotFound)
}

func TestAPI_BadInputGetsClearAnswers(t *testing.T) {
	s := newSite(t)
	admin := s.token(t, s.admin)
	adminB := s.token(t, s.adminB)

	cases := []struct {
		name, method, path, token string
		body                      any
		status                    int
		mention                   string
	}{
		{"malformed JSON", "POST", "/api/v1/tenants", admin, `{"name":`, 400, "not valid JSON"},
		{"unknown field", "POST", "/api/v1/tenants", admin, `{"nome":"x"}`, 400, `unknown field \"nome\"`},
		{"wrong type", "POST", "/api/v1/tenants", admin, `{"name":42}`, 400, `field \"name\" must be a string`},
		{"empty body", "POST", "/api/v1/tenants", admin, ``, 400, "empty"},
		{"blank name", "POST", "/api/v1/tenants", admin, map[string]any{"name": "  "}, 422, `"field":"name"`},
		{"duplicate name", "POST", "/api/v1/tenants", admin, map[string]any{"name": "tenant a"}, 422, "already exists"},
		{"not an admin", "POST", "/api/v1/tenants", adminB, map[string]any{"name": "Mine"}, 403, "permission"},
		{"short password", "POST", "/api/v1/users", admin, map[string]any{"email": "a@example.com", "password": "short"}, 422, `"rule":"min_length"`},
		{"bad email", "POST", "/api/v1/users", admin, map[string]any{"email": "nope", "password": "a long password"}, 422, `"field":"email"`},
		{"bad role", "POST", "/api/v1/tenants/" + s.a.ID.String() + "/members", admin, map[string]any{"user_id": s.userA.UserID, "role": "owner"}, 422, `"field":"role"`},
		{"unknown user", "POST", "/api/v1/tenants/" + s.a.ID.String() + "/members", admin, map[string]any{"user_id": "00000000-0000-0000-0000-000000000001", "role": "user"}, 422, `"field":"user_id"`},
		{"another tenant's id", "GET", "/api/v1/tenants/" + s.a.ID.String(), adminB, nil, 404, "not found"},
		{"another tenant's members", "POST", "/api/v1/tenants/" + s.a.ID.String() + "/members", adminB, map[string]any{"user_id": s.adminB.UserID, "role": "user"}, 404, "not found"},
		{"malformed id", "GET", "/api/v1/tenants/not-a-uuid", admin, nil, 404, "not found"},
		{"unknown route", "GET", "/api/v1/nothing-here", admin, nil, 404, "not found"},
		{"oversized body", "POST", "/api/v1/tenants", admin, `{"name":"` + strings.Repeat("x", 2<<20) + `"}`, 413, "too large"},
		{"bad audit time", "GET", "/api/v1/audit-events?since=yesterday", admin, nil, 422, `"field":"since"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := auditCount(t, s)
			r := s.call(t, c.method, c.path, c.token, c.body)
			wantStatus(t, r, c.status)
			if !strings.Contains(string(r.body), c.mention) {
				t.Fatalf("reply %s does not mention %q", r.body, c.mention)
			}
			if after := auditCount(t, s); after != before {
				t.Fatalf("a refused request wrote %d audit events", after-before)
			}
		})
	}
}

func auditCount(t *testing.T, s *site) int {
	t.Helper()
	var n int
	if err := s.pool.QueryRow(context.Background(), "SELECT count(*) FROM audit_events").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestAPI_AuditEventsRedactAndFilter(t *testing.T) {
	s := newSite(t)
	admin := s.token(t, s.admin)
	wantStatus(t, s.call(t, "POST", "/api/v1/users", admin, map[string]any{"email": "secretive@example.com", "password": "do not log me please"}), 201)

	r := s.call(t, "GET", "/api/v1/audit-events?action=user.create&limit=2", admin, nil)
	wantStatus(t, r, 200)
	var page struct {
		Events []struct {
			Action string
			Diff   map[string]any
		}
		NextBefore int64 `json:"next_before"`
	}
	if err := json.Unmarshal(r.body, &page); err != nil {
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
	if err := s.pool.QueryRow(context.Background(), "SELECT coalesce(string_agg(diff::text, ' '), '') FROM audit_events").Scan(&dump); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(dump, "secretive@example.com") {
		t.Fatalf("the audit log does not record the user's creation: %q", dump)
	}
	if strings.Contains(dump, "do not log me please") {
		t.Fatal("a password reached the audit log")
	}
}

// browser is a cookie-keeping client that signs in through the login form.
type browser struct {
	*http.Client
	base string
	csrf string
}

var csrfField = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)

func newBrowser(t testing.TB, base string) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{Client: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}, base: base}
}

func (b *browser) get(t testing.TB, path string, headers ...string) reply {
	t.Helper()
	req, _ := http.NewRequest("GET", b.base+path, nil)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := b.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if m := csrfField.FindSubmatch(data); m != nil {
		b.csrf = string(m[1])
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: data}
}

func (b *browser) post(t testing.TB, path string, form url.Values, headers ...string) reply {
	t.Helper()
	req, _ := http.NewRequest("POST", b.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	// Headers given later win, such as another Content-Type.
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := b.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: data}
}

func (b *browser) signIn(t testing.TB, email, password string, headers ...string) reply {
	t.Helper()
	b.get(t, "/login")
	return b.post(t, "/login", url.Values{"_csrf": {b.csrf}, "email": {email}, "password": {password}}, headers...)
}

func TestPages_SignInCSRFAndSignOut(t *testing.T) {
	s := newSite(t)
	b := newBrowser(t, s.url)

	r := b.get(t, "/tenants")
	if r.status != http.StatusSeeOther || !strings.HasPrefix(r.header.Get("Location"), "/login?next=") {
		t.Fatalf("signed-out page: %d %s", r.status, r.header.Get("Location"))
	}
	// A sign-in form posted without the token the form carries is refused.
	b.get(t, "/login")
	wantStatus(t, b.post(t, "/login", url.Values{"email": {"admin-a@example.com"}, "password": {"long enough password"}}), http.StatusForbidden)

	r = b.signIn(t, "admin-a@example.com", "long enough password")
	if r.status != http.StatusSeeOther {
		t.Fatalf("sign in: %d %s", r.status, r.body)
	}
	var session *http.Cookie
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		if c.Name == "nimbus_session" {
			session = c
		}
	}
	switch {
	case session == nil:
		t.Fatalf("signing in set no session cookie: %q", r.header.Values("Set-Cookie"))
	case len(session.Value) < 40:
		t.Fatalf("session cookie too short: %q", session.Value)
	case !session.HttpOnly || session.SameSite != http.SameSiteLaxMode:
		t.Fatalf("session cookie is not HttpOnly and SameSite=Lax: %s", session)
	}
	r = b.get(t, "/tenants")
	wantStatus(t, r, http.StatusOK)
	if !strings.Contains(string(r.body), "Tenant A") || strings.Contains(string(r.body), "Tenant B") {
		t.Fatal("tenant admin of A must see A and not B")
	}

	form := url.Values{"email": {"user-a@example.com"}, "role": {"read_only"}}
	path := "/tenants/" + s.a.ID.String() + "/members"
	wantStatus(t, b.post(t, path, form), http.StatusForbidden) // no token
	form.Set("_csrf", "wrong")
	wantStatus(t, b.post(t, path, form), http.StatusForbidden)
	form.Set("_csrf", b.csrf)
	wantStatus(t, b.post(t, path, form, "Sec-Fetch-Site", "cross-site"), http.StatusForbidden)
	wantStatus(t, b.post(t, path, form), http.StatusSeeOther)

	wantStatus(t, b.post(t, "/logout", url.Values{"_csrf": {b.csrf}}), http.StatusSeeOther)
	if r := b.get(t, "/tenants"); r.status != http.StatusSeeOther {
		t.Fatalf("after sign-out: %d", r.status)
	}
}

func TestPages_ExpiredSessionSendsToSignIn(t *testing.T) {
	s := newSite(t)
	b := newBrowser(t, s.url)
	b.signIn(t, "user-a@example.com", "long enough password")
	if _, err := s.pool.Exec(context.Background(), "UPDATE sessions SET expires_at = now() - interval '1 second'"); err != nil {
		t.Fatal(err)
	}
	if r := b.get(t, "/"); r.status != http.StatusSeeOther || !strings.HasPrefix(r.header.Get("Location"), "/login") {
		t.Fatalf("expired session: %d %s", r.status, r.header.Get("Location"))
	}
}

func TestPages_SignInIsRateLimited(t *testing.T) {
	s := newSite(t)
	b := newBrowser(t, s.url)
	for i := 0; i < 5; i++ {
		// With no trusted proxy, a forwarded address is the client's say-so and is ignored.
		wantStatus(t, b.signIn(t, "user-a@example.com", "wrong password!", "X-Forwarded-For", fmt.Sprintf("203.0.113.%d", i)), http.StatusUnprocessableEntity)
	}
	r := b.signIn(t, "user-a@example.com", "long enough password", "X-Forwarded-For", "203.0.113.99")
	wantStatus(t, r, http.StatusTooManyRequests)
	if r.header.Get("Retry-After") == "" || !strings.Contains(string(r.body), "too many failed sign-ins") {
		t.Fatalf("throttled reply lacks Retry-After or message: %v %s", r.header, r.body)
	}
	// The limit is on the email from this address; the address may still sign in as others.
	if r := b.signIn(t, "admin-a@example.com", "long enough password"); r.status != http.StatusSeeOther {
		t.Fatalf("another email from the same address: %d", r.status)
	}
}

func TestPages_SignInFailuresFromOneClientDoNotBlockAnother(t *testing.T) {
	_, loopback, _ := net.ParseCIDR("127.0.0.0/8")
	s := newSite(t, func(d *server.Deps) { d.TrustedProxies = []*net.IPNet{loopback} })
	attacker, owner := newBrowser(t, s.url), newBrowser(t, s.url)
	for i := 0; i < 5; i++ {
		wantStatus(t, attacker.signIn(t, "user-a@example.com", "wrong password!", "X-Forwarded-For", "203.0.113.7"), http.StatusUnprocessableEntity)
	}
	wantStatus(t, attacker.signIn(t, "user-a@example.com", "long enough password", "X-Forwarded-For", "203.0.113.7"), http.StatusTooManyRequests)
	// Behind the proxy the owner is another client, even though the proxy's address is shared.
	wantStatus(t, owner.signIn(t, "user-a@example.com", "long enough password", "X-Forwarded-For", "198.51.100.4"), http.StatusSeeOther)
}

func TestPages_HtmxRequestWithoutSessionRedirectsTheWindow(t *testing.T) {
	s := newSite(t)
	b := newBrowser(t, s.url)
	b.signIn(t, "user-a@example.com", "long enough password")
	if _, err := s.pool.Exec(context.Background(), "UPDATE sessions SET expires_at = now() - interval '1 second'"); err != nil {
		t.Fatal(err)
	}
	// A poll from the component editor: the sign-in page must not be swapped into its panel.
	r := b.get(t, "/checks/"+s.ofA.ID.String(), "HX-Request", "true", "HX-Current-URL", s.url+"/components/"+s.ofA.ID.String()+"/edit?tab=code")
	wantStatus(t, r, http.StatusUnauthorized)
	if got, want := r.header.Get("HX-Redirect"), "/login?next="+url.QueryEscape("/components/"+s.ofA.ID.String()+"/edit?tab=code"); got != want {
		t.Fatalf("HX-Redirect = %q, want %q", got, want)
	}
	if len(r.body) != 0 {
		t.Fatalf("401 to htmx has a body: %s", r.body)
	}
	r = newBrowser(t, s.url).get(t, "/tenants", "HX-Request", "true")
	wantStatus(t, r, http.StatusUnauthorized)
	if got := r.header.Get("HX-Redirect"); got != "/login?next=%2F" {
		t.Fatalf("HX-Redirect without HX-Current-URL = %q", got)
	}
}

func TestPages_HtmxErrorsAreShortText(t *testing.T) {
	s := newSite(t)
	b := newBrowser(t, s.url)
	b.signIn(t, "admin-b@example.com", "long enough password")
	r := b.get(t, "/admin/system", "HX-Request", "true")
	wantStatus(t, r, http.StatusForbidden)
	if !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") || strings.Contains(string(r.body), "<") || !strings.Contains(string(r.body), "permission") {
		t.Fatalf("htmx error is not its message in plain text: %s %s", r.header.Get("Content-Type"), r.body)
	}
}

func TestStatic_FilesButNoListings(t *testing.T) {
	s := newSite(t)
	wantStatus(t, s.call(t, "GET", "/static/js/app.js", "", nil), http.StatusOK)
	for _, dir := range []string{"/static/", "/static/js/", "/static/js", "/static/vendor/"} {
		r := s.call(t, "GET", dir, "", nil)
		wantStatus(t, r, http.StatusNotFound)
		if strings.Contains(string(r.body), "app.js") {
			t.Fatalf("%s lists its files: %s", dir, r.body)
		}
	}
}

func TestPages_FriendlyErrors(t *testing.T) {
	s := newSite(t)
	b := newBrowser(t, s.url)
	b.signIn(t, "admin-b@example.com", "long enough password")
	for path, status := range map[string]int{
		"/no-such-page":               404,
		"/tenants/" + s.a.ID.String(): 404,
		"/admin/system":               403,
		"/admin/jobs/":                403,
	} {
		r := b.get(t, path)
		wantStatus(t, r, status)
		if !strings.Contains(string(r.body), `class="error-code"`) || strings.Contains(string(r.body), "Tenant A") {
			t.Fatalf("%s: not the friendly error page, or it leaks: %s", path, r.body)
		}
	}
}

func TestOps_HealthReadinessMetrics(t *testing.T) {
	s := newSite(t)
	wantStatus(t, s.call(t, "GET", "/healthz", "", nil), 200)
	r := s.call(t, "GET", "/readyz", "", nil)
	wantStatus(t, r, 200)
	if r.json(t)["ready"] != true {
		t.Fatalf("readyz = %s", r.body)
	}
	s.call(t, "GET", "/api/v1/me", s.token(t, s.admin), nil)
	r = s.call(t, "GET", "/metrics", "", nil)
	for _, want := range []string{`nimbus_http_request_duration_seconds_bucket{code="2xx",method="GET",route="/api/v1/me"`, "nimbus_db_pool_max_connections", "go_goroutines"} {
		if !strings.Contains(string(r.body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	// Readiness fails while a migration is pending.
	if _, err := s.pool.Exec(context.Background(), "DELETE FROM schema_migrations"); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, s.call(t, "GET", "/readyz", "", nil), http.StatusServiceUnavailable)
}

func mustURL(s string) *url.URL {
	u, _ := url.Parse(s)
	return u
}

func TestPages_JobsUIForProviderAdminsOnly(t *testing.T) {
	s := newSite(t)
	admin := newBrowser(t, s.url)
	admin.signIn(t, "root@example.com", "correct horse battery")
	r := admin.get(t, "/admin/jobs/")
	wantStatus(t, r, http.StatusOK)
	if !strings.Contains(string(r.body), "<html") {
		t.Fatalf("jobs UI did not serve its page: %.200s", r.body)
	}
	wantStatus(t, admin.get(t, "/admin/jobs/api/queues"), http.StatusOK)
	// Its own script posts JSON without our form token; that must get through.
	r = admin.post(t, "/admin/jobs/api/jobs/cancel", nil, "Content-Type", "application/json", "Sec-Fetch-Site", "same-origin")
	if r.status == http.StatusForbidden {
		t.Fatalf("jobs UI's own JSON post refused: %s", r.body)
	}

	user := newBrowser(t, s.url)
	user.signIn(t, "admin-a@example.com", "long enough password")
	wantStatus(t, user.get(t, "/admin/jobs/api/queues"), http.StatusForbidden)
}

func TestOps_MetricsCountErrorsUnderTheirStatus(t *testing.T) {
	s := newSite(t)
	tok := s.token(t, s.adminB)
	s.call(t, "GET", "/api/v1/tenants/"+s.a.ID.String(), tok, nil)
	s.call(t, "POST", "/api/v1/tenants", tok, map[string]any{"name": "x"})
	body := string(s.call(t, "GET", "/metrics", "", nil).body)
	for _, want := range []string{
		`nimbus_http_request_duration_seconds_count{code="4xx",method="GET",route="/api/v1/tenants/:id"} 1`,
		`nimbus_http_request_duration_seconds_count{code="4xx",method="POST",route="/api/v1/tenants"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// testKeys is a keyring with a key of its own, in a file under the test's temp dir.
func testKeys(t testing.TB) *secrets.Keyring {
	t.Helper()
	keys, err := secrets.Load(t.TempDir(), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	return keys
}
