package audit

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"nimbus/app/problem"
	"nimbus/app/web"
	"nimbus/db/dbgen"
	"nimbus/views"
)

// Handlers serves the audit page and API.
type Handlers struct{ svc *Service }

// NewHandlers returns the handlers for svc.
func NewHandlers(svc *Service) *Handlers { return &Handlers{svc: svc} }

// parseFilter reads the filter from the query; times are RFC 3339 or the browser's
// datetime-local form, taken as UTC.
func parseFilter(c echo.Context) (Filter, AuditFilter, error) {
	form := AuditFilter{
		Actor: c.QueryParam("actor"), Action: c.QueryParam("action"), Target: c.QueryParam("target"),
		Since: c.QueryParam("since"), Until: c.QueryParam("until"),
	}
	f := Filter{Actor: form.Actor, Action: form.Action, Target: form.Target}
	v := &problem.ValidationError{}
	for _, p := range []struct {
		name, raw string
		dst       **time.Time
	}{{"since", form.Since, &f.Since}, {"until", form.Until, &f.Until}} {
		if p.raw == "" {
			continue
		}
		t, err := parseTime(p.raw)
		if err != nil {
			v.Add(p.name, "datetime", "must be a time such as 2026-01-31T14:00 or 2026-01-31T14:00:00Z")
			continue
		}
		*p.dst = &t
	}
	if raw := c.QueryParam("before"); raw != "" {
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || n < 1 {
			v.Add("before", "integer", "must be an event ID")
		}
		f.BeforeID = n
	}
	if raw := c.QueryParam("limit"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > 200 {
			v.Add("limit", "range", "must be a whole number from 1 to 200")
		}
		f.Limit = n
	}
	return f, form, v.Err()
}

func parseTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.ParseInLocation("2006-01-02T15:04", s, time.UTC)
}

// Page shows the audit log with filters and paging.
func (h *Handlers) Page(c echo.Context) error {
	f, form, err := parseFilter(c)
	if errs := web.FormErrors(err); errs != nil {
		return web.Render(c, http.StatusUnprocessableEntity, Audit(web.Page(c, "Audit log"), nil, form, views.Pager{}, errs))
	}
	page, err := h.svc.List(web.Ctx(c), web.Actor(c), f)
	if err != nil {
		return err
	}
	pager := views.Pager{}
	if page.NextBefore > 0 {
		q := c.QueryParams()
		q.Set("before", strconv.FormatInt(page.NextBefore, 10))
		pager.NextURL = "/audit?" + q.Encode()
	}
	if f.BeforeID > 0 {
		q := url.Values{}
		for k, vs := range c.QueryParams() {
			if k != "before" {
				q[k] = vs
			}
		}
		pager.PrevURL = strings.TrimSuffix("/audit?"+q.Encode(), "?")
	}
	return web.Render(c, http.StatusOK, Audit(web.Page(c, "Audit log"), eventRows(page.Events), form, pager, nil))
}

// ListAPI answers GET /api/v1/audit-events with the same filters; next_before pages on.
func (h *Handlers) ListAPI(c echo.Context) error {
	f, _, err := parseFilter(c)
	if err != nil {
		return err
	}
	page, err := h.svc.List(web.Ctx(c), web.Actor(c), f)
	if err != nil {
		return err
	}
	out := map[string]any{"events": page.Events}
	if page.NextBefore > 0 {
		out["next_before"] = page.NextBefore
	}
	return c.JSON(http.StatusOK, out)
}

func eventRows(events []dbgen.AuditEvent) []EventRow {
	rows := make([]EventRow, len(events))
	for i, e := range events {
		rows[i] = EventRow{CreatedAt: e.CreatedAt, ActorEmail: e.ActorEmail, Action: e.Action,
			TargetType: e.TargetType, TargetID: e.TargetID, Diff: string(e.Diff)}
	}
	return rows
}
