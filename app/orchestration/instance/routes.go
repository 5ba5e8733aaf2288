package instance

import (
	"github.com/labstack/echo/v4"

	"nimbus/app/platform/web"
)

// Routes registers the JSON API of stack instances on api. A request about an instance the
// actor cannot see answers 404 before its body is read (web.Seen).
func (h *Handlers) Routes(api *echo.Group) {
	seen := web.Seen(h.svc.Get)
	api.GET("/stack-instances", h.ListAPI)
	api.POST("/stack-instances", h.DeployAPI)
	api.GET("/stack-instances/:id", h.GetAPI, seen)
	api.DELETE("/stack-instances/:id", h.DestroyAPI, seen)
	api.POST("/stack-instances/:id/destroy", h.DestroyAPI, seen)
	api.POST("/stack-instances/:id/retry", h.RetryAPI, seen)
	api.POST("/stack-instances/:id/deploy", h.StartAPI, seen)
	api.POST("/stack-instances/:id/discard", h.DiscardAPI, seen)
	api.GET("/stack-instances/:id/runs", h.RunsAPI, seen)
	api.GET("/stack-instances/:id/upgrade", h.UpgradePlanAPI, seen)
	api.POST("/stack-instances/:id/upgrade", h.UpgradeAPI, seen)
	api.POST("/stack-instances/:id/transitions", h.FireAPI, seen)
	api.GET("/stack-instances/:id/operations", h.OperationsAPI, seen)
	api.POST("/stack-instances/:id/operations/:name", h.RunOperationAPI, seen)
	api.GET("/stack-instances/:id/history", h.HistoryAPI, seen)
}

// Pages registers the pages of stack instances, and the wizard that deploys a stack, on pages.
func (h *Handlers) Pages(pages *echo.Group) {
	seen := web.Seen(h.svc.Get)
	pages.GET("/stack-instances", h.ListPage)
	pages.GET("/stack-instances/:id", h.ShowPage, seen)
	pages.POST("/stack-instances/:id/destroy", h.DestroyForm, seen)
	pages.POST("/stack-instances/:id/retry", h.RetryForm, seen)
	pages.GET("/stack-instances/:id/plan", h.PlanPage, seen)
	pages.POST("/stack-instances/:id/deploy", h.StartForm, seen)
	pages.POST("/stack-instances/:id/discard", h.DiscardForm, seen)
	pages.POST("/stack-instances/:id/edit", h.EditForm, seen)
	pages.POST("/stack-instances/:id/transitions", h.FireForm, seen)
	pages.POST("/stack-instances/:id/operations/:name", h.RunOperationForm, seen)
	pages.POST("/stack-instances/:id/upgrade", h.UpgradeForm, seen)
	pages.GET("/stacks/:id/deploy", h.WizardPage)
	pages.POST("/stacks/:id/deploy", h.WizardForm)
}
