package elevation

import (
	"github.com/labstack/echo/v4"

	"nimbus/app/platform/web"
)

// Routes registers the elevations: pages on pages, the JSON API on api. Revoking answers 404
// to anyone but a provider admin, as for an elevation that does not exist.
func (h *Handlers) Routes(pages, api *echo.Group) {
	pages.GET("/admin/elevations", h.Page, web.RequireProviderAdmin)
	pages.POST("/admin/elevations", h.GrantFormPost, web.RequireProviderAdmin)
	pages.POST("/admin/elevations/:id/revoke", h.RevokeForm)
	api.GET("/elevations", h.ListAPI)
	api.POST("/elevations", h.GrantAPI)
	api.DELETE("/elevations/:id", h.RevokeAPI)
}
