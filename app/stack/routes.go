package stack

import (
	"github.com/labstack/echo/v4"

	"nimbus/app/web"
)

// Routes registers the stack definition API on api.
func (h *Handlers) Routes(api *echo.Group) {
	seen := web.Seen(h.svc.Get)
	api.GET("/stacks", h.ListAPI)
	api.POST("/stacks", h.CreateAPI)
	api.GET("/stacks/:id", h.GetAPI, seen)
	api.PUT("/stacks/:id", h.UpdateAPI, seen)
	api.DELETE("/stacks/:id", h.DeleteAPI, seen)
	api.POST("/stacks/:id/publish", h.PublishAPI, seen)
	api.GET("/stacks/:id/versions", h.VersionsAPI, seen)
	api.GET("/stacks/:id/versions/:n", h.VersionAPI, seen)
	api.POST("/stacks/:id/versions/:n/archive", h.ArchiveAPI, seen)
	api.GET("/stacks/:id/diff", h.DiffAPI, seen)
	api.POST("/stacks/:id/fork", h.ForkAPI, seen)
}
