package event

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"nimbus/app/kernel/cursor"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/web"
	"nimbus/views"
)

// scope says whose events alone the page shows, or "" for all the viewer may see.
func (f LogFilter) scope() string {
	switch {
	case f.Instance != "":
		return "one stack instance"
	case f.Environment != "":
		return "one environment"
	case f.Tenant != "":
		return "one tenant"
	}
	return ""
}

// LogPageHandler answers GET /events: the log for the viewer, filtered like the API, the first
// page kept up to date as events come.
func (h *Handlers) LogPageHandler(c echo.Context) error {
	form := LogFilter{Type: c.QueryParam("type"), Outcome: c.QueryParam("outcome"), Environment: c.QueryParam("environment_id"),
		Instance: c.QueryParam("stack_instance_id"), Tenant: c.QueryParam("tenant_id")}
	f := Filter{Type: form.Type, Outcome: form.Outcome}
	v := &problem.ValidationError{}
	for name, p := range map[string]struct {
		raw string
		dst *uuid.UUID
	}{"environment_id": {form.Environment, &f.Environment}, "stack_instance_id": {form.Instance, &f.Instance}, "tenant_id": {form.Tenant, &f.Tenant}} {
		if p.raw == "" {
			continue
		}
		id, err := uuid.Parse(p.raw)
		if err != nil {
			v.Add(name, "uuid", "must be an ID")
		}
		*p.dst = id
	}
	after, err := cursor.Parse(c.QueryParam("after"))
	if err != nil {
		v.Add("after", "cursor", "must be the next token of an earlier page")
	}
	f.After, f.Limit = after, 50
	choices := []views.Option{{Value: "", Label: "any"}}
	for _, o := range outcomes {
		choices = append(choices, views.Option{Value: o, Label: o})
	}
	page := web.Page(c, "Events")
	if errs := web.FormErrors(v.Err()); errs != nil {
		return web.Render(c, http.StatusUnprocessableEntity, LogPage(page, nil, form, choices, views.Pager{}, "", errs))
	}
	list, err := h.svc.List(web.Ctx(c), web.Actor(c), f)
	if errs := web.FormErrors(err); errs != nil {
		return web.Render(c, http.StatusUnprocessableEntity, LogPage(page, nil, form, choices, views.Pager{}, "", errs))
	}
	if err != nil {
		return err
	}
	rows := make([]LogRow, len(list.Events))
	for i, e := range list.Events {
		rows[i] = LogRow{ReceivedAt: e.ReceivedAt, Source: e.Source, Type: e.Type, Subject: e.Subject, Instance: e.InstanceNm,
			Outcome: e.Outcome, Detail: e.Detail, Trigger: e.Trigger, Rule: e.Rule, RunStatus: e.RunStatus, Payload: indent(e.Payload)}
		if rows[i].Source == "" {
			rows[i].Source = e.SourceKind
		}
		if e.Instance != nil {
			rows[i].InstanceURL = "/stack-instances/" + e.Instance.String()
		}
	}
	q := c.QueryParams()
	pager, live := views.Pager{}, ""
	if list.Next != "" {
		next := url.Values{}
		for k, vs := range q {
			next[k] = vs
		}
		next.Set("after", list.Next)
		pager.NextURL = "/events?" + next.Encode()
	}
	if after.IsZero() {
		live = "/events?" + q.Encode()
	} else {
		first := url.Values{}
		for k, vs := range q {
			if k != "after" {
				first[k] = vs
			}
		}
		pager.PrevURL = "/events?" + first.Encode()
	}
	return web.Render(c, http.StatusOK, LogPage(page, rows, form, choices, pager, live, nil))
}

func indent(raw json.RawMessage) string {
	var out bytes.Buffer
	if json.Indent(&out, raw, "", "  ") != nil {
		return string(raw)
	}
	return out.String()
}
