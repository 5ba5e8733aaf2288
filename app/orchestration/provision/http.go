package provision

import (
	"net/http"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"nimbus/app/kernel/problem"
	"nimbus/app/platform/web"
	"nimbus/views"
)

// Handlers serves the zones' tenant factory pages and API.
type Handlers struct{ svc *Service }

// NewHandlers returns the handlers for svc.
func NewHandlers(svc *Service) *Handlers { return &Handlers{svc: svc} }

// Routes registers a zone's tenant factory under the zone's path (seen answers 404 for a zone
// the actor cannot see), and the creation of the factory's stack.
func (h *Handlers) Routes(pages, api *echo.Group, seen echo.MiddlewareFunc) {
	pages.GET("/landing-zones/:id/tenant-factory", h.Page, seen)
	pages.POST("/landing-zones/:id/tenant-factory", h.SetForm, seen)
	pages.POST("/stacks/tenant-factory", h.CreateFactoryForm)
	api.GET("/landing-zones/:id/tenant-factory", h.GetAPI, seen)
	api.PUT("/landing-zones/:id/tenant-factory", h.SetAPI, seen)
	api.POST("/stacks/tenant-factory", h.CreateFactoryAPI)
}

func factoryID(f *Factory) string {
	if f == nil {
		return ""
	}
	return f.StackID.String()
}

func candidateOptions(all []Factory) []views.Option {
	out := []views.Option{{Value: "", Label: "None"}}
	for _, f := range all {
		out = append(out, views.Option{Value: f.StackID.String(), Label: f.StackName})
	}
	return out
}

// Page answers GET /landing-zones/{id}/tenant-factory.
func (h *Handlers) Page(c echo.Context) error { return h.render(c, http.StatusOK, nil) }

func (h *Handlers) render(c echo.Context, status int, errs views.Errors) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	s, err := h.svc.Setting(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	v := PageView{Setting: s, Errors: errs}
	for _, f := range s.Candidates {
		v.HasFactoryStack = v.HasFactoryStack || f.StackName == FactoryName
	}
	page := web.Page(c, "Tenant factory of "+s.ZoneName).Under(views.Crumb{Label: "Landing zones", URL: "/landing-zones"},
		views.Crumb{Label: s.ZoneName, URL: "/landing-zones/" + id.String()})
	return web.Render(c, status, FactoryPage(page, v))
}

// chosen reads a stack ID that may be empty: none.
func chosen(raw string) (*uuid.UUID, error) {
	if raw == "" {
		return nil, nil
	}
	id, err := uuid.Parse(raw)
	if err != nil {
		return nil, problem.Invalid("stack_id", "format", "choose a stack from the list")
	}
	return &id, nil
}

// SetForm answers POST /landing-zones/{id}/tenant-factory.
func (h *Handlers) SetForm(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	stackID, err := chosen(c.FormValue("stack_id"))
	if err == nil {
		err = h.svc.SetFactory(web.Ctx(c), web.Actor(c), id, stackID)
	}
	if errs := web.FormErrors(err); errs != nil {
		return h.render(c, http.StatusUnprocessableEntity, errs)
	}
	if err != nil {
		return err
	}
	web.SetFlash(c, web.FlashSuccess, "Tenant factory saved.")
	return web.Redirect(c, "/landing-zones/"+id.String()+"/tenant-factory")
}

// CreateFactoryForm answers POST /stacks/tenant-factory with the new stack's editor.
func (h *Handlers) CreateFactoryForm(c echo.Context) error {
	st, err := h.svc.CreateFactory(web.Ctx(c), web.Actor(c))
	if errs := web.FormErrors(err); errs != nil {
		web.SetFlash(c, web.FlashError, "Not created: "+firstOf(errs)+".")
		return web.Redirect(c, "/stacks")
	}
	if err != nil {
		return err
	}
	web.SetFlash(c, web.FlashSuccess, "The tenant factory stack is created as a draft: publish it, then choose it as a zone's tenant factory.")
	return web.Redirect(c, "/stacks/"+st.ID.String())
}

func firstOf(errs views.Errors) string {
	for _, m := range errs {
		return m
	}
	return ""
}

// GetAPI answers GET /api/v1/landing-zones/{id}/tenant-factory.
func (h *Handlers) GetAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	s, err := h.svc.Setting(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s)
}

// SetAPI answers PUT /api/v1/landing-zones/{id}/tenant-factory: {"stack_id": …} or null.
func (h *Handlers) SetAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	var in struct {
		StackID *uuid.UUID `json:"stack_id"`
	}
	if err := web.DecodeJSON(c, &in); err != nil {
		return err
	}
	if err := h.svc.SetFactory(web.Ctx(c), web.Actor(c), id, in.StackID); err != nil {
		return err
	}
	return h.GetAPI(c)
}

// CreateFactoryAPI answers POST /api/v1/stacks/tenant-factory with 201 and the stack's draft.
func (h *Handlers) CreateFactoryAPI(c echo.Context) error {
	st, err := h.svc.CreateFactory(web.Ctx(c), web.Actor(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, st)
}
