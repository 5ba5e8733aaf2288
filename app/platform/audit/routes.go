package audit

import (
	"github.com/labstack/echo/v4"
)

// Routes registers the audit log: pages on pages, the JSON API on api.
func (h *Handlers) Routes(pages, api *echo.Group) {
	pages.GET("/audit", h.Page)
	api.GET("/audit-events", h.ListAPI)
}
