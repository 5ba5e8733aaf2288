package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"nimbus/app/apptest"
	"nimbus/app/domain/tenant"
	"nimbus/app/domain/user"
	"nimbus/app/kernel/access"
	"nimbus/app/server"
	"nimbus/db/dbtest"
)

const (
	// testTimeout bounds a browser's whole life, a net for a hung Chromium only: every wait
	// has a budget of its own, fitted to what it waits for on a busy machine, so a page that
	// never shows what a test waits for fails at that wait.
	testTimeout = 10 * time.Minute
	// engineWait is the budget of a wait for the engine's work: a check or an operation, which
	// on a busy 2-core machine can take many times what it takes on a quiet one.
	engineWait    = 3 * time.Minute
	adminEmail    = "admin@example.com"
	adminPassword = "correct horse battery staple"
	// userPassword is what the tests give every other user.
	userPassword = "another long password"
)

func TestMain(m *testing.M) { dbtest.Main(withBinary{m}) }

// app is a Nimbus server running in the test process on its own database, with the first
// provider admin already created.
type app struct {
	url       string
	pool      *pgxpool.Pool
	cloud     string // the simulated cloud's directory, where deployed resources appear as files
	jobs      *river.Client[pgx.Tx]
	pulumiDir string
}

func startApp(t *testing.T) *app {
	t.Helper()
	pool := dbtest.Pool(t)
	if _, err := user.Bootstrap(context.Background(), pool, adminEmail, adminPassword); err != nil {
		t.Fatalf("bootstrap admin: %v", err)
	}
	pulumiDir := os.Getenv("NIMBUS_PULUMI_DIR") // empty: the runner finds the tool cache
	// The server as production builds it, as every package's tests start it; its log is shown
	// only when the test fails, so a passing run stays quiet.
	srv := apptest.Start(t, pool, apptest.SiteConfig{Backend: "file", Toolchain: pulumiDir, QuietJobs: true, LogOnFailure: true},
		func(d *server.Deps) { d.Info.PulumiDir = pulumiDir })
	if srv.Runner == nil {
		t.Fatal("the Pulumi toolchain is needed for checks: run go tool task toolchain")
	}
	// Stopped first, and checked: a job that does not let go of the client fails the test.
	t.Cleanup(func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Jobs.Stop(stopCtx); err != nil {
			t.Errorf("stop jobs: %v", err)
		}
	})
	return &app{url: srv.URL, pool: pool, cloud: srv.Cloud, jobs: srv.Jobs, pulumiDir: pulumiDir}
}

// lockedBuffer is a bytes.Buffer many goroutines may write: the output of a served binary.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Seeding goes through the same services the handlers use, acting as the provider admin, so
// tests about what others see need not click through the admin's pages first.

func (a *app) principal(t *testing.T, email string) access.Principal {
	t.Helper()
	return apptest.PrincipalOf(t, a.pool, email)
}

func (a *app) createTenant(t *testing.T, name string) tenant.Tenant {
	t.Helper()
	tn, err := tenant.NewService(a.pool).Create(context.Background(), a.principal(t, adminEmail), name)
	if err != nil {
		t.Fatalf("create tenant %s: %v", name, err)
	}
	return tn
}

// addMember creates a user with userPassword and gives them role in tenantID.
func (a *app) addMember(t *testing.T, email string, tenantID uuid.UUID, role access.Role) {
	t.Helper()
	ctx, admin := context.Background(), a.principal(t, adminEmail)
	u, err := user.NewService(a.pool).Create(ctx, admin, user.NewUser{Email: email, Password: userPassword})
	if err != nil {
		t.Fatalf("create user %s: %v", email, err)
	}
	if _, err := tenant.NewService(a.pool).SetMember(ctx, admin, tenantID, u.ID, role); err != nil {
		t.Fatalf("add %s to tenant: %v", email, err)
	}
}

// newBrowser starts a headless Chromium that lives until the test ends or testTimeout passes,
// whichever comes first, and returns its context for newSession.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	chromium := findChromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	// chromedp's defaults already hold some of these; they are repeated so the list says in
	// one place how the tests run Chromium.
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.Headless,
		chromedp.NoSandbox, // containers and CI runners rarely allow Chromium's sandbox
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		// Nothing but the server under test may be contacted: the UI must work offline.
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.UserDataDir(t.TempDir()),
		// A fixed window keeps screenshots comparable between runs and machines.
		chromedp.WindowSize(1280, 800),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc) // waits for Chromium to exit, before t.TempDir is removed
	browser, cancelBrowser := chromedp.NewContext(allocCtx)
	t.Cleanup(cancelBrowser)
	if err := chromedp.Do(browser); err != nil {
		t.Fatalf("start %s: %v", chromium, err)
	}
	return browser
}

