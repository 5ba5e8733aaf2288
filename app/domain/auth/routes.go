package auth

import (
	"github.com/labstack/echo/v4"

	"nimbus/app/platform/web"
)

// Routes registers sign-in and API tokens: pages on pages, the JSON API on api, sign-in on
// public, which needs no session.
func (h *Handlers) Routes(public, pages, api *echo.Group) {
	public.GET("/login", h.LoginForm)
	public.POST("/login", h.Login)
	public.GET("/login/sso", h.BeginSSO)
	public.GET(callbackPath, h.FinishSSO)
	public.GET(secondStepPath, h.SecondStepForm)
	public.POST(secondStepPath, h.SecondStep)
	public.POST(secondStepPath+"/key/begin", h.BeginKeySignInJSON)
	public.POST(secondStepPath+"/key/finish", h.FinishKeySignInJSON)
	pages.POST("/logout", h.Logout)
	pages.GET("/account", h.AccountPage)
	pages.POST("/account/password", h.ChangePasswordForm)
	pages.POST("/account/second-factor", h.BeginFactorForm)
	pages.POST("/account/second-factor/confirm", h.ConfirmFactorForm)
	pages.POST("/account/second-factor/disable", h.DisableFactorForm)
	pages.POST("/account/second-factor/recovery-codes", h.RecoveryCodesForm)
	pages.POST("/account/security-keys/begin", h.BeginKeyJSON)
	pages.POST("/account/security-keys/finish", h.FinishKeyJSON)
	pages.GET("/admin/identity-provider", h.ProviderPage, web.RequireProviderAdmin)
	pages.POST("/admin/identity-provider", h.SetProviderForm, web.RequireProviderAdmin)
	pages.POST("/admin/identity-provider/remove", h.RemoveProviderForm, web.RequireProviderAdmin)
	pages.GET("/tokens", h.TokensPage)
	pages.POST("/tokens", h.CreateTokenForm)
	pages.POST("/tokens/:id/revoke", h.RevokeTokenForm)
	api.GET("/tokens", h.ListTokensAPI)
	api.POST("/tokens", h.CreateTokenAPI)
	api.DELETE("/tokens/:id", h.RevokeTokenAPI)
	api.GET("/me", h.MeAPI)
	api.POST("/account/password", h.ChangePasswordAPI)
}
