package instance

import (
	"github.com/labstack/echo/v4"

	"nimbus/app/web"
)

// Pages registers the pages of stack instances and the wizard that deploys a stack on pages.
func (h *Handlers) Pages(pages *echo.Group) {
	seen := web.Seen(h.svc.Get)
	pages.GET("/stack-instances", h.ListPage)
	pages.GET("/stack-instances/:id", h.ShowPage, seen)
	pages.POST("/stack-instances/:id/destroy", h.DestroyForm, seen)
	pages.POST("/stack-instances/:id/retry", h.RetryForm, seen)
	pages.GET("/stacks/:id/deploy", h.WizardPage)
	pages.POST("/stacks/:id/deploy", h.WizardForm)
}
