package environment

import (
	"net/http"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"nimbus/app/problem"
	"nimbus/app/web"
	"nimbus/views"
)

// Handlers serves the environment pages and API.
type Handlers struct{ svc *Service }

// NewHandlers returns the handlers for svc.
func NewHandlers(svc *Service) *Handlers { return &Handlers{svc: svc} }

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

// CreateAPI answers POST /api/v1/environments.
func (h *Handlers) CreateAPI(c echo.Context) error {
	var in struct {
		TenantID uuid.UUID `json:"tenant_id"`
		Name     string    `json:"name"`
	}
	if err := web.DecodeJSON(c, &in); err != nil {
		return err
	}
	env, err := h.svc.Create(web.Ctx(c), web.Actor(c), in.TenantID, in.Name)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, env)
}

// ListPage shows the environments with a form to add one.
func (h *Handlers) ListPage(c echo.Context) error { return h.render(c, http.StatusOK, "", "", nil) }

func (h *Handlers) render(c echo.Context, status int, tenant, name string, err error) error {
	actor := web.Actor(c)
	envs, listErr := h.svc.List(web.Ctx(c), actor)
	if listErr != nil {
		return listErr
	}
	rows := make([]views.EnvironmentRow, len(envs))
	for i, e := range envs {
		rows[i] = views.EnvironmentRow{ID: e.ID.String(), Tenant: e.TenantName, Name: e.Name, Status: e.Status, Created: e.CreatedAt}
	}
	return web.Render(c, status, views.Environments(web.Page(c, "Environments"), rows, h.tenantChoices(c), tenant, name, web.FormErrors(err)))
}

// tenantChoices names the tenants the actor may add environments to.
func (h *Handlers) tenantChoices(c echo.Context) []views.RoleOption {
	var out []views.RoleOption
	for _, t := range h.svc.manageable(web.Ctx(c), web.Actor(c)) {
		out = append(out, views.RoleOption{Value: t.ID.String(), Label: t.Name})
	}
	return out
}

// CreateForm adds an environment from the page.
func (h *Handlers) CreateForm(c echo.Context) error {
	tenant, name := c.FormValue("tenant_id"), c.FormValue("name")
	id, err := uuid.Parse(tenant)
	if err != nil {
		return h.render(c, http.StatusUnprocessableEntity, tenant, name, problem.Invalid("tenant_id", "required", "choose a tenant"))
	}
	env, err := h.svc.Create(web.Ctx(c), web.Actor(c), id, name)
	if web.FormErrors(err) != nil {
		return h.render(c, http.StatusUnprocessableEntity, tenant, name, err)
	}
	if err != nil {
		return err
	}
	web.SetFlash(c, web.FlashSuccess, "Environment "+env.Name+" added to "+env.TenantName+".")
	return web.Redirect(c, "/environments")
}
