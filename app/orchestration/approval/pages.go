package approval

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/cursor"
	"nimbus/app/kernel/problem"
	"nimbus/app/orchestration/deploy/deployweb"
	"nimbus/app/platform/web"
	"nimbus/views"
)

// recent is how many decided requests the queue shows.
const recent = 20

// QueuePage shows the pending requests the viewer may decide, the others pending, and the
// latest decided ones.
func (h *Handlers) QueuePage(c echo.Context) error {
	pending, done, err := h.svc.Queue(web.Ctx(c), web.Actor(c), recent)
	if err != nil {
		return err
	}
	sort := views.SortOf("/approvals", c.QueryParams(), "-requested", "deployment", "tenant", "requested_by", "requested", "expires")
	var waiting, others, decided []ApprovalRow
	for _, r := range pending {
		if r.CanDecide {
			waiting = append(waiting, row(r))
		} else {
			others = append(others, row(r))
		}
	}
	for _, r := range done {
		decided = append(decided, row(r))
	}
	for _, rows := range [][]ApprovalRow{waiting, others, decided} {
		views.SortRows(rows, sort, approvalOrders())
	}
	more := len(pending) == cursor.DefaultRows
	return web.Render(c, http.StatusOK, ApprovalQueue(web.Page(c, "Approvals"), sort, waiting, others, decided, more))
}

// approvalOrders are the orders the queue's tables can be sorted in.
func approvalOrders() map[string]func(a, b ApprovalRow) int {
	return map[string]func(a, b ApprovalRow) int{
		"deployment": func(a, b ApprovalRow) int {
			return views.Fold(a.Deployment, b.Deployment)
		},
		"tenant": func(a, b ApprovalRow) int {
			return views.Fold(a.Tenant, b.Tenant)
		},
		"requested_by": func(a, b ApprovalRow) int { return strings.Compare(a.RequestedBy, b.RequestedBy) },
		"requested":    func(a, b ApprovalRow) int { return a.Created.Compare(b.Created) },
		"expires":      func(a, b ApprovalRow) int { return a.Expires.Compare(b.Expires) },
	}
}

func row(r Request) ApprovalRow {
	out := ApprovalRow{ID: r.ID.String(), OperationID: r.OperationID.String(), DeploymentID: r.DeploymentID.String(),
		Kind: r.Kind, Deployment: r.Deployment, Environment: r.Environment, EnvironmentID: r.EnvironmentID.String(),
		Tenant: r.Tenant, TenantID: r.TenantID.String(), RequestedBy: r.RequestedBy,
		Status: string(r.Status), Role: string(r.ApproverRole), Created: r.CreatedAt, Expires: r.ExpiresAt, Decided: r.DecidedAt,
		Approvals: r.Approvals, Required: r.ApprovalsRequired, StackInstance: r.StackInstance, Slot: r.Slot}
	if r.StackInstanceID != nil {
		out.StackInstanceID = r.StackInstanceID.String()
	}
	out.Run = r.RunID != nil
	if out.RequestedBy == "" {
		out.RequestedBy = "Nimbus"
	}
	return out
}

// ShowPage shows a request: the plan of its operation's preview, the parameters it applies
// (secrets masked), the decisions so far, and the form to approve or reject it.
func (h *Handlers) ShowPage(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	actor := web.Actor(c)
	d, plan, err := h.detail(web.Ctx(c), actor, id)
	if err != nil {
		return err
	}
	v := ApprovalView{ApprovalRow: row(d.Request), Version: d.Version, Previewed: d.PreviewedAt,
		CanDecide: d.CanDecide, Why: whyNot(actor, d), Own: d.RequesterMayApprove}
	v.Resources, _, _ = deployweb.ResourceRows(plan.Resources)
	v.Policy = plan.Policy
	v.Parameters = views.Values(d.Parameters)
	for _, x := range d.Decisions {
		v.Decisions = append(v.Decisions, DecisionRow{By: x.By, Decision: past(x.Decision), Comment: x.Comment, At: x.At})
	}
	for _, sl := range d.Slots {
		sv := SlotView{Slot: sl.Slot, OperationID: sl.OperationID.String(), Kind: sl.Kind, Status: sl.Status, Deployment: sl.Deployment,
			DeploymentID: sl.DeploymentID.String(), Version: sl.Version, Parameters: views.Values(sl.Parameters), Policy: sl.Policy}
		sv.Resources, _, _ = deployweb.ResourceRows(sl.Resources)
		v.Slots = append(v.Slots, sv)
	}
	title := "The " + d.Kind + " of " + d.Deployment
	if v.Run {
		title = "The " + d.Kind + " run of " + d.StackInstance
	}
	page := web.Page(c, title).Under(views.Crumb{Label: "Approvals", URL: "/approvals"})
	return web.Render(c, http.StatusOK, ApprovalPage(page, v))
}

