package policy

import "github.com/labstack/echo/v4"

// Routes registers a landing zone's policies under the zone's path; seen answers 404 for a
// zone the actor cannot see.
func (h *Handlers) Routes(pages, api *echo.Group, seen echo.MiddlewareFunc) {
	pages.GET("/landing-zones/:id/policies", h.Page, seen)
	pages.POST("/landing-zones/:id/policies", h.CreateForm, seen)
	pages.GET("/landing-zones/:id/policies/:policy", h.EditPage, seen)
	pages.POST("/landing-zones/:id/policies/:policy", h.UpdateForm, seen)
	pages.POST("/landing-zones/:id/policies/:policy/remove", h.RemoveForm, seen)
	api.GET("/landing-zones/:id/policies", h.ListAPI, seen)
	api.POST("/landing-zones/:id/policies", h.CreateAPI, seen)
	api.GET("/landing-zones/:id/policies/versions", h.VersionsAPI, seen)
	api.GET("/landing-zones/:id/policies/:policy", h.GetAPI, seen)
	api.PUT("/landing-zones/:id/policies/:policy", h.UpdateAPI, seen)
	api.DELETE("/landing-zones/:id/policies/:policy", h.RemoveAPI, seen)
}
