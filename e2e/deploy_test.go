package e2e

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"nimbus/app/domain/component"
	"nimbus/app/kernel/access"
	"nimbus/app/orchestration/environment"
	"nimbus/app/platform/pulumix"
)

// TestBrowser_DeployWatchUpdateUpgradeDestroy is the life of a deployment as a tenant admin
// lives it in the browser: deployed from the catalog's dialog after a preview, followed live,
// updated after seeing the diff, upgraded to a new version, and destroyed.
func TestBrowser_DeployWatchUpdateUpgradeDestroy(t *testing.T) {
	t.Parallel()
	a := startApp(t)
	ctx := context.Background()
	components := component.NewService(a.pool, pulumix.Local{Dir: a.pulumiDir}, a.jobs)
	if _, err := component.EnsureBuiltins(ctx, components); err != nil {
		t.Fatal(err)
	}
	acme := a.createTenant(t, "acme")
	a.addMember(t, "ops@acme.test", acme.ID, access.TenantAdmin)
	if _, err := environment.NewService(a.pool).Create(ctx, a.principal(t, adminEmail), acme.ID, "dev"); err != nil {
		t.Fatal(err)
	}

	s := newSession(t, newBrowser(t), a)
	s.signIn("ops@acme.test", userPassword)

	// The catalog's Deploy button opens the dialog, its form made from the inputs.
	s.open("/catalog")
	s.click(`[data-deploy="simcloud-machine"]`)
	s.waitFor(`document.getElementById('dialog').open && document.querySelector('[data-testid="deploy-form"]') !== null`)
	s.settled()
	if got := eval[string](s, `document.getElementById('f-p.fail_on').tagName`); got != "SELECT" {
		t.Errorf("an enum input is a %s, want a select", got)
	}
	if got := eval[string](s, `document.getElementById('f-p.cores').getAttribute('max')`); got != "64" {
		t.Errorf("the cores field's max is %q, want the schema's 64", got)
	}
	// A bad value the browser lets through comes back beside its field.
	s.fill("#f-name", "web")
	s.fill(`#f-p\.name`, "Web_1")
	eval[bool](s, `(document.getElementById('f-p.name').removeAttribute('pattern'), true)`)
	s.click(`[data-testid="deploy-form"] button[value="preview"]`)
	s.waitFor(`document.querySelector('[data-field-error="parameters.name"]') !== null`)
	s.settled()
	if msg := s.text(`[data-field-error="parameters.name"]`); !strings.Contains(msg, "pattern") {
		t.Errorf("the name's error says %q, want it to name the pattern", msg)
	}
	s.screenshot("deploy-dialog")

	s.retype(`#f-p\.name`, "web-1")
	s.retype(`#f-p\.delay_ms`, "1500") // slow enough to watch
	s.click(`[data-testid="deploy-form"] button[value="preview"]`)
	// The dialog shows the plan; its page has the details.
	s.waitWithin(`document.querySelector('[data-testid="dialog-plan"]')?.dataset.status === 'succeeded'`, engineWait)
	s.submitButton(`[data-testid="preview-page"]`)
	s.waitOperation("succeeded")
	if got := s.resourceOp("machine"); got != "create" {
		t.Fatalf("the preview plans %q for the machine, want create", got)
	}
	if files := cloudFiles(t, a); len(files) != 0 {
		t.Fatalf("a preview made %v", files)
	}
	s.screenshot("deploy-preview")

	// Deploy from the preview, and watch it without reloading the page.
	s.submitButton(`[data-testid="next-action"]`)
	eval[bool](s, `(window.sameLoad = true)`)
	s.waitLong(`/of 2 resources/.test(document.querySelector('[data-testid="progress"]')?.textContent ?? '')`, 60*time.Second)
	s.waitOperation("succeeded")
	if !eval[bool](s, `window.sameLoad === true`) {
		t.Fatal("the operation page reloaded instead of following the operation live")
	}
	s.screenshot("deploy-done")
	if p := s.text(`[data-testid="progress"]`); !strings.HasPrefix(p, "2 of 2") {
		t.Errorf("progress at the end: %q", p)
	}
	if ip := s.text(`[data-testid="operation-outputs"] [data-key="ip_address"]`); !strings.HasPrefix(ip, "10.0.") {
		t.Errorf("the ip_address output is %q", ip)
	}
	if !strings.Contains(s.text(`[data-testid="log"]`), "simcloud:index:Machine") {
		t.Error("the log does not show the engine's progress")
	}
	if got := strings.Join(cloudFiles(t, a), ","); got != "disk,machine" {
		t.Fatalf("the cloud holds %s, want a disk and a machine", got)
	}

	// Update cores: the preview shows 2 → 4, then Update applies it.
	s.submitButton(`h1 a[href^="/deployments/"]`)
	if got := s.text(`[data-testid="deployment-status"]`); got != "deployed" {
		t.Fatalf("the deployment is %s", got)
	}
	deploymentPath := s.path()
	s.retype(`#f-p\.cores`, "4")
	s.submitButton(`[data-testid="param-form"] button[value="preview"]`)
	s.waitOperation("succeeded")
	s.screenshot("update-preview")
	if change := s.text(`[data-resource="machine"] [data-path="cores"]`); change != "cores: 2 → 4" {
		t.Errorf("the update's diff shows %q, want cores: 2 → 4", change)
	}
	if label := s.text(`[data-testid="next-action"]`); label != "Update" {
		t.Errorf("the preview offers %q, want Update", label)
	}
	s.submitButton(`[data-testid="next-action"]`)
	s.waitOperation("succeeded")
	if cores := machine(t, a)["cores"]; cores != 4.0 {
		t.Fatalf("after the update the machine has %v cores", cores)
	}

	// A second version: its changelog is offered, the preview shows what changes.
	publishV2(t, a, components)
	s.open(deploymentPath)
	s.screenshot("deployment")
	if got := s.text(`[data-testid="upgrade-form"]`); !strings.Contains(got, "v2") || !strings.Contains(got, "bigger boot disk") {
		t.Fatalf("the upgrade form shows %q, want v2 with its changelog", got)
	}
	s.submitButton(`[data-testid="upgrade-form"] button[value="preview"]`)
	s.waitOperation("succeeded")
	if change := s.text(`[data-resource="disk"] [data-path="sizeGb"]`); !strings.Contains(change, "20") {
		t.Errorf("the upgrade's diff for the disk shows %q, want the new size", change)
	}
	s.submitButton(`[data-testid="next-action"]`)
	s.waitOperation("succeeded")
	s.open(deploymentPath)
	if got := s.text(`h1`); !strings.Contains(got, "deployed") {
		t.Fatalf("after the upgrade: %q", got)
	}
	if got := s.rows("operations"); len(got) != 6 || !strings.HasPrefix(got[0][0], "upgrade") {
		t.Fatalf("history after the upgrade: %q", got)
	}

	// Destroy asks for the name first.
	s.fill(`[data-testid="destroy-form"] input[name="confirm"]`, "web")
	s.submitButton(`[data-testid="destroy-form"] button`)
	s.waitOperation("succeeded")
	if files := cloudFiles(t, a); len(files) != 0 {
		t.Fatalf("left in the cloud after destroy: %v", files)
	}
	s.open(deploymentPath)
	if got := s.text(`[data-testid="deployment-status"]`); got != "destroyed" {
		t.Fatalf("after destroy the deployment is %s", got)
	}
}

