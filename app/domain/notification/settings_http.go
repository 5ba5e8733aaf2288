package notification

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"nimbus/app/platform/web"
	"nimbus/views"
)

// MailHandlers serve the operator's mail settings.
type MailHandlers struct{ svc *MailService }

// NewMailHandlers returns the handlers for svc.
func NewMailHandlers(svc *MailService) *MailHandlers { return &MailHandlers{svc: svc} }

// Routes registers the mail settings, for provider admins: pages on pages, the JSON API on api.
func (h *MailHandlers) Routes(pages, api *echo.Group) {
	pages.GET("/admin/mail", h.Page, web.RequireProviderAdmin)
	pages.POST("/admin/mail", h.SaveForm, web.RequireProviderAdmin)
	pages.POST("/admin/mail/test", h.TestForm, web.RequireProviderAdmin)
	api.GET("/mail-settings", h.GetAPI)
	api.PUT("/mail-settings", h.SetAPI)
	api.POST("/mail-settings/test", h.TestAPI)
	api.GET("/mail-settings/failed", h.FailedAPI)
}

// Page shows the settings, the test form and the failed deliveries.
func (h *MailHandlers) Page(c echo.Context) error {
	return h.render(c, http.StatusOK, MailForm{}, nil)
}

func (h *MailHandlers) render(c echo.Context, status int, form MailForm, errs views.Errors) error {
	s, err := h.svc.Settings(web.Ctx(c), web.Actor(c))
	if err != nil {
		return err
	}
	failed, err := h.svc.Failed(web.Ctx(c), web.Actor(c))
	if err != nil {
		return err
	}
	if form.Input == nil {
		form.Input = &MailInput{Host: s.Host, Port: itoa(s.Port), TLS: string(s.TLS), Username: s.Username, FromAddress: s.FromAddress, BaseURL: s.BaseURL}
	}
	form.Current = s
	return web.Render(c, status, MailPage(web.Page(c, "Mail"), form, failed, errs))
}

func formInput(c echo.Context) MailInput {
	return MailInput{Host: c.FormValue("host"), Port: c.FormValue("port"), TLS: c.FormValue("tls"), Username: c.FormValue("username"),
		Password: c.FormValue("password"), ClearPassword: c.FormValue("clear_password") != "", FromAddress: c.FormValue("from_address"),
		BaseURL: c.FormValue("base_url")}
}

// SaveForm keeps the settings, or shows the form again naming the fields at fault.
func (h *MailHandlers) SaveForm(c echo.Context) error {
	in := formInput(c)
	err := h.svc.SetSettings(web.Ctx(c), web.Actor(c), in)
	if errs := web.FormErrors(err); errs != nil {
		in.Password = ""
		return h.render(c, http.StatusUnprocessableEntity, MailForm{Input: &in}, errs)
	}
	if err != nil {
		return err
	}
	web.SetFlash(c, web.FlashSuccess, "Mail settings saved.")
	return web.Redirect(c, "/admin/mail")
}

// TestForm sends a test mail, and says on the page why it could not.
func (h *MailHandlers) TestForm(c echo.Context) error {
	to := c.FormValue("to")
	err := h.svc.Test(web.Ctx(c), web.Actor(c), to)
	if errs := web.FormErrors(err); errs != nil {
		return h.render(c, http.StatusUnprocessableEntity, MailForm{To: to}, errs)
	}
	if err != nil {
		return err
	}
	web.SetFlash(c, web.FlashSuccess, "A test mail was sent to "+to+".")
	return web.Redirect(c, "/admin/mail")
}

// GetAPI answers GET /api/v1/mail-settings.
func (h *MailHandlers) GetAPI(c echo.Context) error {
	s, err := h.svc.Settings(web.Ctx(c), web.Actor(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s)
}

// SetAPI answers PUT /api/v1/mail-settings with the settings kept.
func (h *MailHandlers) SetAPI(c echo.Context) error {
	var in MailInput
	if err := web.DecodeJSON(c, &in); err != nil {
		return err
	}
	if err := h.svc.SetSettings(web.Ctx(c), web.Actor(c), in); err != nil {
		return err
	}
	return h.GetAPI(c)
}

// TestAPI answers POST /api/v1/mail-settings/test {"to"}: 204 once the server took the mail.
func (h *MailHandlers) TestAPI(c echo.Context) error {
	var in struct {
		To string `json:"to"`
	}
	if err := web.DecodeJSON(c, &in); err != nil {
		return err
	}
	if err := h.svc.Test(web.Ctx(c), web.Actor(c), in.To); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// FailedAPI answers GET /api/v1/mail-settings/failed with the latest failed deliveries.
func (h *MailHandlers) FailedAPI(c echo.Context) error {
	list, err := h.svc.Failed(web.Ctx(c), web.Actor(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"failed": list})
}
