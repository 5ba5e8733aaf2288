package stack

import (
	"github.com/labstack/echo/v4"

	"nimbus/app/platform/web"
)

// Routes registers the stack catalog, page and editor on pages, and the stack definition API
// on api.
func (h *Handlers) Routes(pages, api *echo.Group) {
	seen := web.Seen(h.svc.Get)
	pages.GET("/stacks", h.CatalogPage)
	pages.GET("/stacks/new", h.NewPage)
	pages.POST("/stacks", h.CreateForm)
	pages.GET("/stacks/:id", h.ShowPage, seen)
	pages.GET("/stacks/:id/edit", h.EditPage, seen)
	pages.POST("/stacks/:id/edit", h.SaveForm, seen)
	pages.POST("/stacks/:id/publish", h.PublishForm, seen)
	pages.POST("/stacks/:id/versions/:n/archive", h.ArchiveForm, seen)
	pages.POST("/stacks/:id/fork", h.ForkForm, seen)
	pages.GET("/stacks/:id/diff", h.DiffPage, seen)
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
