package cluster

import (
	"errors"
	"io"
	"net/http"

	"github.com/labstack/echo/v4"

	"nimbus/app/kernel/problem"
	"nimbus/app/platform/web"
)

// Handlers serve a landing zone's cluster: its page and its API.
type Handlers struct {
	svc *Service
}

// NewHandlers returns the handlers of svc.
func NewHandlers(svc *Service) *Handlers { return &Handlers{svc: svc} }

// GetAPI answers GET /api/v1/landing-zones/{id}/cluster.
func (h *Handlers) GetAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	cl, err := h.svc.Get(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	if cl == nil {
		return problem.ErrNotFound
	}
	return c.JSON(http.StatusOK, cl)
}

// SetAPI answers PUT /api/v1/landing-zones/{id}/cluster {"kubeconfig": "…"}: 200 with what the
// API server said, or 422 naming why the kubeconfig is refused.
func (h *Handlers) SetAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	var in struct {
		Kubeconfig string `json:"kubeconfig"`
	}
	if err := web.DecodeJSON(c, &in); err != nil {
		return err
	}
	cl, err := h.svc.Set(web.Ctx(c), web.Actor(c), id, []byte(in.Kubeconfig))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, cl)
}

// CheckAPI answers POST /api/v1/landing-zones/{id}/cluster/check: the API server asked again.
func (h *Handlers) CheckAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	cl, err := h.svc.Recheck(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, cl)
}

// RemoveAPI answers DELETE /api/v1/landing-zones/{id}/cluster.
func (h *Handlers) RemoveAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	if err := h.svc.Remove(web.Ctx(c), web.Actor(c), id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// kubeconfigOf is the kubeconfig a form gives: an uploaded file, else the pasted text.
func kubeconfigOf(c echo.Context) ([]byte, error) {
	fh, err := c.FormFile("file")
	if errors.Is(err, http.ErrMissingFile) || errors.Is(err, http.ErrNotMultipart) || err == nil && fh.Size == 0 {
		return []byte(c.FormValue("kubeconfig")), nil
	}
	if err != nil {
		return nil, problem.Invalid("file", "upload", "the upload could not be read: %s", err)
	}
	if fh.Size > maxKubeconfig {
		return nil, problem.Invalid("kubeconfig", "max_size", "must be at most %d KiB", maxKubeconfig/1024)
	}
	f, err := fh.Open()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxKubeconfig+1))
}
