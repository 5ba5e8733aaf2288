package cluster

import (
	"context"
	"errors"
	"net/http"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"

	"nimbus/app/kernel/problem"
	"nimbus/app/platform/web"
	"nimbus/db/dbgen"
)

// Page answers GET /landing-zones/{id}/cluster.
func (h *Handlers) Page(c echo.Context) error {
	return h.render(c, http.StatusOK, PageView{Saved: c.QueryParam("saved") != ""})
}

// SetForm answers POST /landing-zones/{id}/cluster: the pasted or uploaded kubeconfig checked
// and saved, or the form again with why not.
func (h *Handlers) SetForm(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	data, err := kubeconfigOf(c)
	if err == nil {
		_, err = h.svc.Set(web.Ctx(c), web.Actor(c), id, data)
	}
	if errs := web.FormErrors(err); errs != nil {
		// The pasted text comes back so it can be fixed; an uploaded file is not echoed.
		return h.render(c, http.StatusUnprocessableEntity, PageView{Errors: errs, Pasted: c.FormValue("kubeconfig")})
	}
	if err != nil {
		return err
	}
	return web.Redirect(c, "/landing-zones/"+id.String()+"/cluster?saved=1")
}

// CheckForm answers POST /landing-zones/{id}/cluster/check.
func (h *Handlers) CheckForm(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	_, err = h.svc.Recheck(web.Ctx(c), web.Actor(c), id)
	if errs := web.FormErrors(err); errs != nil {
		return h.render(c, http.StatusUnprocessableEntity, PageView{Errors: errs})
	}
	if err != nil {
		return err
	}
	return web.Redirect(c, "/landing-zones/"+id.String()+"/cluster")
}

// RemoveForm answers POST /landing-zones/{id}/cluster/remove.
func (h *Handlers) RemoveForm(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	if err := h.svc.Remove(web.Ctx(c), web.Actor(c), id); err != nil {
		return err
	}
	return web.Redirect(c, "/landing-zones/"+id.String()+"/cluster")
}

func (h *Handlers) render(c echo.Context, status int, v PageView) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	ctx := web.Ctx(c)
	if v.Cluster, err = h.svc.Get(ctx, web.Actor(c), id); err != nil {
		return err
	}
	z, err := h.svc.zone(ctx, id)
	if err != nil {
		return err
	}
	v.ZoneName = z.Name
	v.ZoneID = id.String()
	return web.Render(c, status, ClusterPage(web.Page(c, "Kubernetes cluster"), v))
}

func (s *Service) zone(ctx context.Context, id uuid.UUID) (dbgen.LandingZone, error) {
	z, err := s.q().GetLandingZone(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return z, problem.ErrNotFound
	}
	return z, err
}
