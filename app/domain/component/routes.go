package component

import (
	"github.com/labstack/echo/v4"

	"nimbus/app/platform/web"
)

// Routes registers the catalog, the component editor and the providers: pages on pages, the
// JSON API on api.
func (h *Handlers) Routes(pages, api *echo.Group) {
	seen := h.Seen()
	seenCheck := web.Seen(h.svc.Check)
	pages.GET("/admin/providers", h.SemanticsPage)
	pages.POST("/admin/providers/:kind", h.AddSemanticForm)
	pages.GET("/catalog", h.CatalogPage)
	pages.GET("/components/new", h.NewPage)
	pages.GET("/components/starter", h.StarterAPI)
	pages.POST("/components", h.CreateForm)
	pages.GET("/components/:id", h.ShowPage, seen)
	pages.GET("/components/:id/edit", h.EditPage, seen)
	pages.POST("/components/:id/draft", h.SaveDraftForm, seen)
	pages.POST("/components/:id/publish", h.PublishForm, seen)
	pages.POST("/components/:id/delete", h.DeleteForm, seen)
	pages.GET("/components/:id/versions/:n", h.VersionPage, seen)
	pages.POST("/components/:id/versions/:n/archive", h.ArchiveVersionForm, seen)
	pages.GET("/components/:id/diff", h.DiffPage, seen)
	pages.POST("/components/:id/check", h.CheckForm, seen)
	pages.GET("/checks/:id", h.CheckPanel, seenCheck)
	pages.GET("/components/:id/repository", h.RepositoryPage, seen)
	pages.POST("/components/:id/repository", h.LinkRepositoryForm, seen)
	pages.POST("/components/:id/repository/delete", h.UnlinkRepositoryForm, seen)
	api.GET("/providers", h.SemanticsAPI)
	api.POST("/providers", h.AddProviderAPI)
	api.POST("/semantic-types", h.AddSemanticTypeAPI)
	api.POST("/provider-resource-types", h.AddResourceTypeAPI)
	api.GET("/components", h.ListAPI)
	api.POST("/components", h.CreateAPI)
	api.GET("/components/:id", h.GetAPI, seen)
	api.PATCH("/components/:id", h.UpdateAPI, seen)
	api.DELETE("/components/:id", h.DeleteAPI, seen)
	api.POST("/components/:id/publish", h.PublishAPI, seen)
	api.GET("/components/:id/versions", h.VersionsAPI, seen)
	api.GET("/components/:id/versions/:n", h.VersionAPI, seen)
	api.POST("/components/:id/versions/:n/archive", h.ArchiveVersionAPI, seen)
	api.POST("/components/:id/check", h.CheckAPI, seen)
	api.GET("/checks/:id", h.GetCheckAPI, seenCheck)
	api.GET("/components/:id/repository", h.RepositoryAPI, seen)
	api.PUT("/components/:id/repository", h.LinkRepositoryAPI, seen)
	api.DELETE("/components/:id/repository", h.UnlinkRepositoryAPI, seen)
}

// WebhookRoutes registers the repositories' push webhook on root, outside sign-in: the
// link's secret authenticates it.
func (h *Handlers) WebhookRoutes(root *echo.Echo) {
	root.POST("/api/v1/repository-links/:id/webhook", h.ReceiveWebhook)
}

// Seen answers a request about a component the actor cannot see with 404 (see web.Seen), for
// the routes of other domains under the component's path.
func (h *Handlers) Seen() echo.MiddlewareFunc { return web.Seen(h.svc.Get) }
