package deployweb

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"nimbus/app/domain/component"
	"nimbus/app/domain/resolver"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/app/orchestration/deploy"
	"nimbus/app/platform/web"
	"nimbus/views"
)

// ListPage shows the deployments the viewer may see, filtered by environment, component,
// status and a part of their name, sorted by a column, a page at a time.
func (h *Handlers) ListPage(c echo.Context) error {
	f, err := filter(c, deploymentStatuses)
	if err != nil {
		return err
	}
	f.Search = strings.TrimSpace(c.QueryParam("q"))
	if f, err = sortOf(c, f, sortable); err != nil {
		return err
	}
	sort := c.QueryParam("sort")
	ctx, actor := web.Ctx(c), web.Actor(c)
	ds, err := h.svc.List(ctx, actor, f)
	if err != nil {
		return err
	}
	vf := DeploymentFilter{Status: f.Status, Statuses: deploymentStatuses, Search: f.Search, Sort: sort,
		ShowTenant: mixesTenants(actor)}
	if vf.Environment, err = h.choiceFilter(c, deploy.EnvironmentChoice, f.EnvironmentID, vf.ShowTenant); err != nil {
		return err
	}
	if vf.Component, err = h.choiceFilter(c, deploy.ComponentChoice, f.ComponentID, vf.ShowTenant); err != nil {
		return err
	}
	for _, col := range []struct{ key, label string }{{"tenant", "Tenant"}, {"environment", "Environment"}, {"name", "Name"},
		{"component", "Component"}, {"status", "Status"}} {
		if col.key != "tenant" || vf.ShowTenant {
			vf.Columns = append(vf.Columns, sortColumn(c, col.key, col.label, f))
		}
	}
	vf.Created = sortColumn(c, "created", "Created", f)
	rows := make([]DeploymentRow, len(ds))
	for i, d := range ds {
		rows[i] = DeploymentRow{ID: d.ID.String(), Environment: d.Environment, EnvironmentID: d.EnvironmentID.String(), Name: d.Name,
			Component: d.Component, ComponentID: d.ComponentID.String(), Tenant: d.Tenant, Version: d.Version, Status: string(d.Status),
			Outputs: views.Values(d.Outputs), Created: d.CreatedAt}
		if actor.Can(access.TenantRead, d.TenantID) {
			rows[i].TenantURL = "/tenants/" + d.TenantID.String()
		}
	}
	pager := web.Pager(c, web.NextPage(c, ds, f.Limit, f.DeploymentPlace))
	return web.Render(c, http.StatusOK, Deployments(web.Page(c, "Deployments"), vf, rows, pager))
}

// ChoicesFragment answers a filter's search on the deployments list (kind: environment or
// component) with the filter's choices, for htmx to put in place of the filter's own.
func (h *Handlers) ChoicesFragment(c echo.Context) error {
	f, err := filter(c, deploymentStatuses)
	if err != nil {
		return err
	}
	kind, actor := c.Param("kind"), web.Actor(c)
	chosen := f.EnvironmentID
	if kind == deploy.ComponentChoice {
		chosen = f.ComponentID
	}
	field, err := h.choiceFilter(c, kind, chosen, mixesTenants(actor))
	if err != nil {
		return err
	}
	return web.Render(c, http.StatusOK, choiceSelect(field))
}

// mixesTenants says whether the deployments the actor may list are of several tenants.
func mixesTenants(actor access.Principal) bool {
	return actor.ProviderAdmin || len(actor.TenantsWith(access.EnvironmentRead)) > 1
}

// choiceFilter is the list's filter by an environment or a component (kind): the choices whose
// name holds the filter's search (the kind_search parameter), with chosen among them.
func (h *Handlers) choiceFilter(c echo.Context, kind string, chosen uuid.UUID, showTenant bool) (ChoiceFilter, error) {
	field := ChoiceFilter{Kind: kind, Search: strings.TrimSpace(c.QueryParam(kind + "_search"))}
	if chosen != uuid.Nil {
		field.Chosen = chosen.String()
	}
	choices, err := h.svc.FilterChoices(web.Ctx(c), web.Actor(c), kind, field.Search, chosen)
	if err != nil {
		return field, err
	}
	for _, ch := range choices {
		o := views.Option{Value: ch.ID.String(), Label: ch.Name}
		if showTenant && ch.Tenant != "" {
			o.Label += " · " + ch.Tenant
		}
		field.Options = append(field.Options, o)
	}
	return field, nil
}

// The columns the deployments list and a deployment's history sort by.
var (
	sortable        = []string{"name", "environment", "component", "status", "tenant", "created"}
	historySortable = []string{"kind", "status", "by", "created"}
)

