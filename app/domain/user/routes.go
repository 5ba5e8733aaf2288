package user

import (
	"github.com/labstack/echo/v4"
)

// Routes registers the users: pages on pages, the JSON API on api.
func (h *Handlers) Routes(pages, api *echo.Group) {
	pages.GET("/users", h.ListPage)
	pages.POST("/users", h.CreateForm)
	api.GET("/users", h.ListAPI)
	api.POST("/users", h.CreateAPI)
	api.GET("/users/:id", h.GetAPI)
}
