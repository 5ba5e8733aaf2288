package e2e

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"nimbus/app/domain/component"
	"nimbus/app/domain/governance"
	"nimbus/app/domain/resolver"
	"nimbus/app/kernel/access"
	"nimbus/app/orchestration/environment"
)

// TestBrowser_DeployDialogSaysWhatEachFieldIs is a tenant's user deploying the built-in
// machine, whose input called name the naming resolver fills and whose cores and image the
// provider limits: the dialog tells the deployment's name from the input's, shows the
// resolver's field read-only, offers only real choices with the limits beside them, reports
// every problem of a submission at once, and previews inside the dialog.
func TestBrowser_DeployDialogSaysWhatEachFieldIs(t *testing.T) {
	t.Parallel()
	a := startApp(t)
	ctx := context.Background()
	if _, err := component.EnsureBuiltins(ctx, component.NewService(a.pool, nil, nil)); err != nil {
		t.Fatal(err)
	}
	admin := a.principal(t, adminEmail)
	acme := a.createTenant(t, "acme")
	a.addMember(t, "dev@acme.test", acme.ID, access.User)
	envs := environment.NewService(a.pool)
	dev, err := envs.Create(ctx, admin, acme.ID, "dev")
	if err != nil {
		t.Fatal(err)
	}
	plain, err := envs.Create(ctx, admin, acme.ID, "plain") // configures no resolver
	if err != nil {
		t.Fatal(err)
	}
	if _, err := resolver.NewService(a.pool).SetConfig(ctx, admin, dev.ID, "naming", json.RawMessage(`{"pattern": "{tenant}-{env}-{seq:02d}"}`)); err != nil {
		t.Fatal(err)
	}
	var machine uuid.UUID
	if err := a.pool.QueryRow(ctx, `SELECT id FROM components WHERE name = 'simcloud-machine'`).Scan(&machine); err != nil {
		t.Fatal(err)
	}
	four, one, yes := 4.0, 1, true
	if _, err := governance.NewService(a.pool).Set(ctx, admin, acme.ID, machine, governance.Change{IsAllowed: &yes, MaxInstances: &one,
		ParameterConstraints: map[string]governance.Constraint{"cores": {Maximum: &four}, "image": {Allowed: []any{"debian-12", "alpine-3.20"}}}}); err != nil {
		t.Fatal(err)
	}

	s := newSession(t, newBrowser(t), a)
	s.signIn("dev@acme.test", userPassword)
	openDialog := func() {
		t.Helper()
		s.open("/catalog")
		s.click(`[data-deploy="simcloud-machine"]`)
		s.waitFor(`document.getElementById('dialog').open && document.querySelector('[data-testid="deploy-form"]') !== null`)
		s.settled()
	}
	openDialog()
	s.choose(`#f-environment_id`, dev.ID.String())
	eval[bool](s, `(document.getElementById('f-environment_id').dispatchEvent(new Event('change', {bubbles: true})), true)`)

	// The deployment's name and the input called name are told apart.
	if got := s.text(`label[for="f-name"]`); got != "Deployment name" {
		t.Errorf("the deployment's name is labelled %q", got)
	}
	if got := s.text(`[data-testid="inputs"] label[for="f-p.name"]`); !strings.HasPrefix(got, "Name") || s.text(`label[for="f-p.name"] [data-key]`) != "name" {
		t.Errorf("the input called name is labelled %q, want its title with its key", got)
	}
	if got := s.text(`[data-testid="inputs"] legend`); got != "Inputs of simcloud-machine" {
		t.Errorf("the inputs are headed %q", got)
	}

	// The naming resolver fills the name in dev: read-only, saying who fills it, not required.
	resolvedName := `(() => { const f = document.getElementById('f-p.name'), field = f.closest('.field');
		return f.disabled && f.placeholder === 'filled by the naming resolver' && field.querySelector('.resolved-note').checkVisibility()
			&& [...field.querySelectorAll('.required-mark')].every(m => !m.checkVisibility()) })()`
	if !eval[bool](s, resolvedName) {
		t.Errorf("in dev the name is not shown as filled by the naming resolver: %s", eval[string](s, `document.getElementById('f-p.name').closest('.field').outerHTML`))
	}
	if note := s.text(`[data-resolver="naming"] .resolved-note`); !strings.HasPrefix(note, "Filled by the naming resolver of this environment") {
		t.Errorf("the name's note: %q", note)
	}
	if eval[bool](s, `(() => { const f = document.getElementById('f-p.ip_address');
		return f.disabled || f.closest('.field').querySelector('.resolved-note').checkVisibility() })()`) {
		t.Error("the address is shown as filled by a resolver, but dev configures no IPAM")
	}
	// Where no resolver fills it, the name is asked for, and required.
	s.choose(`#f-environment_id`, plain.ID.String())
	eval[bool](s, `(document.getElementById('f-environment_id').dispatchEvent(new Event('change', {bubbles: true})), true)`)
	if !eval[bool](s, `(() => { const f = document.getElementById('f-p.name'), field = f.closest('.field');
		return !f.disabled && f.placeholder === '' && !field.querySelector('.resolved-note').checkVisibility()
			&& field.querySelector('.required-mark').checkVisibility() })()`) {
		t.Error("in an environment without naming the name is not asked for")
	}
	s.choose(`#f-environment_id`, dev.ID.String())
	eval[bool](s, `(document.getElementById('f-environment_id').dispatchEvent(new Event('change', {bubbles: true})), true)`)

	// Selects with a default offer no blank choice; the provider's allowed images are the choices.
	options := func(id string) []string {
		return eval[[]string](s, `[...document.getElementById('`+id+`').options].map(o => o.textContent.trim())`)
	}
	if got := options("f-p.image"); !slices.Equal(got, []string{"debian-12", "alpine-3.20"}) {
		t.Errorf("the image offers %q, want the two images the provider allows", got)
	}
	if got := eval[string](s, `document.getElementById('f-p.image').value`); got != "debian-12" {
		t.Errorf("the image chosen is %q, want the default", got)
	}
	if got := options("f-p.fail_on"); !slices.Equal(got, []string{"none", "create", "update", "delete"}) {
		t.Errorf("fail on offers %q", got)
	}
	// The limits stand beside the fields they bind.
	if got := s.text(`[data-limits="cores"]`); got != "At most 4, set by the provider." {
		t.Errorf("beside the cores: %q", got)
	}
	if got := eval[string](s, `document.getElementById('f-p.cores').max`); got != "4" {
		t.Errorf("the cores' max is %q", got)
	}
	if got := s.text(`[data-limits="image"]`); got != "The choices are set by the provider." {
		t.Errorf("beside the image: %q", got)
	}
	s.screenshot("deploy-dialog-fields")

	// Every problem comes back at once: no name, memory below the schema's minimum, cores
	// above the provider's maximum.
	s.retype(`#f-p\.memory_mb`, "100")
	s.retype(`#f-p\.cores`, "8")
	s.click(`[data-testid="deploy-form"] button[value="preview"]`)
	s.waitFor(`document.querySelector('[data-field-error="parameters.cores"]') !== null`)
	s.settled()
	if got := s.fieldError("name"); !strings.Contains(got, "give the deployment a name") {
		t.Errorf("the deployment's name: %q", got)
	}
	if got := s.text(`[data-field-error="parameters.memory_mb"]`); !strings.Contains(got, "below the minimum") {
		t.Errorf("the memory: %q", got)
	}
	if got := s.text(`[data-field-error="parameters.cores"]`); !strings.Contains(got, "above the maximum of 4 set by the provider") {
		t.Errorf("the cores: %q", got)
	}
	if !eval[bool](s, resolvedName) {
		t.Error("after the errors the name is no longer shown as filled by the resolver")
	}
	wordsOnly(t, s)
	s.screenshot("deploy-dialog-all-errors")

	// The preview's plan shows in the dialog.
	s.fill(`#f-name`, "web")
	s.retype(`#f-p\.memory_mb`, "1024")
	s.retype(`#f-p\.cores`, "4")
	s.click(`[data-testid="deploy-form"] button[value="preview"]`)
	s.waitWithin(`['succeeded', 'failed', 'cancelled'].includes(document.querySelector('[data-testid="dialog-plan"]')?.dataset.status)`, engineWait)
	if got := eval[string](s, `document.querySelector('[data-testid="dialog-plan"]').dataset.status`); got != "succeeded" {
		t.Fatalf("the preview %s: %s", got, s.text(`[data-testid="dialog-plan"]`))
	}
	if s.path() != "/catalog" || !eval[bool](s, `document.getElementById('dialog').open`) {
		t.Fatalf("the preview left the dialog for %s", s.path())
	}
	if got := s.text(`[data-testid="plan"] [data-resource="machine"] .badge`); got != "create" {
		t.Errorf("the plan does %q to the machine, want create", got)
	}
	if got := s.text(`[data-testid="plan-summary"]`); got != "Deploying would create 2 resources." {
		t.Errorf("the plan's summary: %q", got)
	}
	if files := cloudFiles(t, a); len(files) != 0 {
		t.Fatalf("a preview made %v", files)
	}
	preview := eval[string](s, `document.querySelector('[data-testid="preview-page"]').getAttribute('href')`)
	if got := eval[string](s, `document.querySelector('[data-testid="plan-deploy"]').form.getAttribute('action')`); got != preview+"/apply" {
		t.Errorf("Deploy posts to %q, want %s/apply", got, preview)
	}
	s.screenshot("deploy-dialog-plan")

	// The recorded preview takes the one instance allowed: a second deploy is refused for
	// that too, beside its other problems.
	s.click(`[data-close-dialog]`)
	openDialog()
	if got := s.text(`[data-testid="governance"]`); !strings.Contains(got, "0 more may be deployed") || !strings.Contains(got, "CPU cores: at most 4 (set by the provider)") {
		t.Errorf("the dialog's rules: %q", got)
	}
	s.fill(`#f-name`, "db")
	s.retype(`#f-p\.cores`, "6")
	s.click(`[data-testid="deploy-form"] button[value="deploy"]`)
	s.waitFor(`document.querySelector('[data-testid="form-error"]') !== null`)
	s.settled()
	if got := s.text(`[data-testid="form-error"]`); !strings.Contains(got, "at most 1 are allowed") {
		t.Errorf("the instance limit: %q", got)
	}
	if got := s.text(`[data-field-error="parameters.cores"]`); !strings.Contains(got, "above the maximum of 4") {
		t.Errorf("the cores beside the instance limit: %q", got)
	}
	wordsOnly(t, s)
}

// wordsOnly fails when the dialog's text names fields as the code does, or runs two
// sentences together.
func wordsOnly(t *testing.T, s *session) {
	t.Helper()
	text := eval[string](s, `document.getElementById('dialog-body').innerText`)
	for _, internal := range []string{"parameter_constraints", "input_schema", "parameters.", "max_instances", "image_catalog"} {
		if strings.Contains(text, internal) {
			t.Errorf("the dialog says %q: %s", internal, text)
		}
	}
	if eval[bool](s, `/[a-z][.;:][A-Z]/.test(document.getElementById('dialog-body').innerText)`) {
		t.Errorf("sentences run together in the dialog: %s", text)
	}
}
