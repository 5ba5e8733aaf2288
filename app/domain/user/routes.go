package user

import (
	"github.com/labstack/echo/v4"
)

// Routes registers the users: pages on pages, the JSON API on api.
func (h *Handlers) Routes(pages, api *echo.Group) {
	pages.GET("/users", h.ListPage)
	pages.POST("/users", h.CreateForm)
	pages.GET("/users/:id", h.UserPage)
	pages.POST("/users/:id", h.EditForm)
	pages.POST("/users/:id/disable", h.DisableForm)
	pages.POST("/users/:id/password", h.ResetPasswordForm)
	pages.POST("/users/:id/remove", h.RemoveForm)
	pages.POST("/users/:id/second-factor/reset", h.ResetSecondFactorForm)
	api.GET("/users", h.ListAPI)
	api.POST("/users", h.CreateAPI)
	api.GET("/users/:id", h.GetAPI)
	api.PATCH("/users/:id", h.UpdateAPI)
	api.DELETE("/users/:id", h.RemoveAPI)
	api.POST("/users/:id/password", h.ResetPasswordAPI)
}