// waitOperation waits until the operation page shows the status, and fails on any other end.
func (s *session) waitOperation(want string) {
	s.t.Helper()
	s.across(`['succeeded', 'failed', 'cancelled', 'rejected'].includes(document.querySelector('[data-testid="operation-live"]')?.dataset.status)`, engineWait)
	if got := eval[string](s, `document.querySelector('[data-testid="operation-live"]').dataset.status`); got != want {
		s.t.Fatalf("the operation ended %s, want %s: %s", got, want, s.text(`[data-testid="operation-live"]`))
	}
}

// across waits for a condition that holds on the page a navigation leads to: a poll cut short
// by the navigation is started again on the new page.
func (s *session) across(js string, timeout time.Duration) {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := chromedp.Do(s.ctx, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingTimeout(time.Until(deadline))))
		if err == nil {
			return
		}
		if s.ctx.Err() != nil {
			s.t.Fatalf("waiting for %s: the browser is gone: %v", js, s.ctx.Err())
		}
		if time.Now().After(deadline) || !strings.Contains(err.Error(), "navigated") && !strings.Contains(err.Error(), "context") {
			s.t.Fatalf("waiting for %s: %v", js, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// settled waits until htmx has finished swapping and settling new content, so that what it
// brought is wired up before it is clicked.
func (s *session) settled() {
	s.t.Helper()
	s.waitFor(`!document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling, .htmx-added')`)
}

// resourceOp is the change the operation page shows for the named resource.
func (s *session) resourceOp(name string) string {
	s.t.Helper()
	return s.text(`[data-resource="` + name + `"] .badge`)
}

// submitButton clicks a submit button whose form leads to another page, and waits for it.
func (s *session) submitButton(sel string) {
	s.t.Helper()
	from := s.path()
	s.click(sel)
	s.across(`location.pathname !== `+jsString(from)+` && document.readyState === 'complete'`, time.Minute)
}

// follow clicks a link or button that leads to another URL, the path perhaps the same, and
// waits for the page there.
func (s *session) follow(sel string) {
	s.t.Helper()
	from := eval[string](s, `location.href`)
	s.click(sel)
	// A deadline, not a wait: a busy machine can take this long to load a page and its assets.
	s.across(`location.href !== `+jsString(from)+` && document.readyState === 'complete'`, time.Minute)
}

func cloudFiles(t *testing.T, a *app) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(a.cloud, "*", "*.json"))
	for i, f := range files {
		files[i] = filepath.Base(filepath.Dir(f))
	}
	return files
}

