package audit

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"nimbus/app/kernel/cursor"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/web"
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
		if err != nil || n < 1 || n > cursor.MaxRows {
			v.Add("limit", "range", "must be a whole number from 1 to %d", cursor.MaxRows)
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
	names, err := h.svc.names(web.Ctx(c), page.Events)
	if err != nil {
		return err
	}
	return web.Render(c, http.StatusOK, Audit(web.Page(c, "Audit log"), eventRows(page.Events, names), form, pager, nil))
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

func eventRows(events []Entry, names []Names) []EventRow {
	rows := make([]EventRow, len(events))
	for i, e := range events {
		rows[i] = EventRow{CreatedAt: e.CreatedAt, ActorEmail: e.ActorEmail, Action: e.Action,
			Target: linkTo(names[i].Target), Changes: changes(e.Diff)}
		if names[i].Tenant.ID != "" {
			rows[i].Tenant = linkTo(names[i].Tenant)
		}
	}
	return rows
}

// changes lists what an event recorded as key and value, the redacted ones masked.
func changes(diff []byte) []views.KeyValue {
	var m map[string]any
	if err := json.Unmarshal(diff, &m); err != nil {
		return []views.KeyValue{{Key: "change", Value: string(diff)}}
	}
	var redacted []string
	for k, v := range m {
		if v == redactedValue {
			redacted = append(redacted, k)
		}
	}
	kvs := views.Values(m, redacted...)
	for i := range kvs {
		kvs[i].Key = strings.ReplaceAll(kvs[i].Key, "_", " ")
	}
	return kvs
}

// linkTo is where a target is shown: its own page, or the list that holds it when it
// has none; its name, or its kind and short ID when it has none or is gone.
func linkTo(t Target) TargetLink {
	kind := strings.ReplaceAll(t.Type, "_", " ")
	out := TargetLink{Kind: kind, Name: t.Name, ID: t.ID}
	// A target that is gone has no page to go to.
	switch {
	case out.Name == "":
		out.Name = kind + " " + short(t.ID)
		return out
	case t.Deleted:
		out.Name += " (deleted)"
		return out
	}
	switch t.Type {
	case "tenant":
		out.URL = "/tenants/" + t.ID
	case "membership":
		tenant, _, _ := strings.Cut(t.ID, "/")
		out.URL = "/tenants/" + tenant
	case "user":
		out.URL = "/users"
	case "component":
		out.URL = "/components/" + t.ID
	case "deployment":
		out.URL = "/deployments/" + t.ID
	case "operation":
		out.URL = "/operations/" + t.ID
	case "environment":
		out.URL = "/environments/" + t.ID
	case "landing_zone":
		out.URL = "/landing-zones/" + t.ID
	case "ipam_pool":
		out.URL = "/ipam/pools/" + t.ID
	case "approval_request":
		out.URL = "/approvals/" + t.ID
	case "api_token":
		out.URL = "/tokens"
	case "image":
		out.URL = "/images"
	case "provider", "semantic_type", "resource_type":
		out.URL = "/admin/providers"
	}
	return out
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
