package system

import "github.com/labstack/echo/v4"

// Routes registers the probes on public, which needs no session, and the status page on pages.
func (h *Handlers) Routes(public, pages *echo.Group) {
	public.GET("/healthz", h.Healthz)
	public.GET("/readyz", h.Readyz)
	pages.GET("/admin/system", h.StatusPage)
}