func machine(t *testing.T, a *app) map[string]any {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(a.cloud, "machine", "*.json"))
	if len(files) != 1 {
		t.Fatalf("%d machines in the cloud, want 1", len(files))
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// publishV2 publishes a second version of the built-in machine whose boot disk is bigger, as
// a provider admin would: draft, check with the engine, publish.
func publishV2(t *testing.T, a *app, components *component.Service) {
	t.Helper()
	ctx, admin := context.Background(), a.principal(t, adminEmail)
	catalog, err := components.List(ctx, admin, component.Filter{Search: "simcloud-machine"})
	if err != nil || len(catalog.Components) == 0 {
		t.Fatalf("find simcloud-machine: %v", err)
	}
	id := catalog.Components[0].ID
	c, err := components.Get(ctx, admin, id)
	if err != nil {
		t.Fatal(err)
	}
	code := strings.Replace(c.Code, "      image: ${image}\n\n  machine:", "      image: ${image}\n      sizeGb: 20\n\n  machine:", 1)
	if code == c.Code {
		t.Fatal("the built-in machine's program changed: adjust the v2 edit")
	}
	draft, err := components.Update(ctx, admin, id, component.Patch{Code: &code})
	if err != nil {
		t.Fatal(err)
	}
	check, err := components.RequestCheck(ctx, admin, id, uuid.Nil)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for check.Status != "succeeded" && check.Status != "failed" && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		if check, err = components.Check(ctx, admin, check.ID); err != nil {
			t.Fatal(err)
		}
	}
	if check.Status != "succeeded" {
		t.Fatalf("the engine's check of v2: %s\n%s", check.Status, check.Output)
	}
	if _, err := components.Publish(ctx, admin, id, draft.Revision, "bigger boot disk"); err != nil {
		t.Fatal(err)
	}
}

