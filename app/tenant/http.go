package tenant

import (
	"cmp"
	"errors"
	"net/http"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"nimbus/app/access"
	"nimbus/app/problem"
	"nimbus/app/web"
	"nimbus/views"
)

// Handlers serves the tenant pages and API.
type Handlers struct{ svc *Service }

// NewHandlers returns the handlers for svc.
func NewHandlers(svc *Service) *Handlers { return &Handlers{svc: svc} }

// ListPage shows the tenants with the form to create one.
func (h *Handlers) ListPage(c echo.Context) error { return h.renderList(c, http.StatusOK, "", nil) }

func (h *Handlers) renderList(c echo.Context, status int, name string, errs views.Errors) error {
	actor := web.Actor(c)
	tenants, err := h.svc.List(web.Ctx(c), actor)
	if err != nil {
		return err
	}
	rows := make([]TenantRow, len(tenants))
	for i, t := range tenants {
		rows[i] = TenantRow{ID: t.ID.String(), Name: t.Name, Members: t.MemberCount, Created: t.CreatedAt}
	}
	sort := views.SortOf("/tenants", c.QueryParams(), "name", "name", "members", "created")
	views.SortRows(rows, sort, map[string]func(a, b TenantRow) int{
		"name":    func(a, b TenantRow) int { return views.Fold(a.Name, b.Name) },
		"members": func(a, b TenantRow) int { return cmp.Compare(a.Members, b.Members) },
		"created": func(a, b TenantRow) int { return a.Created.Compare(b.Created) },
	})
	return web.Render(c, status, Tenants(web.Page(c, "Tenants"), sort, rows, actor.ProviderAdmin, name, errs))
}

// CreateForm creates a tenant from the list page.
func (h *Handlers) CreateForm(c echo.Context) error {
	name := c.FormValue("name")
	t, err := h.svc.Create(web.Ctx(c), web.Actor(c), name)
	if errs := web.FormErrors(err); errs != nil {
		return h.renderList(c, http.StatusUnprocessableEntity, name, errs)
	}
	if err != nil {
		return err
	}
	web.SetFlash(c, web.FlashSuccess, "Tenant "+t.Name+" created.")
	return web.Redirect(c, "/tenants/"+t.ID.String())
}

// ShowPage shows a tenant and its members.
func (h *Handlers) ShowPage(c echo.Context) error {
	return h.renderShow(c, http.StatusOK, "", string(access.User), "", nil)
}

func (h *Handlers) renderShow(c echo.Context, status int, email, role, rename string, errs views.Errors) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	actor := web.Actor(c)
	t, err := h.svc.Get(web.Ctx(c), actor, id)
	if err != nil {
		return err
	}
	members, err := h.svc.Members(web.Ctx(c), actor, id)
	if err != nil {
		return err
	}
	rows := make([]MemberRow, len(members))
	for i, m := range members {
		rows[i] = MemberRow{UserID: m.UserID.String(), Email: m.Email, Role: string(m.Role), Label: m.Role.Label(), Joined: m.CreatedAt}
	}
	roles := make([]views.Option, len(access.TenantRoles))
	for i, r := range access.TenantRoles {
		roles[i] = views.Option{Value: string(r), Label: r.Label()}
	}
	if rename == "" {
		rename = t.Name
	}
	v := TenantView{ID: id.String(), Name: t.Name, Members: rows, CanManage: actor.Can(access.TenantMemberManage, id),
		CanAdminister: actor.ProviderAdmin, CanSubscribe: actor.Can(access.EventsRulesManage, id), Roles: roles, Email: email, Role: role, Rename: rename, Errors: errs}
	page := web.Page(c, t.Name).Under(views.Crumb{Label: "Tenants", URL: "/tenants"})
	return web.Render(c, status, TenantPage(page, v))
}

// RenameForm renames a tenant from its page.
func (h *Handlers) RenameForm(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	name := c.FormValue("name")
	t, err := h.svc.Rename(web.Ctx(c), web.Actor(c), id, name)
	if errs := web.FormErrors(err); errs != nil {
		return h.renderShow(c, http.StatusUnprocessableEntity, "", string(access.User), name, errs)
	}
	if err != nil {
		return err
	}
	web.SetFlash(c, web.FlashSuccess, "Tenant renamed to "+t.Name+".")
	return web.Redirect(c, "/tenants/"+id.String())
}

