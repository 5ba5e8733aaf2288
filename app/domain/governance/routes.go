package governance

import (
	"github.com/labstack/echo/v4"
)

// Routes registers the governance of each tenant's components: pages on pages, the JSON API on
// api. seenTenant guards the tenant in the path.
func (h *Handlers) Routes(pages, api *echo.Group, seenTenant echo.MiddlewareFunc) {
	pages.GET("/tenants/:id/governance", h.ListPage, seenTenant)
	pages.GET("/tenants/:id/governance/:component_id", h.EditPage, seenTenant)
	pages.POST("/tenants/:id/governance/:component_id", h.SetForm, seenTenant)
	pages.POST("/tenants/:id/governance/:component_id/clear", h.ClearForm, seenTenant)
	api.GET("/tenants/:id/governance", h.ListAPI, seenTenant)
	api.GET("/tenants/:id/governance/:component_id", h.GetAPI, seenTenant)
	api.PUT("/tenants/:id/governance/:component_id", h.SetAPI, seenTenant)
	api.DELETE("/tenants/:id/governance/:component_id", h.ClearAPI, seenTenant)
}
