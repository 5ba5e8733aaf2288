package policy

import (
	"errors"
	"net/http"

	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"

	"nimbus/app/kernel/problem"
	"nimbus/app/platform/web"
	"nimbus/db"
)

// Page answers GET /landing-zones/{id}/policies.
func (h *Handlers) Page(c echo.Context) error {
	return h.renderList(c, http.StatusOK, PageView{Form: Input{Level: Mandatory}})
}

// CreateForm answers POST /landing-zones/{id}/policies: the policy added, or the page again with
// a message beside each field that is wrong.
func (h *Handlers) CreateForm(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	in := formInput(c)
	_, err = h.svc.Create(web.Ctx(c), web.Actor(c), id, in)
	if errs := web.FormErrors(err); errs != nil {
		return h.renderList(c, http.StatusUnprocessableEntity, PageView{Form: in, Errors: errs})
	}
	if err != nil {
		return err
	}
	return web.Redirect(c, "/landing-zones/"+id.String()+"/policies")
}

// EditPage answers GET /landing-zones/{id}/policies/{policy}.
func (h *Handlers) EditPage(c echo.Context) error {
	id, pid, err := ids(c)
	if err != nil {
		return err
	}
	p, err := h.svc.Get(web.Ctx(c), web.Actor(c), id, pid)
	if err != nil {
		return err
	}
	enabled := p.Enabled
	return h.renderEdit(c, http.StatusOK, EditView{Form: Input{Name: p.Name, Message: p.Message, Expression: p.Expression,
		Level: p.Level, Enabled: &enabled}})
}

// UpdateForm answers POST /landing-zones/{id}/policies/{policy}.
func (h *Handlers) UpdateForm(c echo.Context) error {
	id, pid, err := ids(c)
	if err != nil {
		return err
	}
	in := formInput(c)
	_, err = h.svc.Update(web.Ctx(c), web.Actor(c), id, pid, in)
	if errs := web.FormErrors(err); errs != nil {
		return h.renderEdit(c, http.StatusUnprocessableEntity, EditView{Form: in, Errors: errs})
	}
	if err != nil {
		return err
	}
	return web.Redirect(c, "/landing-zones/"+id.String()+"/policies")
}

// RemoveForm answers POST /landing-zones/{id}/policies/{policy}/remove.
func (h *Handlers) RemoveForm(c echo.Context) error {
	id, pid, err := ids(c)
	if err != nil {
		return err
	}
	if err := h.svc.Remove(web.Ctx(c), web.Actor(c), id, pid); err != nil {
		return err
	}
	return web.Redirect(c, "/landing-zones/"+id.String()+"/policies")
}

// formInput is the policy a form gives; an unticked box sends nothing, which is disabled.
func formInput(c echo.Context) Input {
	enabled := c.FormValue("enabled") == "true"
	return Input{Name: c.FormValue("name"), Message: c.FormValue("message"), Expression: c.FormValue("expression"),
		Level: Level(c.FormValue("level")), Enabled: &enabled}
}

func (h *Handlers) renderList(c echo.Context, status int, v PageView) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	ctx, actor := web.Ctx(c), web.Actor(c)
	if v.Policies, err = h.svc.List(ctx, actor, id); err != nil {
		return err
	}
	if v.Versions, err = h.svc.Versions(ctx, actor, id); err != nil {
		return err
	}
	if v.ZoneName, err = h.zoneName(c); err != nil {
		return err
	}
	v.ZoneID = id.String()
	return web.Render(c, status, PoliciesPage(web.Page(c, "Plan policies"), v))
}

func (h *Handlers) renderEdit(c echo.Context, status int, v EditView) error {
	id, pid, err := ids(c)
	if err != nil {
		return err
	}
	if v.ZoneName, err = h.zoneName(c); err != nil {
		return err
	}
	v.ZoneID, v.PolicyID = id.String(), pid.String()
	return web.Render(c, status, EditPolicyPage(web.Page(c, "Policy "+v.Form.Name), v))
}

// zoneName is the name of the request's zone, once the actor has been shown to see its
// policies.
func (h *Handlers) zoneName(c echo.Context) (string, error) {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return "", err
	}
	z, err := db.Queries(h.svc.pool).GetLandingZone(web.Ctx(c), id)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", problem.ErrNotFound
	}
	return z.Name, err
}
