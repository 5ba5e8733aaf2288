package ipam

import (
	"github.com/labstack/echo/v4"

	"nimbus/app/platform/web"
)

// Routes registers the IP pools: pages on pages, the JSON API on api.
func (h *Handlers) Routes(pages, api *echo.Group) {
	seen := web.Seen(h.svc.Get)
	pages.GET("/ipam", h.ListPage)
	pages.POST("/ipam/pools", h.CreateForm)
	pages.GET("/ipam/pools/:id", h.ShowPage, seen)
	api.POST("/ipam/pools", h.CreateAPI)
	api.GET("/ipam/pools", h.ListAPI)
	api.GET("/ipam/pools/:id", h.GetAPI, seen)
}