// whyNot says what keeps the viewer from deciding a pending request.
func whyNot(actor access.Principal, d Detail) string {
	if d.Status != Pending || d.CanDecide {
		return ""
	}
	if slices.ContainsFunc(d.Decisions, func(x Decision) bool { return x.By == actor.Email }) {
		return "You have decided on this request; it waits for others."
	}
	var denied *problem.Denied
	if err := mayDecide(actor, d.TenantID, d.requester, d.ApproverRole, d.RequesterMayApprove); errors.As(err, &denied) {
		return denied.Message
	}
	return ""
}

// ApproveForm approves from the request's page, and stays there.
func (h *Handlers) ApproveForm(c echo.Context) error {
	return h.decideForm(c, h.svc.Approve, "Approved.")
}

// RejectForm rejects from the request's page, and stays there.
func (h *Handlers) RejectForm(c echo.Context) error {
	return h.decideForm(c, h.svc.Reject, "Rejected: the operation has ended without running.")
}

// decideForm decides, and shows the request again with what came of it: a refusal (a second
// decision, an expired request) as an error message rather than an error page.
func (h *Handlers) decideForm(c echo.Context, decide decideFunc, done string) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	d, err := decide(web.Ctx(c), web.Actor(c), id, c.FormValue("comment"))
	msg, refused := refusal(err)
	switch {
	case refused:
		web.SetFlash(c, web.FlashError, msg)
	case err != nil:
		return err
	case d.Status == Approved:
		web.SetFlash(c, web.FlashSuccess, "Approved: the operation goes on.")
	default:
		web.SetFlash(c, web.FlashSuccess, done)
	}
	return web.Redirect(c, "/approvals/"+id.String())
}

// refusal is the message of a refusal the person can act on.
func refusal(err error) (string, bool) {
	var (
		v      *problem.ValidationError
		denied *problem.Denied
	)
	switch {
	case errors.As(err, &v):
		msgs := make([]string, len(v.Fields))
		for i, f := range v.Fields {
			msgs[i] = f.Message
		}
		return strings.Join(msgs, "; "), true
	case errors.As(err, &denied):
		return denied.Message, true
	}
	return "", false
}

// PoliciesPage lists the policies and offers the form to make one.
func (h *Handlers) PoliciesPage(c echo.Context) error {
	// A link from a landing zone or an environment names it, so the form starts there.
	return h.policiesPage(c, PolicyForm{Approvals: "1", Role: string(access.TenantAdmin), Operations: []string{"destroy"},
		Scope: c.QueryParam("scope"), ScopeID: c.QueryParam("scope_id")}, http.StatusOK)
}