// findChromium looks the browser up on PATH under the names scripts/ensure-package.sh
// accepts, in its order, so that a browser the installer takes as present is the one run.
func findChromium(t *testing.T) string {
	t.Helper()
	names := []string{"chromium", "chromium-browser", "google-chrome"}
	for _, name := range names {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	t.Fatalf("the browser tests need Chromium, and none of %s is on PATH; run `go tool task system-packages`", strings.Join(names, ", "))
	return ""
}

// session is one person's tab on the app, in a browser context of its own so that cookies
// and storage never mix with another session's.
type session struct {
	t    *testing.T
	ctx  context.Context
	base string
}

func newSession(t *testing.T, browser context.Context, a *app) *session {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("open tab: %v", err)
	}
	return &session{t: t, ctx: ctx, base: a.url}
}

// open loads path and returns the HTTP status of the page it ends on.
func (s *session) open(path string) int64 {
	s.t.Helper()
	resp, err := chromedp.Run(s.ctx, chromedp.NavigateResponse(s.base+path))
	if err != nil {
		s.t.Fatalf("open %s: %v", path, err)
	}
	return resp.Status
}

// fill types value into the field, as a person would.
func (s *session) fill(sel, value string) {
	s.t.Helper()
	if err := chromedp.Do(s.ctx, chromedp.SendKeys(chromedp.CSS(sel), value)); err != nil {
		s.t.Fatalf("type into %s: %v", sel, err)
	}
}

func (s *session) choose(sel, value string) {
	s.t.Helper()
	if err := chromedp.Do(s.ctx, chromedp.SetValue(chromedp.CSS(sel), value)); err != nil {
		s.t.Fatalf("choose %s in %s: %v", value, sel, err)
	}
}

// submit clicks the form's submit button, waits for the page the server answers with (after
// any redirect) and returns its HTTP status.
func (s *session) submit(form string) int64 {
	s.t.Helper()
	resp, err := chromedp.RunResponse(s.ctx, chromedp.Click(chromedp.CSS(form+` [type="submit"]`)))
	if err != nil {
		s.t.Fatalf("submit %s: %v", form, err)
	}
	return resp.Status
}

func (s *session) click(sel string) {
	s.t.Helper()
	// A page's live stream may swap the element between the click finding it and pressing it;
	// the browser then refuses before any mouse event is sent, so finding it again is safe.
	var err error
	for range 5 {
		err = chromedp.Do(s.ctx, chromedp.Click(chromedp.CSS(sel)))
		if err == nil || !stale(err) {
			break
		}
	}
	if err != nil {
		s.t.Fatalf("click %s: %v", sel, err)
	}
}

// stale tells of an element the page replaced while the browser was being told about it.
func stale(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "Could not find node with given id") ||
		strings.Contains(msg, "No node with given id found") ||
		strings.Contains(msg, "Node is detached from document")
}

