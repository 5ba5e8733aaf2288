package notification

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"nimbus/app/kernel/problem"
	"nimbus/app/platform/web"
	"nimbus/views"
)

// Handlers serves the inbox and the preferences.
type Handlers struct{ svc *Service }

// NewHandlers returns the handlers for svc.
func NewHandlers(svc *Service) *Handlers { return &Handlers{svc: svc} }

// filter reads a page of the inbox from the query: ?unread=true, ?before=, ?limit=.
func filter(c echo.Context) (Filter, error) {
	v := &problem.ValidationError{}
	at, limit := web.ListPosition(c, v)
	f := Filter{After: at, Limit: limit}
	switch c.QueryParam("unread") {
	case "", "false":
	case "true":
		f.Unread = true
	default:
		v.Add("unread", "boolean", "must be true or false")
	}
	return f, v.Err()
}

// Page lists the viewer's notifications, newest first.
func (h *Handlers) Page(c echo.Context) error {
	f, err := filter(c)
	if err != nil {
		return err
	}
	list, err := h.svc.List(web.Ctx(c), web.Actor(c), f)
	if err != nil {
		return err
	}
	next := web.NextPage(c, list, f.Limit, Notification.Place)
	return web.Render(c, http.StatusOK, Inbox(web.Page(c, "Notifications"), list, f.Unread, web.Pager(c, next)))
}

// Count answers the header's inbox link, refreshed by htmx.
func (h *Handlers) Count(c echo.Context) error {
	n, err := h.svc.Unread(web.Ctx(c), web.Actor(c))
	if err != nil {
		return err
	}
	return web.Render(c, http.StatusOK, views.Inbox(n))
}

// MarkReadForm marks one notification read and goes to what it tells of.
func (h *Handlers) MarkReadForm(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	n, err := h.svc.MarkRead(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	if c.FormValue("stay") != "" {
		return web.Redirect(c, "/notifications")
	}
	return web.Redirect(c, n.Link)
}

// MarkAllReadForm marks every notification of the viewer read.
func (h *Handlers) MarkAllReadForm(c echo.Context) error {
	if _, err := h.svc.MarkAllRead(web.Ctx(c), web.Actor(c)); err != nil {
		return err
	}
	web.SetFlash(c, web.FlashSuccess, "All notifications marked read.")
	return web.Redirect(c, "/notifications")
}

// PreferencesPage shows what reaches the viewer.
func (h *Handlers) PreferencesPage(c echo.Context) error {
	p, err := h.svc.Preferences(web.Ctx(c), web.Actor(c))
	if err != nil {
		return err
	}
	page := web.Page(c, "Notification preferences").Under(views.Crumb{Label: "Notifications", URL: "/notifications"})
	return web.Render(c, http.StatusOK, PreferencesForm(page, p))
}

// SavePreferences records the form: a box per kind and way, unticked boxes absent.
func (h *Handlers) SavePreferences(c echo.Context) error {
	form, err := c.FormParams()
	if err != nil {
		return err
	}
	var p Preferences
	for _, k := range Kinds {
		p.Kinds = append(p.Kinds, Choice{Kind: k.Type, Inbox: form.Get("inbox."+k.Type) != "", Email: form.Get("email."+k.Type) != ""})
	}
	p.Digest = form.Get("daily_digest") != ""
	if err := h.svc.SetPreferences(web.Ctx(c), web.Actor(c), p); err != nil {
		return err
	}
	web.SetFlash(c, web.FlashSuccess, "Preferences saved.")
	return web.Redirect(c, "/notifications/preferences")
}

// ListAPI answers GET /api/v1/notifications: the caller's, newest first, paged by ?before=.
func (h *Handlers) ListAPI(c echo.Context) error {
	f, err := filter(c)
	if err != nil {
		return err
	}
	list, err := h.svc.List(web.Ctx(c), web.Actor(c), f)
	if err != nil {
		return err
	}
	unread, err := h.svc.Unread(web.Ctx(c), web.Actor(c))
	if err != nil {
		return err
	}
	out := map[string]any{"notifications": list, "unread": unread}
	if next := web.NextPage(c, list, f.Limit, Notification.Place); next != "" {
		out["next"] = next
	}
	return c.JSON(http.StatusOK, out)
}

// MarkReadAPI answers POST /api/v1/notifications/:id/read with the notification.
func (h *Handlers) MarkReadAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	n, err := h.svc.MarkRead(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, n)
}

// MarkAllReadAPI answers POST /api/v1/notifications/read with how many were marked.
func (h *Handlers) MarkAllReadAPI(c echo.Context) error {
	n, err := h.svc.MarkAllRead(web.Ctx(c), web.Actor(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]int{"marked": n})
}

// PreferencesAPI answers GET /api/v1/notifications/preferences.
func (h *Handlers) PreferencesAPI(c echo.Context) error {
	p, err := h.svc.Preferences(web.Ctx(c), web.Actor(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, p)
}

// SetPreferencesAPI answers PUT /api/v1/notifications/preferences: the kinds given are set,
// the others kept, and daily_digest is set as given.
func (h *Handlers) SetPreferencesAPI(c echo.Context) error {
	var p Preferences
	if err := web.DecodeJSON(c, &p); err != nil {
		return err
	}
	if err := h.svc.SetPreferences(web.Ctx(c), web.Actor(c), p); err != nil {
		return err
	}
	return h.PreferencesAPI(c)
}
