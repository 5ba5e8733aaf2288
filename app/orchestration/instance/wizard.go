package instance

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"nimbus/app/domain/component"
	"nimbus/app/domain/paramform"
	"nimbus/app/domain/stack"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/lifecycle"
	"nimbus/app/kernel/problem"
	"nimbus/app/orchestration/approval"
	"nimbus/app/orchestration/deploy"
	"nimbus/app/orchestration/deploy/deployweb"
	"nimbus/app/platform/web"
	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/views"
)

// deployable is a stack as the deploy wizard offers it: its latest version, and the
// environments the actor may deploy it into.
type deployable struct {
	id           uuid.UUID
	name         string
	version      int
	def          stack.Definition
	environments []views.Option
}

// deployable reads the stack the wizard deploys; one the actor cannot see is not found.
func (h *Handlers) deployable(ctx context.Context, actor access.Principal, id uuid.UUID) (deployable, error) {
	q := db.Queries(h.svc.pool)
	st, err := q.StackToDeploy(ctx, id)
	if err != nil || st.TenantID.Valid && !actor.Can(access.EnvironmentRead, st.TenantID.UUID) {
		return deployable{}, problem.ErrNotFound
	}
	d := deployable{id: st.ID, name: st.DisplayName, version: int(st.Latest)}
	if d.name == "" {
		d.name = st.Name
	}
	if st.Latest == 0 {
		return d, problem.Invalid("version", "exists", "%s has no published version to deploy", d.name)
	}
	if d.def, err = stack.LoadVersion(ctx, q, st.ID, d.version); err != nil {
		return d, err
	}
	envs, err := q.ListEnvironments(ctx, dbgen.ListEnvironmentsParams{AllTenants: actor.ProviderAdmin, TenantIds: actor.TenantsWith(access.StackInstanceDeploy)})
	if err != nil {
		return d, err
	}
	for _, e := range envs {
		if lifecycle.EnvironmentStatus(e.Status) == lifecycle.EnvironmentActive && actor.Can(access.StackInstanceDeploy, e.TenantID) && (!st.TenantID.Valid || st.TenantID.UUID == e.TenantID) {
			d.environments = append(d.environments, views.Option{Value: e.ID.String(), Label: e.TenantName + " / " + e.Name})
		}
	}
	return d, nil
}