// TestBrowser_CancelARunningDeploy cancels a deploy from its page while the machine is being
// created: the button says so at once, the page follows it to cancelled, says what was undone,
// and the disk made before is gone; the deployment is cancelled, not failed. Before, a deploy
// whose machine fails says so in words, with what finished, failed and was undone.
func TestBrowser_CancelARunningDeploy(t *testing.T) {
	t.Parallel()
	a := startApp(t)
	ctx := context.Background()
	if _, err := component.EnsureBuiltins(ctx, component.NewService(a.pool, nil, nil)); err != nil {
		t.Fatal(err)
	}
	acme := a.createTenant(t, "acme")
	a.addMember(t, "dev@acme.test", acme.ID, access.User)
	if _, err := environment.NewService(a.pool).Create(ctx, a.principal(t, adminEmail), acme.ID, "dev"); err != nil {
		t.Fatal(err)
	}
	s := newSession(t, newBrowser(t), a)
	s.signIn("dev@acme.test", userPassword)

	// The machine fails: its disk, made first, is removed again.
	s.open("/catalog")
	s.click(`[data-deploy="simcloud-machine"]`)
	s.waitFor(`document.getElementById('dialog').open && document.querySelector('[data-testid="deploy-form"]') !== null`)
	s.settled()
	s.fill("#f-name", "doomed")
	s.fill(`#f-p\.name`, "doomed-1")
	s.choose(`#f-p\.fail_on`, "create")
	s.click(`[data-testid="deploy-form"] button[value="deploy"]`)
	s.across(`location.pathname.startsWith('/operations/') && document.readyState === 'complete'`, time.Minute)
	s.waitOperation("failed")
	s.screenshot("deploy-failed")
	if got := s.text(`[data-testid="operation-summary"]`); !strings.HasPrefix(got, "The machine could not be created: ") ||
		!strings.Contains(got, "injected failure") || !strings.HasSuffix(got, "what it had made was removed again.") {
		t.Errorf("the failure reads %q", got)
	}
	if got := s.text(`[data-testid="engine-error"]`); !strings.Contains(got, "step up") {
		t.Errorf("the engine's words below it: %q", got)
	}
	if got := s.text(`[data-testid="progress"]`); got != "1 of 2 resources done · 1 failed · 1 undone" {
		t.Errorf("the failed deploy's progress reads %q", got)
	}
	if got := s.text(`[data-resource="disk"] [data-testid="resource-undo"]`); got != "· deleted by the undo" {
		t.Errorf("the disk's undo reads %q", got)
	}
	if got := s.text(`[data-testid="diagnostic-counts"]`); !strings.Contains(got, "error") {
		t.Errorf("the diagnostics count %q", got)
	}
	if got := s.text(`[data-testid="diagnostics"]`); strings.Contains(got, "**") {
		t.Errorf("the diagnostics show the engine's markers: %q", got)
	}
	if files := cloudFiles(t, a); len(files) != 0 {
		t.Fatalf("left in the cloud after the failed deploy: %v", files)
	}

	s.open("/catalog")
	s.click(`[data-deploy="simcloud-machine"]`)
	s.waitFor(`document.getElementById('dialog').open && document.querySelector('[data-testid="deploy-form"]') !== null`)
	s.settled()
	s.fill("#f-name", "slow")
	s.fill(`#f-p\.name`, "slow-1")
	s.retype(`#f-p\.delay_ms`, "600000")
	s.click(`[data-testid="deploy-form"] button[value="deploy"]`)
	s.across(`location.pathname.startsWith('/operations/') && document.readyState === 'complete'`, time.Minute)
	s.waitLong(`document.querySelector('[data-resource="machine"]')?.textContent.includes('running')`, 60*time.Second)
	if got := strings.Join(cloudFiles(t, a), ","); got != "disk" {
		t.Fatalf("while the machine is being made the cloud holds %q, want its disk", got)
	}

	// The cancel is held on its way to the server, the page on its way out: the page reports
	// its button (it cannot be asked while it navigates), which says what is happening already.
	eval[bool](s, `(window.confirm = () => true, document.addEventListener('submit', () => setTimeout(() => {
		const b = document.querySelector('[data-testid="cancel"]');
		fetch('/healthz?cancel-button=' + encodeURIComponent(b.textContent.trim() + '|' + b.disabled));
	}), true), true)`)
	held := s.hold("*/operations/*/cancel", "*/healthz?cancel-button=*")
	opPath := s.path()
	s.click(`[data-testid="cancel"]`) // the page reloads itself, then follows the undo
	first, second := s.next(held, 10*time.Second), s.next(held, 10*time.Second)
	report := first
	if !strings.Contains(report.url, "cancel-button") {
		report = second
	}
	u, err := url.Parse(report.url)
	if err != nil {
		t.Fatal(err)
	}
	if got := u.Query().Get("cancel-button"); got != "Cancelling…|true" {
		t.Errorf("before the server answers, the cancel button is %q, want Cancelling… and disabled", got)
	}
	first.pass()
	second.pass()
	s.waitOperation("cancelled")
	if files := cloudFiles(t, a); len(files) != 0 {
		t.Fatalf("left in the cloud after the cancel: %v", files)
	}
	if got := s.text(`[data-testid="operation-error"]`); !strings.Contains(got, "cancelled") {
		t.Errorf("the cancelled operation says %q", got)
	}
	if got := s.text(`[data-testid="operation-summary"]`); got != "This deploy was cancelled; what it had made was removed again." {
		t.Errorf("the cancelled operation reads %q", got)
	}
	if got := s.text(`[data-testid="progress"]`); strings.Contains(got, "%") || !strings.Contains(got, "undone") {
		t.Errorf("the cancelled deploy's progress reads %q", got)
	}
	s.open(opPath) // as it renders once it has ended
	if got := s.text(`[data-testid="progress"]`); strings.Contains(got, "%") || !strings.Contains(got, "undone") {
		t.Errorf("the cancelled deploy's final progress reads %q", got)
	}
	s.submitButton(`h1 a[href^="/deployments/"]`)
	if got := s.text(`[data-testid="deployment-status"]`); got != "cancelled" {
		t.Errorf("after the cancel the deployment is %s", got)
	}
	s.open("/deployments")
	if got := s.text(`[data-deployment="slow"] .badge`); got != "cancelled" {
		t.Errorf("the list shows the cancelled deployment as %s", got)
	}
	if got := s.text(`[data-deployment="doomed"] .badge`); got != "failed" {
		t.Errorf("the list shows the failed deployment as %s", got)
	}
}
