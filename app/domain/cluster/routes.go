package cluster

import "github.com/labstack/echo/v4"

// Routes registers a landing zone's cluster under the zone's path; seen answers 404 for a zone
// the actor cannot see.
func (h *Handlers) Routes(pages, api *echo.Group, seen echo.MiddlewareFunc) {
	pages.GET("/landing-zones/:id/cluster", h.Page, seen)
	pages.POST("/landing-zones/:id/cluster", h.SetForm, seen)
	pages.POST("/landing-zones/:id/cluster/check", h.CheckForm, seen)
	pages.POST("/landing-zones/:id/cluster/remove", h.RemoveForm, seen)
	api.GET("/landing-zones/:id/cluster", h.GetAPI, seen)
	api.PUT("/landing-zones/:id/cluster", h.SetAPI, seen)
	api.POST("/landing-zones/:id/cluster/check", h.CheckAPI, seen)
	api.DELETE("/landing-zones/:id/cluster", h.RemoveAPI, seen)
}
