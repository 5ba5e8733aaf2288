package tenant

import (
	"cmp"
	"errors"
	"net/http"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/web"
	"nimbus/views"
)

// Handlers serves the tenant pages and API.
type Handlers struct{ svc *Service }

// NewHandlers returns the handlers for svc.
func NewHandlers(svc *Service) *Handlers { return &Handlers{svc: svc} }

// ListPage shows the tenants with the form to create one.
func (h *Handlers) ListPage(c echo.Context) error {
	return h.renderList(c, http.StatusOK, "", Provisioning{}, nil)
}

func (h *Handlers) renderList(c echo.Context, status int, name string, prov Provisioning, errs views.Errors) error {
	actor := web.Actor(c)
	tenants, err := h.svc.List(web.Ctx(c), actor)
	if err != nil {
		return err
	}
	if err := h.provisioning(c, &prov, "Not now"); err != nil {
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
	return web.Render(c, status, Tenants(web.Page(c, "Tenants"), sort, rows, actor.ProviderAdmin, name, prov, errs))
}

// provisioning fills the choices of a form that provisions a tenant on a zone's cluster: the
// zones with a tenant factory after a first choice of none, and their tiers. It offers nothing
// to those who may not provision, or where no zone can be provisioned on.
func (h *Handlers) provisioning(c echo.Context, p *Provisioning, none string) error {
	if h.svc.namespaces == nil || !web.Actor(c).ProviderAdmin {
		return nil
	}
	zones, err := h.svc.namespaces.Zones(web.Ctx(c), web.Actor(c))
	if err != nil || len(zones) == 0 {
		return err
	}
	p.Zones = []views.Option{{Value: "", Label: none}}
	seen := map[string]bool{}
	for _, z := range zones {
		p.Zones = append(p.Zones, views.Option{Value: z.LandingZoneID.String(), Label: z.ZoneName + " (" + z.StackName + ")"})
		for _, t := range z.Tiers {
			if !seen[t] {
				seen[t] = true
				p.Tiers = append(p.Tiers, views.Option{Value: t, Label: t})
			}
		}
	}
	return nil
}

// provisionRequest reads a provisioning form whose fields are named with prefix; nil when no
// zone was chosen.
func provisionRequest(c echo.Context, prefix string) (*NamespaceRequest, Provisioning, error) {
	form := Provisioning{Zone: c.FormValue(prefix + "landing_zone_id"), Tier: c.FormValue(prefix + "tier"),
		Namespace: c.FormValue(prefix + "namespace")}
	if form.Zone == "" {
		return nil, form, nil
	}
	zone, err := uuid.Parse(form.Zone)
	if err != nil {
		return nil, form, problem.Invalid(prefix+"landing_zone_id", "format", "choose a landing zone from the list")
	}
	return &NamespaceRequest{LandingZoneID: zone, Tier: form.Tier, Namespace: form.Namespace}, form, nil
}

// CreateForm creates a tenant from the list page, and provisions it on the zone chosen.
func (h *Handlers) CreateForm(c echo.Context) error {
	name := c.FormValue("name")
	on, form, err := provisionRequest(c, "provision.")
	var t Tenant
	if err == nil {
		t, err = h.svc.CreateProvisioned(web.Ctx(c), web.Actor(c), name, on)
	}
	if errs := web.FormErrors(err); errs != nil {
		return h.renderList(c, http.StatusUnprocessableEntity, name, form, errs)
	}
	if err != nil {
		return err
	}
	if on != nil {
		web.SetFlash(c, web.FlashSuccess, "Tenant "+t.Name+" created; its namespace is being provisioned.")
	} else {
		web.SetFlash(c, web.FlashSuccess, "Tenant "+t.Name+" created.")
	}
	return web.Redirect(c, "/tenants/"+t.ID.String())
}

// ShowPage shows a tenant and its members.
func (h *Handlers) ShowPage(c echo.Context) error {
	return h.renderShow(c, http.StatusOK, "", string(access.User), "", Provisioning{}, nil)
}

func (h *Handlers) renderShow(c echo.Context, status int, email, role, rename string, prov Provisioning, errs views.Errors) error {
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
		CanAdminister: actor.ProviderAdmin, CanSubscribe: actor.Can(access.EventsRulesManage, id), Roles: roles, Email: email, Role: role, Rename: rename,
		Provision: prov, Removing: t.RemovalRequestedAt != nil, Errors: errs}
	if h.svc.namespaces != nil && actor.ProviderAdmin {
		if err := h.provisioning(c, &v.Provision, ""); err != nil {
			return err
		}
		namespaces, err := h.svc.namespaces.List(web.Ctx(c), actor, id)
		if err != nil {
			return err
		}
		for _, n := range namespaces {
			row := NamespaceRow{ID: n.ID.String(), Zone: n.ZoneName, Namespace: n.Namespace, Status: n.Status, Error: n.Error}
			if n.InstanceID != nil {
				row.InstanceID = n.InstanceID.String()
			}
			v.Namespaces = append(v.Namespaces, row)
		}
	}
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
		return h.renderShow(c, http.StatusUnprocessableEntity, "", string(access.User), name, Provisioning{}, errs)
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
	var d *Decommissioning
	switch {
	case errors.As(err, &d):
		web.SetFlash(c, web.FlashInfo, d.Error()+".")
		return web.Redirect(c, "/tenants/"+id.String())
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
		return h.renderShow(c, http.StatusUnprocessableEntity, email, role, "", Provisioning{}, errs)
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
		Name      string            `json:"name"`
		Provision *NamespaceRequest `json:"provision"`
	}
	if err := web.DecodeJSON(c, &in); err != nil {
		return err
	}
	t, err := h.svc.CreateProvisioned(web.Ctx(c), web.Actor(c), in.Name, in.Provision)
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
	err = h.svc.Delete(web.Ctx(c), web.Actor(c), id)
	var d *Decommissioning
	if errors.As(err, &d) {
		return c.JSON(http.StatusAccepted, map[string]any{"message": d.Error(), "tenant": d.Tenant, "decommissioning": d.Namespaces})
	}
	if err != nil {
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
