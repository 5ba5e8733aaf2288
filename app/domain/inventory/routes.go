package inventory

import (
	"github.com/labstack/echo/v4"

	"nimbus/app/platform/web"
)

// Routes registers the inventory: pages and exports on pages, the JSON API on api. The
// exports' paths are fixed routes, which Echo matches before an item's ID. An item the actor
// may not see is not found before a move of it reads its input.
func (h *Handlers) Routes(pages, api *echo.Group) {
	seen := h.Seen()
	pages.GET("/inventory", h.Page)
	pages.GET("/inventory/export.csv", h.ExportCSV)
	pages.GET("/inventory/export.json", h.ExportJSON)
	pages.GET("/inventory/:id", h.ItemPage)
	pages.POST("/inventory/:id/ignore", h.setAside(h.svc.Ignore, false), seen)
	pages.POST("/inventory/:id/unignore", h.setAside(h.svc.Unignore, false), seen)
	api.GET("/inventory", h.ListAPI)
	api.GET("/inventory/:id", h.GetAPI)
	api.POST("/inventory/:id/ignore", h.setAside(h.svc.Ignore, true), seen)
	api.POST("/inventory/:id/unignore", h.setAside(h.svc.Unignore, true), seen)
}

// Seen answers 404 for an item the actor may not see, for the routes of other packages under
// its path (an adoption's).
func (h *Handlers) Seen() echo.MiddlewareFunc { return web.Seen(h.svc.Get) }