// sortOf is f in the order the request's sort parameter asks for: a column of columns, a -
// before it to reverse; -created, newest first, is a list's own order. Another column is
// refused on sort.
func sortOf(c echo.Context, f deploy.Filter, columns []string) (deploy.Filter, error) {
	sort := c.QueryParam("sort")
	f.Sort, f.Descending = strings.TrimPrefix(sort, "-"), strings.HasPrefix(sort, "-")
	if f.Sort == "created" && f.Descending {
		f.Sort, f.Descending = "", false
	}
	if f.Sort != "" && !slices.Contains(columns, f.Sort) {
		return f, problem.Invalid("sort", "enum", "must be one of %s, each with - before it to reverse", strings.Join(columns, ", "))
	}
	return f, nil
}

// sortColumn is a column heading of a list (the deployments, a deployment's history): a link
// that sorts by the column (A to Z first; the time of creation newest first), or reverses the
// order when the list is sorted by it already. The filters stay; the page starts over.
func sortColumn(c echo.Context, key, label string, f deploy.Filter) SortColumn {
	col := SortColumn{Label: label}
	by, desc := f.Sort, f.Descending
	if by == "" {
		by, desc = "created", true
	}
	next := key
	switch {
	case by == key && desc:
		col.Order = "descending"
	case by == key:
		col.Order, next = "ascending", "-"+key
	case key == "created":
		next = "-created"
	}
	q := url.Values{}
	for k, vs := range c.QueryParams() { // a copy: the request's own stay as they came
		if k != "before" {
			q[k] = vs
		}
	}
	q.Set("sort", next)
	if next == "-created" {
		q.Del("sort") // the list's own order
	}
	col.URL = c.Request().URL.Path
	if len(q) > 0 {
		col.URL += "?" + q.Encode()
	}
	return col
}

// ShowPage shows a deployment: its parameters and outputs, the forms that change it, and its
// history.
func (h *Handlers) ShowPage(c echo.Context) error {
	return h.showPage(c, nil, "", http.StatusOK)
}

// showPage renders the deployment page, with the update form's problems when formErr is one,
// and the destroy form's when destroyErr says one.
func (h *Handlers) showPage(c echo.Context, formErr error, destroyErr string, status int) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	ctx, actor := web.Ctx(c), web.Actor(c)
	d, err := h.svc.Get(ctx, actor, id)
	if err != nil {
		return err
	}
	bad := &problem.ValidationError{}
	at, limit := web.ListPosition(c, bad)
	hf, err := sortOf(c, deploy.Filter{DeploymentID: id, Before: at, Limit: limit}, historySortable)
	var badSort *problem.ValidationError
	if errors.As(err, &badSort) {
		bad.Fields = append(bad.Fields, badSort.Fields...)
	}
	if err := bad.Err(); err != nil {
		return err
	}
	ops, err := h.svc.Operations(ctx, actor, hf)
	if err != nil {
		return err
	}
	// An operation under way is among the newest: the first page of the history in its own
	// order shows it.
	newest := ops
	if hf.Sort != "" || !at.IsZero() {
		if newest, err = h.svc.Operations(ctx, actor, deploy.Filter{DeploymentID: id, Limit: 20}); err != nil {
			return err
		}
	}
	st, err := h.svc.Standing(ctx, actor, id)
	if err != nil {
		return err
	}
	v := DeploymentView{ID: d.ID.String(), Name: d.Name, Environment: d.Environment, EnvironmentID: d.EnvironmentID.String(),
		Tenant: d.Tenant, DestroyError: destroyErr, Component: d.Component, ComponentID: d.ComponentID.String(), Status: string(d.Status), Version: d.Version,
		Created: d.CreatedAt, Updated: d.UpdatedAt, Destroyed: d.Status == deploy.Destroyed,
		CanDeploy: actor.Can(access.ComponentDeploy, d.TenantID), CanDestroy: actor.Can(access.ComponentDestroy, d.TenantID),
		Outputs: views.Values(d.Outputs)}
	v.Parameters = views.Values(d.Parameters, d.SecretNames...)
	if schema := component.ParseSchema("input_schema", st.InputSchema, &problem.ValidationError{}); schema != nil {
		v.Parameters = views.Titled(v.Parameters, schema.Titles())
	}
	if v.CanDeploy && !v.CanDestroy && !v.Destroyed {
		// Someone who works with it but may not take it down is told who may.
		if v.Destroyers, err = h.svc.Destroyers(ctx, actor, id); err != nil {
			return err
		}
	}
	for _, o := range ops {
		v.Operations = append(v.Operations, operationRow(o))
	}
	for _, o := range newest {
		if o.Status == deploy.Running || o.Status == deploy.AwaitingApproval {
			row := operationRow(o)
			v.Active = &row
			break
		}
	}
	v.History = web.Pager(c, web.NextPage(c, ops, limit, hf.OperationPlace))
	for _, col := range []struct{ key, label string }{{"kind", "Operation"}, {"status", "Status"}, {"by", "By"}, {"created", "Requested"}} {
		v.HistoryColumns = append(v.HistoryColumns, sortColumn(c, col.key, col.label, hf))
	}
	for _, u := range st.Upgrades {
		v.Upgrades = append(v.Upgrades, UpgradeOption{Version: u.Version, Changelog: u.Changelog})
	}
	v.Fresh = st.Fresh
	v.Drift = driftView(d, actor)
	v.Git, v.CanSetGit = d.GitOptIns, actor.Can(access.ComponentPreview, d.TenantID) && !st.Fresh
	buttons := []FormButton{{Value: "preview", Label: "Preview"}, {Value: "update", Label: "Update", Primary: true}}
	if st.Fresh {
		buttons = []FormButton{{Value: "preview", Label: "Preview"}, {Value: "deploy", Label: "Deploy", Primary: true}}
	}
	v.Update = paramForm(st.InputSchema, d.Parameters, d.SecretNames, formErr, st.Bound, st.Resolved, st.Limits)
	for input, typ := range st.Bound {
		if resolver.Secret(typ) && slices.Contains(d.SecretNames, input) {
			v.Rotatable = append(v.Rotatable, input)
		}
	}
	slices.Sort(v.Rotatable)
	v.Update.Action, v.Update.Buttons = "/deployments/"+d.ID.String()+"/apply", buttons
	if actor.Can(access.TenantRead, d.TenantID) {
		v.TenantURL = "/tenants/" + d.TenantID.String()
	}
	page := web.Page(c, d.Name).Under(views.Crumb{Label: "Deployments", URL: "/deployments"},
		views.Crumb{Label: d.Environment, URL: "/environments/" + d.EnvironmentID.String()})
	return web.Render(c, status, DeploymentPage(page, v))
}