// DeleteForm deletes an empty tenant from its page; a tenant that holds anything stays, and
// the page says what it holds.
func (h *Handlers) DeleteForm(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	actor := web.Actor(c)
	t, err := h.svc.Get(web.Ctx(c), actor, id)
	if err != nil {
		return err
	}
	err = h.svc.Delete(web.Ctx(c), actor, id)
	var v *problem.ValidationError
	switch {
	case errors.As(err, &v):
		web.SetFlash(c, web.FlashError, "Not deleted: "+v.Fields[0].Message+".")
		return web.Redirect(c, "/tenants/"+id.String())
	case err != nil:
		return err
	}
	web.SetFlash(c, web.FlashSuccess, "Tenant "+t.Name+" deleted.")
	return web.Redirect(c, "/tenants")
}

// SetMemberForm adds a member by email or changes their role.
func (h *Handlers) SetMemberForm(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	email, role := c.FormValue("email"), c.FormValue("role")
	actor := web.Actor(c)
	userID, err := h.svc.UserIDByEmail(web.Ctx(c), actor, id, email)
	if err == nil {
		_, err = h.svc.SetMember(web.Ctx(c), actor, id, userID, access.Role(role))
	}
	if errs := web.FormErrors(err); errs != nil {
		return h.renderShow(c, http.StatusUnprocessableEntity, email, role, "", errs)
	}
	if err != nil {
		return err
	}
	web.SetFlash(c, web.FlashSuccess, email+" is now "+access.Role(role).Label()+".")
	return web.Redirect(c, "/tenants/"+id.String())
}

// RemoveMemberForm takes a member out of the tenant.
func (h *Handlers) RemoveMemberForm(c echo.Context) error {
	id, userID, err := memberParams(c)
	if err != nil {
		return err
	}
	if err := h.svc.RemoveMember(web.Ctx(c), web.Actor(c), id, userID); err != nil {
		return err
	}
	web.SetFlash(c, web.FlashSuccess, "Member removed.")
	return web.Redirect(c, "/tenants/"+id.String())
}

func memberParams(c echo.Context) (uuid.UUID, uuid.UUID, error) {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return uuid.Nil, uuid.Nil, err
	}
	userID, err := web.IDParam(c, "user_id")
	return id, userID, err
}

// ListAPI answers GET /api/v1/tenants.
func (h *Handlers) ListAPI(c echo.Context) error {
	tenants, err := h.svc.List(web.Ctx(c), web.Actor(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"tenants": tenants})
}

// GetAPI answers GET /api/v1/tenants/{id}.
func (h *Handlers) GetAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	t, err := h.svc.Get(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, t)
}

// CreateAPI answers POST /api/v1/tenants.
func (h *Handlers) CreateAPI(c echo.Context) error {
	var in struct {
		Name string `json:"name"`
	}
	if err := web.DecodeJSON(c, &in); err != nil {
		return err
	}
	t, err := h.svc.Create(web.Ctx(c), web.Actor(c), in.Name)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, t)
}

// RenameAPI answers PATCH /api/v1/tenants/{id} with the tenant under its new name.
func (h *Handlers) RenameAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	var in struct {
		Name string `json:"name"`
	}
	if err := web.DecodeJSON(c, &in); err != nil {
		return err
	}
	t, err := h.svc.Rename(web.Ctx(c), web.Actor(c), id, in.Name)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, t)
}

// DeleteAPI answers DELETE /api/v1/tenants/{id} with 204; a tenant that is not empty is
// refused with 422, saying what it holds.
func (h *Handlers) DeleteAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	if err := h.svc.Delete(web.Ctx(c), web.Actor(c), id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// MembersAPI answers GET /api/v1/tenants/{id}/members.
func (h *Handlers) MembersAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	members, err := h.svc.Members(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"members": members})
}

type memberInput struct {
	UserID uuid.UUID   `json:"user_id"`
	Role   access.Role `json:"role"`
}

// SetMemberAPI answers POST /api/v1/tenants/{id}/members.
func (h *Handlers) SetMemberAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	var in memberInput
	if err := web.DecodeJSON(c, &in); err != nil {
		return err
	}
	m, err := h.svc.SetMember(web.Ctx(c), web.Actor(c), id, in.UserID, in.Role)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, m)
}

// RemoveMemberAPI answers DELETE /api/v1/tenants/{id}/members/{user_id}, and DELETE
// /api/v1/tenants/{id}/members with the user_id in the body.
func (h *Handlers) RemoveMemberAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	var userID uuid.UUID
	if c.Param("user_id") != "" {
		if userID, err = web.IDParam(c, "user_id"); err != nil {
			return err
		}
	} else {
		var in memberInput
		if err := web.DecodeJSON(c, &in); err != nil {
			return err
		}
		userID = in.UserID
	}
	if err := h.svc.RemoveMember(web.Ctx(c), web.Actor(c), id, userID); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