// WizardPage is the first step of deploying a stack: the environment, the instance's name and
// the stack's parameters.
func (h *Handlers) WizardPage(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	d, err := h.deployable(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	return h.wizard(c, d, url.Values{}, nil, http.StatusOK)
}

// WizardForm records the wizard's plan: a pending instance whose slots are previewed where
// they can be, shown on its plan page. Problems show beside the fields they name.
func (h *Handlers) WizardForm(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	ctx, actor := web.Ctx(c), web.Actor(c)
	d, err := h.deployable(ctx, actor, id)
	if err != nil {
		return err
	}
	form, err := c.FormParams()
	if err != nil {
		return problem.Invalid("form", "encoding", "the form could not be read")
	}
	params, err := paramform.Read(form, "", d.def.Parameters)
	if err != nil {
		return h.wizard(c, d, form, err, http.StatusUnprocessableEntity)
	}
	req := Request{StackID: d.id, Version: d.version, Name: strings.TrimSpace(form.Get("name")), Parameters: params, PreviewOnly: true}
	req.EnvironmentID, _ = uuid.Parse(form.Get("environment_id")) // none chosen: check and Deploy say so
	if err := check(d, req); err != nil {
		return h.wizard(c, d, form, err, http.StatusUnprocessableEntity)
	}
	inst, err := h.svc.Deploy(ctx, actor, req)
	if web.FormErrors(err) != nil {
		return h.wizard(c, d, form, err, http.StatusUnprocessableEntity)
	}
	if err != nil {
		return err
	}
	return web.Redirect(c, "/stack-instances/"+inst.ID.String()+"/plan")
}

// check refuses a request the service would refuse for its name or parameters, before the
// plan is shown; the service checks it all again when it deploys.
func check(d deployable, req Request) error {
	v := &problem.ValidationError{}
	if !instanceName.MatchString(req.Name) {
		v.Add("name", "pattern", "must be 1–19 lower-case letters, digits and -, starting with a letter")
	}
	if !slices.ContainsFunc(d.environments, func(o views.Option) bool { return o.Value == req.EnvironmentID.String() }) {
		v.Add("environment_id", "exists", "choose an active environment you may deploy into")
	}
	schema := component.ParseSchema("parameters", d.def.Parameters, v)
	schema.Apply("parameters", req.Parameters, v)
	return v.Err()
}

// wizard renders the wizard's form filled with what was typed, err's problems beside the
// fields.
func (h *Handlers) wizard(c echo.Context, d deployable, form url.Values, err error, status int) error {
	errs := web.FormErrors(err)
	values := paramform.Given(form, "")
	params, ok := paramform.Layout("", d.def.Parameters, values, errs)
	if !ok {
		params.Error = "this stack's parameters cannot be read"
	}
	params.Empty = "This stack takes no parameters."
	for i := range params.Fields {
		f := &params.Fields[i]
		if _, given := values[f.Name]; !given && f.HasDefault {
			f.Value = f.Default
		}
		switch f.Kind {
		case "secret":
			f.Kind = "password"
		case "boolean":
			f.Kind, f.Checked = "checkbox", f.Value == "true"
		}
	}
	v := WizardView{StackID: d.id.String(), Stack: d.name, Version: d.version, Environments: d.environments,
		Environment: form.Get("environment_id"), Name: form.Get("name"), Params: params, Errors: errs}
	for _, k := range views.SortedErrorKeys(errs) {
		if k != "name" && k != "environment_id" && !strings.HasPrefix(k, "parameters.") {
			v.Others = append(v.Others, k+": "+errs[k])
		}
	}
	return web.Render(c, status, WizardPage(wizardPage(c, d), v))
}

func wizardPage(c echo.Context, d deployable) views.Page {
	return web.Page(c, "Deploy "+d.name).Under(views.Crumb{Label: "Stack instances", URL: "/stack-instances"})
}

// PlanPage shows a pending instance's plan: its slots in the groups that deploy at once, each
// slot's preview as it comes (the part reloads itself while one runs), and where each slot's
// inputs come from; with Deploy, Edit and Discard. An instance no longer pending has its own
// page.
func (h *Handlers) PlanPage(c echo.Context) error { return h.planPage(c, "", http.StatusOK) }

func (h *Handlers) planPage(c echo.Context, refused string, status int) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	ctx, actor := web.Ctx(c), web.Actor(c)
	inst, err := h.svc.Get(ctx, actor, id)
	if err != nil {
		return err
	}
	switch {
	case inst.Status != lifecycle.InstancePending && refused != "":
		return h.showPage(c, refusals{action: refused}, status)
	case inst.Status != lifecycle.InstancePending:
		return c.Redirect(http.StatusSeeOther, "/stack-instances/"+id.String())
	}
	q := db.Queries(h.svc.pool)
	def, err := stack.LoadVersion(ctx, q, inst.StackID, inst.Version)
	if err != nil {
		return err
	}
	layers, groups := slotLayers(def, inst.Slots)
	ids := make([]uuid.UUID, len(def.Slots))
	for i, s := range def.Slots {
		ids[i] = s.Component
	}
	names, err := q.ComponentNames(ctx, ids)
	if err != nil {
		return err
	}
	component := map[uuid.UUID]string{}
	for _, n := range names {
		component[n.ID] = n.Name
	}
	for _, layer := range layers {
		for i := range layer {
			sl, _ := def.Slot(layer[i].Name)
			layer[i].Note = fmt.Sprintf("%s v%d", component[sl.Component], sl.Version)
		}
	}
	// What the wiring gave was worked out when the plan was made: a view evaluates nothing.
	planned, kept, err := plannedWiring(ctx, q, inst.ID)
	if err != nil {
		return err
	}
	need, err := approval.Needed(ctx, q, string(deploy.KindDeploy), ids, inst.EnvironmentID)
	if err != nil {
		return err
	}
	v := PlanView{ID: inst.ID.String(), Stack: stackLabel(inst), Version: inst.Version, Name: inst.Name,
		Environment: inst.TenantName + " / " + inst.EnvironmentName, Layers: layers, Groups: groups, Error: refused,
		Live: c.Request().URL.Path, WiringNotKept: !kept, Approval: approvalWords(need)}
	for _, sl := range def.Slots {
		for _, input := range slices.Sorted(maps.Keys(sl.Inputs)) {
			v.Wiring = append(v.Wiring, wiringRow(sl, input, planned[sl.Name]))
		}
	}
	for _, sl := range inst.Slots {
		row, err := h.slotPreview(ctx, actor, def, sl)
		if err != nil {
			return err
		}
		row.Component = fmt.Sprintf("%s v%d", component[sl.ComponentID], sl.Version)
		if row.Status != "" && !deploy.Status(row.Status).Ended() {
			v.Busy = true
		}
		v.Slots = append(v.Slots, row)
	}
	page := web.Page(c, "Plan of "+inst.Name).Under(views.Crumb{Label: "Stack instances", URL: "/stack-instances"})
	return web.Render(c, status, PlanPage(page, v))
}