func (h *Handlers) policiesPage(c echo.Context, f PolicyForm, status int) error {
	ctx, actor := web.Ctx(c), web.Actor(c)
	list, err := h.svc.Policies(ctx, actor)
	if err != nil {
		return err
	}
	choices, err := h.svc.ScopeChoices(ctx, actor)
	if err != nil {
		return err
	}
	rows := make([]PolicyRow, len(list))
	for i, p := range list {
		rows[i] = PolicyRow{ID: p.ID.String(), Scope: p.Scope, ScopeName: p.ScopeName, ScopeURL: scopeURL(actor, p), Operations: strings.Join(p.Operations, ", "),
			Role: string(p.ApproverRole), CreatedBy: p.CreatedBy, ByProviderAdmin: p.SetByProviderAdmin, Approvals: p.ApprovalsRequired,
			CanDelete: p.MayDelete(actor), Own: p.RequesterMayApprove}
	}
	for _, ch := range choices {
		f.Choices = append(f.Choices, ScopeChoice{Scope: ch.Scope, ID: ch.ID.String(), Name: ch.Name})
		if !slices.ContainsFunc(f.Scopes, func(o views.Option) bool { return o.Value == ch.Scope }) {
			f.Scopes = append(f.Scopes, views.Option{Value: ch.Scope, Label: scopeLabel(ch.Scope)})
		}
	}
	if f.Scope == "" && len(f.Scopes) > 0 {
		f.Scope = f.Scopes[0].Value
	}
	for _, op := range Operations {
		f.AllOperations = append(f.AllOperations, views.Option{Value: op, Label: op})
	}
	for _, r := range ApproverRoles {
		f.Roles = append(f.Roles, views.Option{Value: string(r), Label: r.Label()})
	}
	page := web.Page(c, "Approval policies").Under(views.Crumb{Label: "Approvals", URL: "/approvals"})
	return web.Render(c, status, ApprovalPolicies(page, rows, f))
}

// scopeURL is the page of what a policy applies to, where the viewer has one.
func scopeURL(actor access.Principal, p Policy) string {
	switch p.Scope {
	case "environment":
		return "/environments/" + p.ScopeID.String()
	case "component":
		return "/components/" + p.ScopeID.String()
	case "landing_zone":
		if actor.ProviderAdmin {
			return "/landing-zones/" + p.ScopeID.String()
		}
	}
	return ""
}

func scopeLabel(scope string) string {
	switch scope {
	case "landing_zone":
		return "Landing zone"
	case "environment":
		return "Environment"
	}
	return "Component"
}

// CreatePolicyForm makes a policy from the form; problems come back beside their fields.
func (h *Handlers) CreatePolicyForm(c echo.Context) error {
	form, err := c.FormParams()
	if err != nil {
		return problem.Invalid("form", "encoding", "the form could not be read")
	}
	f := PolicyForm{Scope: form.Get("scope"), ScopeID: form.Get("scope_id"), Role: form.Get("approver_role"),
		Approvals: form.Get("approvals_required"), Operations: form["operations"], Own: form.Get("requester_may_approve") == "true"}
	// Not a number is out of range: refused with the other problems of the form.
	n, convErr := strconv.Atoi(strings.TrimSpace(f.Approvals))
	in := NewPolicy{Scope: f.Scope, ScopeID: f.ScopeID, Operations: f.Operations, ApproverRole: f.Role, ApprovalsRequired: &n,
		RequesterMayApprove: f.Own}
	_, err = h.svc.CreatePolicy(web.Ctx(c), web.Actor(c), in)
	if errs := web.FormErrors(err); errs != nil {
		if convErr != nil {
			errs["approvals_required"] = "enter a number from 1 to 10"
		}
		f.Errors = views.Errors{}
		for field, msg := range errs {
			// One message beside the checkboxes, whichever of them broke the rule.
			if strings.HasPrefix(field, "operations[") {
				field = "operations"
			}
			f.Errors[field] = msg
		}
		return h.policiesPage(c, f, http.StatusUnprocessableEntity)
	}
	if err != nil {
		return err
	}
	web.SetFlash(c, web.FlashSuccess, "Policy created.")
	return web.Redirect(c, "/approval-policies")
}

// DeletePolicyForm deletes a policy from the list; a refusal that says why (a provider admin's
// policy) comes back as a message above the list.
func (h *Handlers) DeletePolicyForm(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	err = h.svc.DeletePolicy(web.Ctx(c), web.Actor(c), id)
	var denied *problem.Denied
	switch {
	case errors.As(err, &denied):
		web.SetFlash(c, web.FlashError, "Not deleted: "+denied.Message+".")
	case err != nil:
		return err
	default:
		web.SetFlash(c, web.FlashSuccess, "Policy deleted.")
	}
	return web.Redirect(c, "/approval-policies")
}
