package user

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"nimbus/app/web"
	"nimbus/views"
)

// Handlers serves the user pages and API.
type Handlers struct{ svc *Service }

// NewHandlers returns the handlers for svc.
func NewHandlers(svc *Service) *Handlers { return &Handlers{svc: svc} }

// ListPage shows the users the actor may see.
func (h *Handlers) ListPage(c echo.Context) error { return h.renderList(c, http.StatusOK, "", nil) }

func (h *Handlers) renderList(c echo.Context, status int, email string, errs views.Errors) error {
	actor := web.Actor(c)
	users, err := h.svc.List(web.Ctx(c), actor)
	if err != nil {
		return err
	}
	rows := make([]UserRow, len(users))
	for i, u := range users {
		rows[i] = UserRow{Email: u.Email, ProviderAdmin: u.ProviderAdmin, Created: u.CreatedAt}
	}
	return web.Render(c, status, Users(web.Page(c, "Users"), rows, actor.ProviderAdmin, email, errs))
}

// CreateForm creates a user from the users page.
func (h *Handlers) CreateForm(c echo.Context) error {
	in := NewUser{Email: c.FormValue("email"), Password: c.FormValue("password"), ProviderAdmin: c.FormValue("provider_admin") == "true"}
	u, err := h.svc.Create(web.Ctx(c), web.Actor(c), in)
	if errs := web.FormErrors(err); errs != nil {
		return h.renderList(c, http.StatusUnprocessableEntity, in.Email, errs)
	}
	if err != nil {
		return err
	}
	web.SetFlash(c, web.FlashSuccess, "User "+u.Email+" created. Add them to a tenant from the tenant's page.")
	return web.Redirect(c, "/users")
}

// ListAPI answers GET /api/v1/users.
func (h *Handlers) ListAPI(c echo.Context) error {
	users, err := h.svc.List(web.Ctx(c), web.Actor(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"users": users})
}

// GetAPI answers GET /api/v1/users/{id}.
func (h *Handlers) GetAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	u, err := h.svc.Get(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, u)
}

// CreateAPI answers POST /api/v1/users.
func (h *Handlers) CreateAPI(c echo.Context) error {
	var in NewUser
	if err := web.DecodeJSON(c, &in); err != nil {
		return err
	}
	u, err := h.svc.Create(web.Ctx(c), web.Actor(c), in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, u)
}
