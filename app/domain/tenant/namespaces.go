package tenant

import (
	"errors"
	"net/http"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/web"
)

// namespaceOf reads the tenant and namespace IDs of a request and returns the namespace: one of
// another tenant's is not found.
func (h *Handlers) namespaceOf(c echo.Context) (uuid.UUID, Namespace, error) {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return uuid.Nil, Namespace{}, err
	}
	nsID, err := web.IDParam(c, "namespace_id")
	if err != nil {
		return uuid.Nil, Namespace{}, err
	}
	if h.svc.namespaces == nil {
		return uuid.Nil, Namespace{}, problem.ErrNotFound
	}
	n, err := h.svc.namespaces.Get(web.Ctx(c), web.Actor(c), nsID)
	if err == nil && n.TenantID != id {
		err = problem.ErrNotFound
	}
	return id, n, err
}

// ProvisionForm provisions a tenant on a zone's cluster from its page.
func (h *Handlers) ProvisionForm(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	on, form, err := provisionRequest(c, "")
	if err == nil && on == nil {
		err = problem.Invalid("landing_zone_id", "required", "choose the landing zone whose cluster the tenant is provisioned on")
	}
	if err == nil && h.svc.namespaces == nil {
		return problem.ErrNotFound
	}
	var n Namespace
	if err == nil {
		n, err = h.svc.namespaces.Provision(web.Ctx(c), web.Actor(c), id, *on)
	}
	if errs := web.FormErrors(err); errs != nil {
		return h.renderShow(c, http.StatusUnprocessableEntity, "", string(access.User), "", form, errs)
	}
	if err != nil {
		return err
	}
	web.SetFlash(c, web.FlashSuccess, "Namespace "+n.Namespace+" is being provisioned on "+n.ZoneName+".")
	return web.Redirect(c, "/tenants/"+id.String())
}

// DecommissionForm decommissions one of a tenant's namespaces from its page.
func (h *Handlers) DecommissionForm(c echo.Context) error {
	id, n, err := h.namespaceOf(c)
	if err != nil {
		return err
	}
	n, err = h.svc.namespaces.Decommission(web.Ctx(c), web.Actor(c), n.ID)
	var v *problem.ValidationError
	if errors.As(err, &v) {
		web.SetFlash(c, web.FlashError, "Not decommissioned: "+v.Fields[0].Message+".")
		return web.Redirect(c, "/tenants/"+id.String())
	}
	if err != nil {
		return err
	}
	web.SetFlash(c, web.FlashSuccess, "Namespace "+n.Namespace+" on "+n.ZoneName+" is being decommissioned.")
	return web.Redirect(c, "/tenants/"+id.String())
}

// NamespacesAPI answers GET /api/v1/tenants/{id}/namespaces.
func (h *Handlers) NamespacesAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	if h.svc.namespaces == nil {
		return c.JSON(http.StatusOK, []Namespace{})
	}
	all, err := h.svc.namespaces.List(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, all)
}

// ProvisionAPI answers POST /api/v1/tenants/{id}/namespaces with 202: the factory is running.
func (h *Handlers) ProvisionAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	var in NamespaceRequest
	if err := web.DecodeJSON(c, &in); err != nil {
		return err
	}
	if h.svc.namespaces == nil {
		return problem.ErrNotFound
	}
	n, err := h.svc.namespaces.Provision(web.Ctx(c), web.Actor(c), id, in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, n)
}

// DecommissionAPI answers DELETE /api/v1/tenants/{id}/namespaces/{namespace_id} with 202: the
// factory's instance is being destroyed.
func (h *Handlers) DecommissionAPI(c echo.Context) error {
	_, n, err := h.namespaceOf(c)
	if err != nil {
		return err
	}
	n, err = h.svc.namespaces.Decommission(web.Ctx(c), web.Actor(c), n.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, n)
}