// slotPreview is what the plan shows of one slot: its preview as it stands, or the slots whose
// outputs it waits for.
func (h *Handlers) slotPreview(ctx context.Context, actor access.Principal, def stack.Definition, sl Slot) (SlotPreview, error) {
	row := SlotPreview{Slot: sl.Name}
	if sl.Preview == nil {
		if s, ok := def.Slot(sl.Name); ok {
			row.Waits = s.Upstream()
		}
		return row, nil
	}
	d, err := h.svc.run.deploys.Detail(ctx, actor, sl.Preview.OperationID)
	if err != nil {
		return row, err
	}
	row.OperationID, row.Status, row.Error = d.ID.String(), string(d.Status), d.Error
	if d.Status == deploy.Succeeded {
		row.Rows, row.Summary = deployweb.Planned(d)
	}
	return row, nil
}

// StartForm deploys the pending instance from its plan, and goes on to its page.
func (h *Handlers) StartForm(c echo.Context) error {
	return h.actOnPlan(c, func(ctx context.Context, actor access.Principal, id uuid.UUID) (string, error) {
		_, err := h.svc.Start(ctx, actor, id, false)
		return "/stack-instances/" + id.String(), err
	})
}

// DiscardForm lets the pending instance go, and goes back to the list.
func (h *Handlers) DiscardForm(c echo.Context) error {
	return h.actOnPlan(c, func(ctx context.Context, actor access.Principal, id uuid.UUID) (string, error) {
		_, err := h.svc.Discard(ctx, actor, id)
		return "/stack-instances", err
	})
}

// actOnPlan does what a button of the plan asks and goes where it says; a refusal is said on
// the plan, in words.
func (h *Handlers) actOnPlan(c echo.Context, do func(context.Context, access.Principal, uuid.UUID) (string, error)) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	to, err := do(web.Ctx(c), web.Actor(c), id)
	if errs := web.FormErrors(err); errs != nil {
		var words []string
		for _, k := range views.SortedErrorKeys(errs) {
			words = append(words, errs[k])
		}
		return h.planPage(c, strings.Join(words, " "), http.StatusUnprocessableEntity)
	}
	if err != nil {
		return err
	}
	return web.Redirect(c, to)
}

// EditForm goes back from a plan to the wizard's form, filled with the plan's values (secret
// ones are typed again), and lets the pending instance go: planning again records a new one.
func (h *Handlers) EditForm(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	ctx, actor := web.Ctx(c), web.Actor(c)
	inst, err := h.svc.Discard(ctx, actor, id)
	if errs := web.FormErrors(err); errs != nil {
		return h.planPage(c, errs["instance"], http.StatusUnprocessableEntity)
	}
	if err != nil {
		return err
	}
	d, err := h.deployable(ctx, actor, inst.StackID)
	if err != nil {
		return err
	}
	form := url.Values{"environment_id": {inst.EnvironmentID.String()}, "name": {inst.Name}}
	paramform.Fill(form, "", d.def.Parameters, inst.Parameters)
	return h.wizard(c, d, form, nil, http.StatusOK)
}

// wiringRow says where one input of a slot comes from, in words, with the value the plan
// worked out for it where the parameters alone give it (no secret shown).
func wiringRow(sl stack.Slot, input string, known map[string]any) WiringRow {
	w := sl.Inputs[input]
	row := WiringRow{Slot: sl.Name, Input: input}
	switch w.Kind {
	case stack.Literal:
		row.Kind, row.From = "literal", views.Value(w.Value)
	case stack.Param:
		row.Kind, row.From = "parameter", w.Param
	case stack.Output:
		row.Kind, row.From = "output", w.Slot+"."+w.Output
	case stack.Expression:
		row.Kind, row.From = "expression", w.Expr
	}
	if v, ok := known[input]; ok && w.Kind != stack.Literal {
		row.Value = views.Value(v)
	}
	return row
}

// approvalWords says before one deploys what approval the deploy waits for: one request for
// the whole run, however many of its slots the policies bind.
func approvalWords(n approval.Need) string {
	if n.Approvals == 0 {
		return ""
	}
	count := "one approval"
	if n.Approvals > 1 {
		count = fmt.Sprintf("%d approvals", n.Approvals)
	}
	who := "other than whoever deploys"
	if n.RequesterMayApprove {
		who = "whoever deploys may give it too"
	}
	return fmt.Sprintf("Deploying waits for one approval of the whole run: %s from the %s role or higher (%s).",
		count, strings.ToLower(n.Role.Label()), who)
}
