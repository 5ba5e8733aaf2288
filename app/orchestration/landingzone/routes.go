package landingzone

import (
	"github.com/labstack/echo/v4"

	"nimbus/app/platform/web"
)

// Routes registers the landing zones: pages on pages, the JSON API on api.
func (h *Handlers) Routes(pages, api *echo.Group) {
	seen := h.Seen()
	pages.GET("/landing-zones", h.ListPage)
	pages.POST("/landing-zones", h.CreateForm)
	pages.GET("/landing-zones/:id", h.ShowPage, seen)
	pages.GET("/landing-zones/:id/inputs", h.InputsFragment, seen)
	pages.GET("/landing-zones/:id/refers", h.RefersFragment, seen)
	pages.POST("/landing-zones/:id/system-services", h.AddSystemServiceForm, seen)
	pages.POST("/landing-zones/:id/templates", h.AddTemplateForm, seen)
	pages.POST("/landing-zones/:id/templates/:template_id/withdraw", h.WithdrawTemplateForm, seen)
	pages.POST("/landing-zones/:id/system-services/:service_id/remove", h.RemoveSystemServiceForm, seen)
	pages.POST("/landing-zones/:id/lifetimes", h.LifetimesForm, seen)
	pages.POST("/landing-zones/:id/publish", h.PublishForm, seen)
	pages.POST("/landing-zones/:id/retire", h.RetireForm, seen)
	api.GET("/landing-zones", h.ListAPI)
	api.POST("/landing-zones", h.CreateAPI)
	api.GET("/landing-zones/:id", h.GetAPI, seen)
	api.POST("/landing-zones/:id/system-services", h.AddSystemServiceAPI, seen)
	api.POST("/landing-zones/:id/templates", h.AddTemplateAPI, seen)
	api.DELETE("/landing-zones/:id/templates/:template_id", h.WithdrawTemplateAPI, seen)
	api.DELETE("/landing-zones/:id/system-services/:service_id", h.RemoveSystemServiceAPI, seen)
	api.PUT("/landing-zones/:id/lifetimes", h.LifetimesAPI, seen)
	api.POST("/landing-zones/:id/publish", h.PublishAPI, seen)
	api.POST("/landing-zones/:id/retire", h.RetireAPI, seen)
}

// Seen answers a request about a landing zone the actor cannot see with 404 (see web.Seen), for
// the routes of other domains under the landing zone's path.
func (h *Handlers) Seen() echo.MiddlewareFunc { return web.Seen(h.svc.Get) }
