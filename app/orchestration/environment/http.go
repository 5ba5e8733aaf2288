package environment

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/web"
	"nimbus/views"
)

// Handlers serves the environment pages and API.
type Handlers struct {
	svc       *Service
	lifecycle *Lifecycle
}

// NewHandlers returns the handlers for svc; lifecycle opens environments from templates and
// decommissions them.
func NewHandlers(svc *Service, lifecycle *Lifecycle) *Handlers {
	return &Handlers{svc: svc, lifecycle: lifecycle}
}

// ListAPI answers GET /api/v1/environments.
func (h *Handlers) ListAPI(c echo.Context) error {
	envs, err := h.svc.List(web.Ctx(c), web.Actor(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"environments": envs})
}

// GetAPI answers GET /api/v1/environments/{id}.
func (h *Handlers) GetAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	env, err := h.svc.Get(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, env)
}

// PoliciesAPI answers GET /api/v1/environments/{id}/policies: the enabled policies of its
// landing zone, by name.
func (h *Handlers) PoliciesAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	rows, err := h.svc.Policies(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"policies": rows})
}

// CreateAPI answers POST /api/v1/environments: with a template_id it opens the environment and
// starts provisioning it (202, the environment planned or provisioning); without, it makes a
// bare active environment (201).
func (h *Handlers) CreateAPI(c echo.Context) error {
	var in New
	if err := web.DecodeJSON(c, &in); err != nil {
		return err
	}
	ctx, actor := web.Ctx(c), web.Actor(c)
	if in.TemplateID == uuid.Nil {
		if in.ExpiresAt != nil || in.TTL != "" {
			return problem.Invalid("template_id", "expiry", "only an environment opened from a landing zone's template expires: choose a template")
		}
		env, err := h.svc.Create(ctx, actor, in.TenantID, in.Name)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusCreated, env)
	}
	id, err := h.lifecycle.Open(ctx, actor, in)
	if err != nil {
		return err
	}
	env, err := h.svc.Get(ctx, actor, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, env)
}

// DecommissionAPI answers POST /api/v1/environments/{id}/decommission with 202: the
// environment's deployments are destroyed, the template's last.
func (h *Handlers) DecommissionAPI(c echo.Context) error {
	return h.lifecycleAPI(c, h.lifecycle.Decommission)
}

// ExtendAPI answers POST /api/v1/environments/{id}/extend with the environment and its new
// expiry.
func (h *Handlers) ExtendAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	var in Extension
	if err := web.DecodeJSON(c, &in); err != nil {
		return err
	}
	env, err := h.svc.Extend(web.Ctx(c), web.Actor(c), id, in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, env)
}

// ExtendForm extends an environment from its page, by the lifetime typed.
func (h *Handlers) ExtendForm(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	_, err = h.svc.Extend(web.Ctx(c), web.Actor(c), id, Extension{By: c.FormValue("by")})
	if web.FormErrors(err) != nil {
		return h.renderShow(c, http.StatusUnprocessableEntity, err)
	}
	if err != nil {
		return err
	}
	web.SetFlash(c, web.FlashSuccess, "Extended.")
	return web.Redirect(c, "/environments/"+id.String())
}

// RetryAPI answers POST /api/v1/environments/{id}/retry with 202: a failed provisioning or
// decommissioning goes on from where it stopped.
func (h *Handlers) RetryAPI(c echo.Context) error { return h.lifecycleAPI(c, h.lifecycle.Retry) }

// step is a lifecycle change to one environment.
type step func(ctx context.Context, actor access.Principal, id uuid.UUID) error

func (h *Handlers) lifecycleAPI(c echo.Context, do step) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	ctx, actor := web.Ctx(c), web.Actor(c)
	if err := do(ctx, actor, id); err != nil {
		return err
	}
	env, err := h.svc.Get(ctx, actor, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, env)
}

func (h *Handlers) lifecycleForm(c echo.Context, do step, done string) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	err = do(web.Ctx(c), web.Actor(c), id)
	if web.FormErrors(err) != nil {
		return h.renderShow(c, http.StatusUnprocessableEntity, err)
	}
	if err != nil {
		return err
	}
	web.SetFlash(c, web.FlashSuccess, done)
	return web.Redirect(c, "/environments/"+id.String())
}

// ListPage shows the environments with a form to add one.
func (h *Handlers) ListPage(c echo.Context) error {
	return h.render(c, http.StatusOK, EnvironmentForm{}, nil)
}

