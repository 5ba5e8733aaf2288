package user

import (
	"context"
	"net/http"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"nimbus/app/domain/tenant"
	"nimbus/app/kernel/access"
	"nimbus/app/platform/web"
	"nimbus/views"
)

// Tenants lists the tenants a new user may join.
type Tenants interface {
	List(ctx context.Context, actor access.Principal) ([]tenant.Tenant, error)
}

// Handlers serves the user pages and API.
type Handlers struct {
	svc     *Service
	tenants Tenants
}

// NewHandlers returns the handlers for svc; tenants are offered to join in the form.
func NewHandlers(svc *Service, tenants Tenants) *Handlers {
	return &Handlers{svc: svc, tenants: tenants}
}

// ListPage shows the users the actor may see.
func (h *Handlers) ListPage(c echo.Context) error {
	return h.renderList(c, http.StatusOK, UserForm{Role: string(access.User)})
}

func (h *Handlers) renderList(c echo.Context, status int, form UserForm) error {
	actor := web.Actor(c)
	users, err := h.svc.List(web.Ctx(c), actor)
	if err != nil {
		return err
	}
	rows := make([]UserRow, len(users))
	for i, u := range users {
		rows[i] = UserRow{ID: u.ID.String(), Email: u.Email, ProviderAdmin: u.ProviderAdmin, Disabled: u.Disabled, Created: u.Created()}
		for _, m := range u.Tenants {
			rows[i].Tenants = append(rows[i].Tenants, MembershipRow{TenantID: m.TenantID.String(), Tenant: m.Tenant, Role: m.Role.Label()})
		}
	}
	sort := views.SortOf("/users", c.QueryParams(), "email", "email", "created")
	views.SortRows(rows, sort, map[string]func(a, b UserRow) int{
		"email":   func(a, b UserRow) int { return views.Fold(a.Email, b.Email) },
		"created": func(a, b UserRow) int { return a.Created.Compare(b.Created) },
	})
	if actor.ProviderAdmin {
		tenants, err := h.tenants.List(web.Ctx(c), actor)
		if err != nil {
			return err
		}
		form.Tenants = []views.Option{{Value: "", Label: "None"}}
		for _, t := range tenants {
			form.Tenants = append(form.Tenants, views.Option{Value: t.ID.String(), Label: t.Name})
		}
		for _, r := range access.TenantRoles {
			form.Roles = append(form.Roles, views.Option{Value: string(r), Label: r.Label()})
		}
	}
	return web.Render(c, status, Users(web.Page(c, "Users"), sort, rows, actor.ProviderAdmin, form))
}

// CreateForm creates a user from the users page, and adds them to the tenant chosen.
func (h *Handlers) CreateForm(c echo.Context) error {
	form := UserForm{Email: c.FormValue("email"), ProviderAdmin: c.FormValue("provider_admin") == "true",
		Tenant: c.FormValue("tenant_id"), Role: c.FormValue("role")}
	in := NewUser{Email: form.Email, Password: c.FormValue("password"), ProviderAdmin: form.ProviderAdmin, Role: access.Role(form.Role)}
	if form.Tenant != "" {
		id, err := uuid.Parse(form.Tenant)
		if err != nil {
			form.Errors = views.Errors{"tenant_id": "choose one of the tenants listed"}
			return h.renderList(c, http.StatusUnprocessableEntity, form)
		}
		in.TenantID = id
	}
	u, err := h.svc.Create(web.Ctx(c), web.Actor(c), in)
	if errs := web.FormErrors(err); errs != nil {
		form.Errors = errs
		return h.renderList(c, http.StatusUnprocessableEntity, form)
	}
	if err != nil {
		return err
	}
	msg := "User " + u.Email + " created."
	if len(u.Tenants) > 0 {
		msg = "User " + u.Email + " created, " + u.Tenants[0].Role.Label() + " in " + u.Tenants[0].Tenant + "."
	}
	web.SetFlash(c, web.FlashSuccess, msg)
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

// CreateAPI answers POST /api/v1/users; with tenant_id and role, the user joins that tenant.
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