// eval runs a JavaScript expression in the page and decodes its value into T.
func eval[T any](s *session, js string) T {
	s.t.Helper()
	v, err := chromedp.Run(s.ctx, chromedp.Evaluate[T](js))
	if err != nil {
		s.t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// text is the trimmed text of the first element matching sel. Pages are fully loaded when
// open and submit return, so a missing element fails at once instead of being waited for.
func (s *session) text(sel string) string {
	s.t.Helper()
	got := eval[*string](s, fmt.Sprintf(`document.querySelector(%q)?.textContent.trim() ?? null`, sel))
	if got == nil {
		s.t.Fatalf("no %s on %s", sel, s.path())
	}
	return *got
}

// rows is the trimmed text of each cell of each body row of the table with data-testid id.
func (s *session) rows(id string) [][]string {
	s.t.Helper()
	return eval[[][]string](s, fmt.Sprintf(
		`[...document.querySelectorAll('[data-testid=%q] tbody tr')].map(r => [...r.cells].map(c => c.textContent.trim()))`, id))
}

// fieldError is the error shown beside the field named name, or "" when there is none.
func (s *session) fieldError(name string) string {
	s.t.Helper()
	return eval[string](s, fmt.Sprintf(
		`document.getElementById(%q)?.closest('.field')?.querySelector('.field-error')?.textContent.trim() ?? ''`, "f-"+name))
}

// waitFor polls the JavaScript condition until it holds, for effects that scripts on the page
// apply after an event rather than before the action returns.
func (s *session) waitFor(js string) {
	s.t.Helper()
	s.waitWithin(js, 5*time.Second)
}

// waitWithin waits up to timeout for js to hold on the page.
func (s *session) waitWithin(js string, timeout time.Duration) {
	s.t.Helper()
	if err := chromedp.Do(s.ctx, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingTimeout(timeout))); err != nil {
		s.t.Fatalf("waiting for %s: %v", js, err)
	}
}

func (s *session) path() string {
	s.t.Helper()
	return eval[string](s, `location.pathname`)
}

// signIn signs in through the login form and checks that it lands on the dashboard.
func (s *session) signIn(email, password string) {
	s.t.Helper()
	s.open("/login")
	s.fill("#f-email", email)
	s.fill("#f-password", password)
	if status := s.submit(`form[action="/login"]`); status != 200 {
		s.t.Fatalf("sign in as %s: status %d, want 200", email, status)
	}
	if path, who := s.path(), s.text(`[data-testid="whoami"]`); path != "/" || who != email {
		s.t.Fatalf("after signing in as %s: on %s as %q, want the dashboard as %s", email, path, who, email)
	}
}

// dialogs records every JavaScript dialog the page opens, and dismisses it so the page does
// not stay blocked; the returned func lists the messages seen so far.
func (s *session) dialogs() func() []string {
	var (
		mu   sync.Mutex
		seen []string
	)
	events := chromedp.Events(s.ctx, page.JavascriptDialogOpening)
	go func() {
		for ev, err := range events {
			if err != nil {
				return
			}
			mu.Lock()
			seen = append(seen, string(ev.Type)+": "+ev.Message)
			mu.Unlock()
			// The page stays blocked until this returns, so anything the test checks after
			// the dialog runs after it was recorded.
			_, _ = chromedp.Call(s.ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		}
	}()
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

// screenshotDir is where the browser tests leave a picture of the pages they pass through,
// for whoever wants to see Nimbus before reading its code (the README points here).
const screenshotDir = "testdata/screenshots"

// screenshot writes a full-page PNG of the current page into screenshotDir, once its
// animations have settled (buttons fade between theme colours).
func (s *session) screenshot(name string) {
	s.t.Helper()
	s.waitFor(`document.getAnimations().every(a => a.playState !== 'running')`)
	png, err := chromedp.Run(s.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		s.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.MkdirAll(screenshotDir, 0o755); err != nil {
		s.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(screenshotDir, name+".png"), png, 0o644); err != nil {
		s.t.Fatal(err)
	}
}

// apiGet calls the JSON API with a bearer token, as a script would, and decodes the answer.
func apiGet(t *testing.T, url, token string, into any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	r := apptest.Do(t, &http.Client{Timeout: 10 * time.Second}, req)
	if r.Status != http.StatusOK {
		t.Fatalf("GET %s: status %d: %s", url, r.Status, r.Body)
	}
	if err := json.Unmarshal(r.Body, into); err != nil {
		t.Fatalf("GET %s: %v in %s", url, err, r.Body)
	}
}

// rowWith returns the first row whose first cell is first, or nil.
func rowWith(rows [][]string, first string) []string {
	for _, r := range rows {
		if len(r) > 0 && r[0] == first {
			return r
		}
	}
	return nil
}

// column returns cell i of every row.
func column(rows [][]string, i int) []string {
	out := make([]string, 0, len(rows))
	for _, r := range rows {
		if i < len(r) {
			out = append(out, r[i])
		}
	}
	return out
}

// token creates an API token of the user with that email and returns its secret, for what a
// test sets up through the API as a script would.
func (a *app) token(t *testing.T, email string) string {
	t.Helper()
	return apptest.TokenOf(t, a.pool, a.principal(t, email))
}

// reloadPace is the least time from one load of a page reloadUntil watches to the next.
const reloadPace = 2 * time.Second

// reloadUntil waits until js holds on path, for pages that do not follow a change made
// elsewhere, and fails once the budget is spent. It opens path and lets the page finish loading,
// however long a busy machine takes; it watches js there until reloadPace has passed since the
// load began, and only then opens path again. The server sees one load every reloadPace or
// slower, never a storm of loads each cut short by the next before its page could show anything.
func (s *session) reloadUntil(path, js string, budget time.Duration) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, budget)
	defer cancel()
	var err error
	for {
		began := time.Now()
		if _, err = chromedp.Run(ctx, chromedp.NavigateResponse(s.base+path)); err == nil {
			// Evaluated at least once, however late the load ended.
			watch := max(time.Until(began.Add(reloadPace)), time.Millisecond)
			if err = chromedp.Do(ctx, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingTimeout(watch))); err == nil {
				return
			}
		}
		// A load that failed at once waits out the pace as well.
		select {
		case <-ctx.Done():
			s.t.Fatalf("%s never showed %s within %s: %v", path, js, budget, err)
		case <-time.After(time.Until(began.Add(reloadPace))):
		}
	}
}
