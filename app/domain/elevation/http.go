package elevation

import (
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

// Handlers serve the elevations' page and API.
type Handlers struct{ svc *Service }

// NewHandlers returns the handlers.
func NewHandlers(svc *Service) *Handlers { return &Handlers{svc: svc} }

// Page lists the elevations in force and recent ones, with the form to grant one.
func (h *Handlers) Page(c echo.Context) error {
	return h.render(c, http.StatusOK, GrantForm{Duration: "1h", Role: string(access.TenantAdmin)}, nil)
}

func (h *Handlers) render(c echo.Context, status int, form GrantForm, errs views.Errors) error {
	list, err := h.svc.List(web.Ctx(c), web.Actor(c))
	if err != nil {
		return err
	}
	users, tenants, err := h.svc.Choices(web.Ctx(c), web.Actor(c))
	if err != nil {
		return err
	}
	form.Users, form.Tenants = options(users), options(tenants)
	return web.Render(c, status, Elevations(web.Page(c, "Elevations"), rows(list), form, errs))
}

// GrantFormPost grants an elevation from the page.
func (h *Handlers) GrantFormPost(c echo.Context) error {
	form := GrantForm{User: c.FormValue("user_id"), Tenant: c.FormValue("tenant_id"), Role: c.FormValue("role"),
		Duration: c.FormValue("duration"), Reason: c.FormValue("reason")}
	_, err := h.grant(c, form.User, form.Tenant, form.Role, form.Duration, form.Reason)
	if errs := web.FormErrors(err); errs != nil {
		return h.render(c, http.StatusUnprocessableEntity, form, errs)
	}
	if err != nil {
		return err
	}
	web.SetFlash(c, web.FlashSuccess, "Role granted.")
	return web.Redirect(c, "/admin/elevations")
}

// RevokeForm ends an elevation from the page.
func (h *Handlers) RevokeForm(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	if err := h.svc.Revoke(web.Ctx(c), web.Actor(c), id); err != nil {
		return err
	}
	web.SetFlash(c, web.FlashSuccess, "Elevation revoked: the role is taken away now.")
	return web.Redirect(c, "/admin/elevations")
}

// grant parses the input, naming the field of whatever is wrong, and grants.
func (h *Handlers) grant(c echo.Context, userID, tenantID, role, duration, reason string) (Elevation, error) {
	v := &problem.ValidationError{}
	g := Grant{Role: access.Role(role), Reason: reason}
	var err error
	if g.UserID, err = uuid.Parse(strings.TrimSpace(userID)); err != nil {
		v.Add("user_id", "exists", "choose a user")
	}
	if g.TenantID, err = uuid.Parse(strings.TrimSpace(tenantID)); err != nil {
		v.Add("tenant_id", "exists", "choose a tenant")
	}
	if g.Duration, err = time.ParseDuration(strings.TrimSpace(duration)); err != nil {
		v.Add("duration", "format", "must be a duration such as 15m, 4h or 168h")
	}
	if err := v.Err(); err != nil {
		return Elevation{}, err
	}
	return h.svc.Grant(web.Ctx(c), web.Actor(c), g)
}

// ListAPI answers GET /api/v1/elevations.
func (h *Handlers) ListAPI(c echo.Context) error {
	list, err := h.svc.List(web.Ctx(c), web.Actor(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"elevations": list})
}

// GrantRequest is the body of POST /api/v1/elevations; duration is such as "4h" (15m to 168h).
type GrantRequest struct {
	UserID   string `json:"user_id"`
	TenantID string `json:"tenant_id"`
	Role     string `json:"role"`
	Duration string `json:"duration"`
	Reason   string `json:"reason"`
}

// GrantAPI answers POST /api/v1/elevations.
func (h *Handlers) GrantAPI(c echo.Context) error {
	var in GrantRequest
	if err := web.DecodeJSON(c, &in); err != nil {
		return err
	}
	e, err := h.grant(c, in.UserID, in.TenantID, in.Role, in.Duration, in.Reason)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, e)
}

// RevokeAPI answers DELETE /api/v1/elevations/{id}.
func (h *Handlers) RevokeAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	if err := h.svc.Revoke(web.Ctx(c), web.Actor(c), id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func options(list []Choice) []views.Option {
	out := []views.Option{{Value: "", Label: "—"}}
	for _, c := range list {
		out = append(out, views.Option{Value: c.ID.String(), Label: c.Name})
	}
	return out
}

func rows(list []Elevation) []Row {
	out := make([]Row, len(list))
	for i, e := range list {
		r := Row{ID: e.ID.String(), Email: e.Email, Tenant: e.Tenant, Role: e.Role.Label(), Reason: e.Reason, GrantedBy: e.GrantedBy,
			Granted: e.CreatedAt, Ends: e.EndsAt, Active: !Machine.Ended(e.Status), EndedBy: e.EndedBy}
		switch e.Why {
		case Expired:
			r.Ending = "expired"
		case Revoked:
			r.Ending = "revoked"
		}
		if e.EndedAt != nil {
			r.Ends = *e.EndedAt
		}
		out[i] = r
	}
	return out
}
