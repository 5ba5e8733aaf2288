package deployweb

import (
	"github.com/labstack/echo/v4"

	"nimbus/app/platform/web"
)

// Routes registers the deployments, their operations and the deploy dialog: pages on pages, the
// JSON API on api. seenComponent guards the component in the path.
func (h *Handlers) Routes(pages, api *echo.Group, seenComponent, seenItem echo.MiddlewareFunc) {
	seenDeployment := web.Seen(h.svc.Get)
	seenOperation := web.Seen(h.svc.Operation)
	pages.GET("/deployments", h.ListPage)
	pages.GET("/deployments/choices/:kind", h.ChoicesFragment)
	pages.GET("/deployments/:id", h.ShowPage, seenDeployment)
	pages.POST("/deployments/:id/apply", h.ApplyForm, seenDeployment)
	pages.POST("/deployments/:id/upgrade", h.UpgradeForm, seenDeployment)
	pages.POST("/deployments/:id/refresh", h.RefreshForm, seenDeployment)
	pages.POST("/deployments/:id/drift-check", h.DriftCheckForm, seenDeployment)
	pages.POST("/deployments/:id/reconcile", h.ReconcileForm, seenDeployment)
	pages.POST("/deployments/:id/destroy", h.DestroyForm, seenDeployment)
	pages.POST("/deployments/:id/git", h.GitForm, seenDeployment)
	pages.GET("/operations/:id", h.OperationPage) // it reads nothing of the request before the operation
	pages.GET("/operations/:id/stream", h.Stream, seenOperation)
	pages.POST("/operations/:id/cancel", h.CancelForm, seenOperation)
	pages.POST("/operations/:id/apply", h.ApplyPreviewForm, seenOperation)
	pages.GET("/components/:id/deploy", h.DeployDialog, seenComponent)
	pages.POST("/components/:id/deploy", h.DeployDialogForm, seenComponent)
	pages.POST("/inventory/:id/adopt", h.AdoptForm, seenItem)
	api.GET("/deployments", h.ListAPI)
	api.POST("/deployments", h.CreateAPI)
	api.POST("/inventory/:id/adopt", h.AdoptAPI, seenItem)
	api.GET("/deployments/:id", h.GetAPI, seenDeployment)
	api.GET("/operations", h.OperationsAPI)
	api.GET("/operations/:id", h.OperationAPI, seenOperation)
	api.GET("/operations/:id/logs", h.LogsAPI, seenOperation)
	api.GET("/operations/:id/log", h.FullLogAPI, seenOperation)
	api.POST("/operations/:id/cancel", h.CancelAPI, seenOperation)
	api.POST("/operations/:id/apply", h.ApplyPreviewAPI, seenOperation)
	api.GET("/deployments/:id/state", h.StateAPI, seenDeployment)
	api.PUT("/deployments/:id/state", h.RestoreStateAPI, seenDeployment)
	api.POST("/deployments/:id/drift-checks", h.DriftCheckAPI, seenDeployment)
	api.POST("/deployments/:id/reconcile", h.ReconcileAPI, seenDeployment)
	api.PUT("/deployments/:id/git", h.GitAPI, seenDeployment)
	for _, kind := range []string{"preview", "deploy", "update", "upgrade", "refresh", "destroy"} {
		api.POST("/deployments/:id/"+kind, h.ActionAPI(kind))
	}
}
