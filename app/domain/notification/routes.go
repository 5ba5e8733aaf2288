package notification

import "github.com/labstack/echo/v4"

// Routes registers the inbox and the preferences: pages on pages, the JSON API on api.
func (h *Handlers) Routes(pages, api *echo.Group) {
	pages.GET("/notifications", h.Page)
	pages.GET("/notifications/count", h.Count)
	pages.POST("/notifications/:id/read", h.MarkReadForm)
	pages.POST("/notifications/read", h.MarkAllReadForm)
	pages.GET("/notifications/preferences", h.PreferencesPage)
	pages.POST("/notifications/preferences", h.SavePreferences)
	api.GET("/notifications", h.ListAPI)
	api.POST("/notifications/:id/read", h.MarkReadAPI)
	api.POST("/notifications/read", h.MarkAllReadAPI)
	api.GET("/notifications/preferences", h.PreferencesAPI)
	api.PUT("/notifications/preferences", h.SetPreferencesAPI)
}
