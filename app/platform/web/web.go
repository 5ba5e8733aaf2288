// Package web holds what every handler shares: the acting principal on the request, rendering
// pages and JSON, flash messages, decoding input, and the one place errors become responses.
package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"nimbus/app/kernel/access"
	"nimbus/views"
)

const (
	principalKey = "nimbus.principal"
	csrfKey      = "nimbus.csrf"
	approvalsKey = "nimbus.approvals"
	unreadKey    = "nimbus.unread"
	recheckKey   = "nimbus.recheck"
)

// Recheck resolves a request's credential (its session or token) again, to the principal it
// stands for now; problem.ErrUnauthenticated when it no longer stands for anyone. It is not a
// use of the session: a page left open does not keep its session alive.
type Recheck func(ctx context.Context) (access.Principal, error)

// SetRecheck records how to resolve the request's credential again, for handlers that outlive
// the moment it was checked, such as live streams.
func SetRecheck(c echo.Context, f Recheck) { c.Set(recheckKey, f) }

// RecheckOf returns how to resolve the request's credential again; nil when it carried none.
func RecheckOf(c echo.Context) Recheck {
	f, _ := c.Get(recheckKey).(Recheck)
	return f
}

// SetPrincipal records who the request acts as, and the CSRF token of its session ("" for
// bearer tokens, which carry no ambient credential).
func SetPrincipal(c echo.Context, p access.Principal, csrf string) {
	c.Set(principalKey, p)
	c.Set(csrfKey, csrf)
}

// Principal returns who the request acts as, if anyone.
func Principal(c echo.Context) (access.Principal, bool) {
	p, ok := c.Get(principalKey).(access.Principal)
	return p, ok
}

// Actor returns who the request acts as; only call it behind the sign-in requirement.
func Actor(c echo.Context) access.Principal {
	p, _ := Principal(c)
	return p
}

// CSRF returns the token forms on this page must carry.
func CSRF(c echo.Context) string {
	s, _ := c.Get(csrfKey).(string)
	return s
}

// IsAPI reports whether the request is for the JSON API rather than a page.
func IsAPI(c echo.Context) bool {
	return strings.HasPrefix(c.Request().URL.Path, "/api/")
}

// Page builds the frame every page shares: who is signed in, what they may see, the flash.
func Page(c echo.Context, title string) views.Page {
	page := views.Page{
		Title: title,
		Path:  c.Request().URL.Path,
		CSRF:  CSRF(c),
		Flash: takeFlash(c),
	}
	if p, ok := Principal(c); ok {
		page.Viewer = &views.Viewer{
			Email:         p.Email,
			ProviderAdmin: p.ProviderAdmin,
			SeeUsers:      p.CanSomewhere(access.UserRead),
			SeeAudit:      p.CanSomewhere(access.AuditRead),
			SeeSystem:     p.ProviderAdmin,
			Tenants:       len(p.Roles),
		}
		if count, ok := c.Get(approvalsKey).(Counter); ok {
			// The navigation goes without the figure rather than the page failing over it.
			page.Viewer.Approvals, _ = count(Ctx(c), p)
		}
		if count, ok := c.Get(unreadKey).(Counter); ok {
			page.Viewer.Unread, _ = count(Ctx(c), p)
		}
	}
	return page
}

// Counter counts something the navigation shows its viewer, such as the approvals waiting for
// them.
type Counter func(ctx context.Context, viewer access.Principal) (int, error)

// CountApprovals makes every page show in its navigation how many approvals wait for its
// viewer; the count runs only when a page is rendered.
func CountApprovals(count Counter) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			c.Set(approvalsKey, count)
			return next(c)
		}
	}
}

// CountUnread makes every page show in its header how many of its viewer's notifications
// are unread; the count runs only when a page is rendered.
func CountUnread(count Counter) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			c.Set(unreadKey, count)
			return next(c)
		}
	}
}

// Render writes a templ component as the response with the given status.
func Render(c echo.Context, status int, component templ.Component) error {
	c.Response().Header().Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
	c.Response().WriteHeader(status)
	return component.Render(c.Request().Context(), c.Response())
}

// Redirect answers a form post: htmx requests get HX-Redirect, others a 303.
func Redirect(c echo.Context, to string) error {
	if c.Request().Header.Get("HX-Request") == "true" {
		c.Response().Header().Set("HX-Redirect", to)
		return c.NoContent(http.StatusNoContent)
	}
	return c.Redirect(http.StatusSeeOther, to)
}

// Flash kinds.
const (
	FlashSuccess = "success"
	FlashError   = "error"
	FlashInfo    = "info"
)

const flashCookie = "nimbus_flash"

// SetFlash shows message on the next page the browser loads.
func SetFlash(c echo.Context, kind, message string) {
	c.SetCookie(&http.Cookie{
		Name:     flashCookie,
		Value:    url.QueryEscape(kind + "|" + message),
		Path:     "/",
		HttpOnly: true,
		SameSite: http.SameSiteLaxMode,
		Secure:   c.IsTLS(),
		MaxAge:   60,
	})
}

func takeFlash(c echo.Context) []views.Flash {
	cookie, err := c.Cookie(flashCookie)
	if err != nil || cookie.Value == "" {
		return nil
	}
	c.SetCookie(&http.Cookie{Name: flashCookie, Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteLaxMode})
	raw, err := url.QueryUnescape(cookie.Value)
	if err != nil {
		return nil
	}
	kind, msg, ok := strings.Cut(raw, "|")
	if !ok || msg == "" {
		return nil
	}
	switch kind {
	case FlashSuccess, FlashError, FlashInfo:
	default:
		kind = FlashInfo
	}
	return []views.Flash{{Kind: kind, Message: msg}}
}

// Ctx is the request's context.
func Ctx(c echo.Context) context.Context { return c.Request().Context() }
