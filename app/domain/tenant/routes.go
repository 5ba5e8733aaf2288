package tenant

import (
	"github.com/labstack/echo/v4"

	"nimbus/app/platform/web"
)

// Routes registers the tenant pages and members: pages on pages, the JSON API on api.
func (h *Handlers) Routes(pages, api *echo.Group) {
	seen := h.Seen()
	pages.GET("/tenants", h.ListPage)
	pages.POST("/tenants", h.CreateForm)
	pages.GET("/tenants/:id", h.ShowPage, seen)
	pages.POST("/tenants/:id/rename", h.RenameForm, seen)
	pages.POST("/tenants/:id/delete", h.DeleteForm, seen)
	pages.POST("/tenants/:id/members", h.SetMemberForm, seen)
	pages.POST("/tenants/:id/members/:user_id/delete", h.RemoveMemberForm, seen)
	pages.POST("/tenants/:id/namespaces", h.ProvisionForm, seen)
	pages.POST("/tenants/:id/namespaces/:namespace_id/decommission", h.DecommissionForm, seen)
	api.GET("/tenants", h.ListAPI)
	api.POST("/tenants", h.CreateAPI)
	api.GET("/tenants/:id", h.GetAPI, seen)
	api.PATCH("/tenants/:id", h.RenameAPI, seen)
	api.DELETE("/tenants/:id", h.DeleteAPI, seen)
	api.GET("/tenants/:id/members", h.MembersAPI, seen)
	api.POST("/tenants/:id/members", h.SetMemberAPI, seen)
	api.DELETE("/tenants/:id/members", h.RemoveMemberAPI, seen)
	api.DELETE("/tenants/:id/members/:user_id", h.RemoveMemberAPI, seen)
	api.GET("/tenants/:id/namespaces", h.NamespacesAPI, seen)
	api.POST("/tenants/:id/namespaces", h.ProvisionAPI, seen)
	api.DELETE("/tenants/:id/namespaces/:namespace_id", h.DecommissionAPI, seen)
}

// Seen answers a request about a tenant the actor cannot see with 404 (see web.Seen), for
// the routes of other domains under the tenant's path.
func (h *Handlers) Seen() echo.MiddlewareFunc { return web.Seen(h.svc.Get) }