func (h *Handlers) render(c echo.Context, status int, form EnvironmentForm, err error) error {
	ctx, actor := web.Ctx(c), web.Actor(c)
	envs, listErr := h.svc.List(ctx, actor)
	if listErr != nil {
		return listErr
	}
	rows := make([]EnvironmentRow, len(envs))
	for i, e := range envs {
		rows[i] = EnvironmentRow{ID: e.ID.String(), TenantID: e.TenantID.String(), Tenant: e.TenantName, Name: e.Name, Status: string(e.Status),
			LandingZoneID: zoneID(actor, e.LandingZoneID), LandingZone: e.LandingZone, Template: e.Template, Created: e.CreatedAt}
	}
	sort := views.SortOf(c.Request().URL.Path, c.QueryParams(), "tenant", "tenant", "name", "zone", "status", "created")
	views.SortRows(rows, sort, map[string]func(a, b EnvironmentRow) int{
		"tenant":  func(a, b EnvironmentRow) int { return views.Fold(a.Tenant, b.Tenant) },
		"name":    func(a, b EnvironmentRow) int { return views.Fold(a.Name, b.Name) },
		"zone":    func(a, b EnvironmentRow) int { return views.Fold(a.LandingZone, b.LandingZone) },
		"status":  func(a, b EnvironmentRow) int { return strings.Compare(a.Status, b.Status) },
		"created": func(a, b EnvironmentRow) int { return a.Created.Compare(b.Created) },
	})
	for _, t := range h.svc.manageable(ctx, actor) {
		form.Tenants = append(form.Tenants, views.Option{Value: t.ID.String(), Label: t.Name})
	}
	templates, terr := h.lifecycle.Templates(ctx)
	if terr != nil {
		return terr
	}
	form.Templates = []views.Option{{Value: "", Label: "none: a bare environment outside any landing zone"}}
	for _, t := range templates {
		form.Templates = append(form.Templates, views.Option{Value: t.ID.String(), Label: t.LandingZone + " / " + t.Name})
	}
	form.Errors = web.FormErrors(err)
	return web.Render(c, status, Environments(web.Page(c, "Environments"), rows, sort, form))
}

// CreateForm adds an environment from the page: from a template, it goes to the new
// environment's page to watch it provision.
func (h *Handlers) CreateForm(c echo.Context) error {
	form := EnvironmentForm{Tenant: c.FormValue("tenant_id"), Name: c.FormValue("name"), Template: c.FormValue("template_id")}
	in := New{Name: form.Name}
	var err error
	if in.TenantID, err = uuid.Parse(form.Tenant); err != nil {
		return h.render(c, http.StatusUnprocessableEntity, form, problem.Invalid("tenant_id", "required", "choose a tenant"))
	}
	if form.Template != "" {
		if in.TemplateID, err = uuid.Parse(form.Template); err != nil {
			return h.render(c, http.StatusUnprocessableEntity, form, problem.Invalid("template_id", "uuid", "choose a template from the list"))
		}
	}
	ctx, actor := web.Ctx(c), web.Actor(c)
	var id uuid.UUID
	if in.TemplateID == uuid.Nil {
		var env Environment
		env, err = h.svc.Create(ctx, actor, in.TenantID, in.Name)
		id = env.ID
	} else {
		id, err = h.lifecycle.Open(ctx, actor, in)
	}
	if web.FormErrors(err) != nil {
		return h.render(c, http.StatusUnprocessableEntity, form, err)
	}
	if err != nil {
		return err
	}
	web.SetFlash(c, web.FlashSuccess, "Environment "+in.Name+" added.")
	return web.Redirect(c, "/environments/"+id.String())
}

// ShowPage shows an environment: how it stands, its deployments, and what they hold.
func (h *Handlers) ShowPage(c echo.Context) error { return h.renderShow(c, http.StatusOK, nil) }

func (h *Handlers) renderShow(c echo.Context, status int, err error) error {
	id, ierr := web.IDParam(c, "id")
	if ierr != nil {
		return ierr
	}
	ctx, actor := web.Ctx(c), web.Actor(c)
	d, derr := h.svc.Detail(ctx, actor, id)
	if derr != nil {
		return derr
	}
	v := EnvironmentView{ID: d.ID.String(), TenantID: d.TenantID.String(), Tenant: d.TenantName, Name: d.Name, Status: d.Status, Reason: d.StatusReason,
		LandingZoneID: zoneID(actor, d.LandingZoneID), LandingZone: d.LandingZone, Template: d.Template, CanManage: actor.Can(access.EnvironmentManage, d.TenantID), Errors: web.FormErrors(err),
		ExpiresAt: d.ExpiresAt, Expiring: d.Expiring(time.Now()), Policies: d.Policies,
		Deployments: d.Deployments, Addresses: d.Addresses, Names: d.Names}
	return web.Render(c, status, EnvironmentPage(web.Page(c, d.TenantName+" / "+d.Name).Under(views.Crumb{Label: "Environments", URL: "/environments"}), v))
}

// zoneID is a landing zone's ID where the actor may open its page: zones are the provider's.
func zoneID(actor access.Principal, id *uuid.UUID) string {
	if id == nil || !actor.ProviderAdmin {
		return ""
	}
	return id.String()
}

// outputs lists a deployment's outputs as keys and values; the engine masks secret ones.
func outputs(raw json.RawMessage) []views.KeyValue {
	m := map[string]any{}
	_ = json.Unmarshal(raw, &m)
	return views.Values(m)
}

// DecommissionForm decommissions an environment once its name is typed to confirm.
func (h *Handlers) DecommissionForm(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	ctx, actor := web.Ctx(c), web.Actor(c)
	env, err := h.svc.Get(ctx, actor, id)
	if err != nil {
		return err
	}
	if strings.TrimSpace(c.FormValue("confirm")) != env.Name {
		return h.renderShow(c, http.StatusUnprocessableEntity, problem.Invalid("confirm", "match", "type %s to confirm", env.Name))
	}
	return h.lifecycleForm(c, h.lifecycle.Decommission, "Decommissioning "+env.Name+".")
}

// RetryForm takes up a failed provisioning or decommissioning again.
func (h *Handlers) RetryForm(c echo.Context) error {
	return h.lifecycleForm(c, h.lifecycle.Retry, "Trying again.")
}