// driftView is the drift section of a deployment's page.
func driftView(d deploy.Deployment, actor access.Principal) DriftView {
	v := DriftView{Status: d.DriftStatus, CanCheck: actor.Can(access.ComponentPreview, d.TenantID),
		CanAccept: actor.Can(access.ComponentDeploy, d.TenantID), Slot: d.Slot != ""}
	v.CanReconcile = v.CanAccept && !v.Slot
	if d.DriftCheckedAt != nil {
		v.Checked = views.Stamp(*d.DriftCheckedAt)
	}
	for _, r := range d.Drift {
		row := ResourceRow{Name: r.Name, Type: r.Type, Op: r.Op}
		for _, ch := range r.Changes {
			row.Changes = append(row.Changes, ChangeRow{Path: ch.Path, Kind: ch.Kind, Old: views.Value(ch.Old), New: views.Value(ch.New)})
		}
		v.Resources = append(v.Resources, row)
	}
	return v
}

func operationRow(o deploy.Operation) OperationRow {
	r := OperationRow{ID: o.ID.String(), Kind: string(o.Kind), Status: string(o.Status), RequestedBy: o.RequestedBy, Error: o.Error,
		Version: o.Version, Position: o.Position, Created: o.CreatedAt}
	if o.StartedAt != nil && o.FinishedAt != nil {
		r.Took = o.FinishedAt.Sub(*o.StartedAt).Round(100 * time.Millisecond).String()
	}
	if o.RequestedBy == "" {
		r.RequestedBy = "Nimbus"
	}
	r.Summary = explain(deploy.Detail{Operation: o}, nil)
	return r
}

// ApplyForm answers the deployment page's parameter form: preview the change, or carry it out
// (deploy a pending deployment, update a deployed one). It goes on to the operation's page.
func (h *Handlers) ApplyForm(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	ctx, actor := web.Ctx(c), web.Actor(c)
	st, err := h.svc.Standing(ctx, actor, id)
	if err != nil {
		return err
	}
	params, err := formParams(c, st.InputSchema)
	if err != nil {
		return h.showPage(c, err, "", http.StatusUnprocessableEntity)
	}
	var op deploy.Operation
	switch action := c.FormValue("action"); action {
	case "preview":
		op, err = h.svc.Preview(ctx, actor, id, deploy.Change{Parameters: params})
	case "deploy":
		op, err = h.svc.Start(ctx, actor, id, deploy.Change{Parameters: params})
	case "update":
		op, err = h.svc.Update(ctx, actor, id, deploy.Change{Parameters: params, Rotate: c.Request().PostForm["rotate"]})
	default:
		err = problem.Invalid("action", "enum", "must be preview, deploy or update")
	}
	if _, input := problem.Within(problem.FieldOf(err), "parameters"); input {
		return h.showPage(c, err, "", http.StatusUnprocessableEntity)
	}
	if err != nil {
		return err
	}
	return web.Redirect(c, "/operations/"+op.ID.String())
}

