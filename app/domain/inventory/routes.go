package inventory

import "github.com/labstack/echo/v4"

// Routes registers the inventory: pages and exports on pages, the JSON API on api. The
// exports' paths are fixed routes, which Echo matches before an item's ID.
func (h *Handlers) Routes(pages, api *echo.Group) {
	pages.GET("/inventory", h.Page)
	pages.GET("/inventory/export.csv", h.ExportCSV)
	pages.GET("/inventory/export.json", h.ExportJSON)
	pages.GET("/inventory/:id", h.ItemPage)
	api.GET("/inventory", h.ListAPI)
	api.GET("/inventory/:id", h.GetAPI)
}
