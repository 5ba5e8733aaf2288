package approval

import (
	"github.com/labstack/echo/v4"

	"nimbus/app/platform/web"
)

// Routes registers the approval queue and the approval policies: pages on pages, the JSON API
// on api.
func (h *Handlers) Routes(pages, api *echo.Group) {
	seen := web.Seen(h.svc.Get)
	pages.GET("/approvals", h.QueuePage)
	pages.GET("/approvals/:id", h.ShowPage, seen)
	pages.POST("/approvals/:id/approve", h.ApproveForm, seen)
	pages.POST("/approvals/:id/reject", h.RejectForm, seen)
	pages.GET("/approval-policies", h.PoliciesPage)
	pages.POST("/approval-policies", h.CreatePolicyForm)
	pages.POST("/approval-policies/:id/delete", h.DeletePolicyForm)
	api.GET("/approvals", h.ListAPI)
	api.GET("/approvals/:id", h.GetAPI, seen)
	api.POST("/approvals/:id/approve", h.ApproveAPI, seen)
	api.POST("/approvals/:id/reject", h.RejectAPI, seen)
	api.GET("/approval-policies", h.PoliciesAPI)
	api.POST("/approval-policies", h.CreatePolicyAPI)
	api.DELETE("/approval-policies/:id", h.DeletePolicyAPI)
}