// UpgradeForm previews or carries out an upgrade to the chosen version.
func (h *Handlers) UpgradeForm(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(c.FormValue("version"))
	if err != nil || n <= 0 {
		return problem.Invalid("version", "integer", "choose a version to upgrade to")
	}
	ctx, actor := web.Ctx(c), web.Actor(c)
	var op deploy.Operation
	if c.FormValue("action") == "preview" {
		op, err = h.svc.Preview(ctx, actor, id, deploy.Change{Version: n})
	} else {
		op, err = h.svc.Upgrade(ctx, actor, id, deploy.Change{Version: n})
	}
	if err != nil {
		return err
	}
	return web.Redirect(c, "/operations/"+op.ID.String())
}

// DestroyForm destroys the deployment once its name was typed to confirm.
func (h *Handlers) DestroyForm(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	ctx, actor := web.Ctx(c), web.Actor(c)
	d, err := h.svc.Get(ctx, actor, id)
	if err != nil {
		return err
	}
	if typed := strings.TrimSpace(c.FormValue("confirm")); typed != d.Name {
		msg := fmt.Sprintf("Type %s, the name of this deployment, to destroy it", d.Name)
		if typed != "" {
			msg += fmt.Sprintf(" (you typed %s)", typed)
		}
		return h.showPage(c, nil, msg+".", http.StatusUnprocessableEntity)
	}
	op, err := h.svc.Destroy(ctx, actor, id)
	if err != nil {
		return err
	}
	return web.Redirect(c, "/operations/"+op.ID.String())
}

// RefreshForm queues a refresh and follows it.
func (h *Handlers) RefreshForm(c echo.Context) error {
	return web.OnID(c, h.svc.Refresh, web.Follow(c, operationURL))
}

// DriftCheckForm queues a drift check and follows it.
func (h *Handlers) DriftCheckForm(c echo.Context) error {
	return web.OnID(c, h.svc.CheckDrift, web.Follow(c, operationURL))
}

// ReconcileForm queues the update that puts back what drifted, and follows it.
func (h *Handlers) ReconcileForm(c echo.Context) error {
	return web.OnID(c, h.svc.Reconcile, web.Follow(c, operationURL))
}

// CancelForm cancels an operation from its page, and stays there.
func (h *Handlers) CancelForm(c echo.Context) error {
	return web.OnID(c, h.svc.Cancel, web.Follow(c, operationURL))
}

// GitForm sets what the component's repository may do to the deployment, from its page.
func (h *Handlers) GitForm(c echo.Context) error {
	in := deploy.GitOptIns{PreviewFromGit: c.FormValue("preview_from_git") == "on", UpgradeOnPublish: c.FormValue("upgrade_on_publish") == "on"}
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	if _, err := h.svc.SetGitOptIns(web.Ctx(c), web.Actor(c), id, in); err != nil {
		return err
	}
	return web.Redirect(c, "/deployments/"+id.String()+"#git")
}

// GitAPI answers PUT /api/v1/deployments/{id}/git with the deployment, its opt-ins set.
func (h *Handlers) GitAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	var in deploy.GitOptIns
	if err := web.DecodeJSON(c, &in); err != nil {
		return web.Unseen(c, h.svc.Get, err)
	}
	d, err := h.svc.SetGitOptIns(web.Ctx(c), web.Actor(c), id, in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, d)
}

// ApplyPreviewForm carries out a succeeded preview, from the preview's page.
func (h *Handlers) ApplyPreviewForm(c echo.Context) error {
	return web.OnID(c, h.svc.Apply, web.Follow(c, operationURL))
}

// ApplyPreviewAPI answers POST /api/v1/operations/{id}/apply with 202 and the operation that
// carries out the preview.
func (h *Handlers) ApplyPreviewAPI(c echo.Context) error {
	return web.OnID(c, h.svc.Apply, web.Accepted[deploy.Operation](c))
}

// destroyWho tells someone who may not destroy a deployment whom to ask.
func destroyWho(d DeploymentView) string {
	if len(d.Destroyers) == 0 {
		return "Only the admins of " + d.Tenant + " may destroy " + d.Name + "; it has none yet: ask a provider admin."
	}
	return "Only the admins of " + d.Tenant + " may destroy " + d.Name + ": ask " + strings.Join(d.Destroyers, ", ") + "."
}
