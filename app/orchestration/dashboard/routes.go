package dashboard

import "github.com/labstack/echo/v4"

// Routes registers the dashboard, the home page, on pages.
func (h *Handlers) Routes(pages *echo.Group) {
	pages.GET("/", h.Page)
}
