package auth

import (
	"github.com/labstack/echo/v4"
)

// Routes registers sign-in and API tokens: pages on pages, the JSON API on api, sign-in on
// public, which needs no session.
func (h *Handlers) Routes(public, pages, api *echo.Group) {
	public.GET("/login", h.LoginForm)
	public.POST("/login", h.Login)
	pages.POST("/logout", h.Logout)
	pages.GET("/account", h.AccountPage)
	pages.POST("/account/password", h.ChangePasswordForm)
	pages.GET("/tokens", h.TokensPage)
	pages.POST("/tokens", h.CreateTokenForm)
	pages.POST("/tokens/:id/revoke", h.RevokeTokenForm)
	api.GET("/tokens", h.ListTokensAPI)
	api.POST("/tokens", h.CreateTokenAPI)
	api.DELETE("/tokens/:id", h.RevokeTokenAPI)
	api.GET("/me", h.MeAPI)
	api.POST("/account/password", h.ChangePasswordAPI)
}
