package environment

import (
	"github.com/labstack/echo/v4"

	"nimbus/app/platform/web"
)

// Routes registers the environments: pages on pages, the JSON API on api.
func (h *Handlers) Routes(pages, api *echo.Group) {
	seen := h.Seen()
	pages.GET("/environments", h.ListPage)
	pages.POST("/environments", h.CreateForm)
	pages.GET("/environments/:id", h.ShowPage, seen)
	pages.POST("/environments/:id/decommission", h.DecommissionForm, seen)
	pages.POST("/environments/:id/retry", h.RetryForm, seen)
	pages.POST("/environments/:id/extend", h.ExtendForm, seen)
	api.GET("/environments", h.ListAPI)
	api.POST("/environments", h.CreateAPI)
	api.GET("/environments/:id", h.GetAPI, seen)
	api.GET("/environments/:id/policies", h.PoliciesAPI, seen)
	api.POST("/environments/:id/decommission", h.DecommissionAPI, seen)
	api.POST("/environments/:id/retry", h.RetryAPI, seen)
	api.POST("/environments/:id/extend", h.ExtendAPI, seen)
}

// Seen answers a request about a environment the actor cannot see with 404 (see web.Seen), for
// the routes of other domains under the environment's path.
func (h *Handlers) Seen() echo.MiddlewareFunc { return web.Seen(h.svc.Get) }
