package event

import (
	"github.com/labstack/echo/v4"

	"nimbus/app/platform/web"
)

// Routes registers the receiver on root, outside sign-in (a source's secret authenticates
// it), the pages on pages and the rest under the signed-in API. zoneSeen and tenantSeen answer
// 404 for a landing zone or a tenant the actor cannot see, for the routes under their paths; a
// source or a subscription the actor may not manage is not found either, before its input is
// read.
func (h *Handlers) Routes(root *echo.Echo, pages, api *echo.Group, zoneSeen, tenantSeen echo.MiddlewareFunc) {
	source, subscription := web.Seen(h.svc.Source), web.Seen(h.svc.Subscription)
	root.POST("/api/v1/events/:source_id", h.receiver.Receive)
	pages.GET("/events", h.LogPageHandler)
	pages.GET("/landing-zones/:id/event-sources", h.SourcesPage, zoneSeen)
	pages.POST("/landing-zones/:id/event-sources", h.CreateSourceForm, zoneSeen)
	pages.POST("/event-sources/:id/secret", h.RotateSecretForm, source)
	pages.POST("/event-sources/:id/active", h.SourceActiveForm, source)
	pages.POST("/event-sources/:id/delete", h.DeleteSourceForm, source)
	pages.GET("/event-subscriptions", h.SubscriptionsPage)
	pages.POST("/event-subscriptions", h.SubscribeForm)
	pages.GET("/tenants/:id/event-subscriptions", h.TenantSubscriptionsPage, tenantSeen)
	pages.POST("/tenants/:id/event-subscriptions", h.TenantSubscribeForm, tenantSeen)
	pages.GET("/event-subscriptions/:id", h.SubscriptionPage, subscription)
	pages.POST("/event-subscriptions/:id/active", h.SubscriptionActiveForm, subscription)
	pages.POST("/event-subscriptions/:id/delete", h.UnsubscribeForm, subscription)
	api.GET("/events", h.ListAPI)
	api.GET("/landing-zones/:id/event-sources", h.SourcesAPI, zoneSeen)
	api.POST("/landing-zones/:id/event-sources", h.CreateSourceAPI, zoneSeen)
	api.PATCH("/event-sources/:id", h.UpdateSourceAPI, source)
	api.POST("/event-sources/:id/secret", h.RotateSecretAPI, source)
	api.DELETE("/event-sources/:id", h.DeleteSourceAPI, source)
	api.GET("/event-subscriptions", h.SubscriptionsAPI)
	api.POST("/event-subscriptions", h.SubscribeAPI)
	api.PATCH("/event-subscriptions/:id", h.UpdateSubscriptionAPI, subscription)
	api.DELETE("/event-subscriptions/:id", h.UnsubscribeAPI, subscription)
	api.GET("/event-subscriptions/:id/deliveries", h.DeliveriesAPI, subscription)
}
