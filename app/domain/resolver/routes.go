package resolver

import (
	"github.com/labstack/echo/v4"
)

// Routes registers the resolver settings of landing zones and environments, and the image
// catalog: pages on pages, the JSON API on api. seenEnvironment and seenZone guard the
// environment or landing zone in the path.
func (h *Handlers) Routes(pages, api *echo.Group, seenEnvironment, seenZone echo.MiddlewareFunc) {
	pages.GET("/environments/:id/resolvers", h.EnvironmentPage, seenEnvironment)
	pages.GET("/environments/:id/resolvers/naming/next", h.NextNameFragment, seenEnvironment)
	pages.POST("/environments/:id/resolvers/:type", h.SetForm, seenEnvironment)
	pages.GET("/images", h.ImagesPage)
	pages.POST("/images", h.AddImageForm)
	pages.POST("/images/:id/delete", h.DeleteImageForm)
	pages.GET("/landing-zones/:id/resolvers", h.ZonePage, seenZone)
	pages.GET("/landing-zones/:id/resolvers/naming/next", h.NextNameFragment, seenZone)
	pages.POST("/landing-zones/:id/resolvers/:type", h.SetForm, seenZone)
	api.GET("/images", h.ImagesAPI)
	api.POST("/images", h.AddImageAPI)
	api.DELETE("/images/:id", h.DeleteImageAPI)
	api.GET("/environments/:id/resolvers", h.ListAPI, seenEnvironment)
	api.GET("/environments/:id/resolvers/naming/next", h.NextNameAPI, seenEnvironment)
	api.PUT("/environments/:id/resolvers/:type", h.SetAPI, seenEnvironment)
	api.DELETE("/environments/:id/resolvers/:type", h.ClearAPI, seenEnvironment)
	api.GET("/landing-zones/:id/resolvers", h.ZoneListAPI, seenZone)
	api.PUT("/landing-zones/:id/resolvers/:type", h.ZoneSetAPI, seenZone)
}
