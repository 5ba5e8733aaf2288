package instance

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"nimbus/app/domain/component"
	"nimbus/app/domain/paramform"
	"nimbus/app/domain/stack"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/graph"
	"nimbus/app/kernel/lifecycle"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/web"
	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/views"
)

// ListPage shows the stack instances the viewer may see, newest first, filtered by
// environment, stack and status.
func (h *Handlers) ListPage(c echo.Context) error {
	ctx, actor := web.Ctx(c), web.Actor(c)
	f, err := filterOf(c)
	if err != nil {
		return err
	}
	list, err := h.svc.List(ctx, actor, f)
	if err != nil {
		return err
	}
	q := db.Queries(h.svc.pool)
	envs, err := q.ListEnvironments(ctx, dbgen.ListEnvironmentsParams{AllTenants: actor.ProviderAdmin, TenantIds: actor.TenantsWith(access.EnvironmentRead)})
	if err != nil {
		return err
	}
	stacks, err := q.StackChoices(ctx, dbgen.StackChoicesParams{AllTenants: actor.ProviderAdmin, TenantIds: actor.TenantsWith(access.EnvironmentRead)})
	if err != nil {
		return err
	}
	lf := ListFilter{Environment: c.QueryParam("environment_id"), Stack: c.QueryParam("stack_id"), Status: f.Status, Statuses: statuses}
	for _, e := range envs {
		lf.Environments = append(lf.Environments, views.Option{Value: e.ID.String(), Label: e.TenantName + " / " + e.Name})
	}
	for _, s := range stacks {
		lf.Stacks = append(lf.Stacks, views.Option{Value: s.ID.String(), Label: s.Name})
		if s.Published && actor.CanSomewhere(access.StackInstanceDeploy) {
			label := s.DisplayName
			if label == "" {
				label = s.Name
			}
			lf.Deployable = append(lf.Deployable, views.Option{Value: "/stacks/" + s.ID.String() + "/deploy", Label: label})
		}
	}
	rows := make([]InstanceRow, len(list))
	for i, in := range list {
		rows[i] = InstanceRow{ID: in.ID.String(), Name: in.Name, Stack: in.StackName, Version: in.Version, Environment: in.EnvironmentName,
			EnvironmentID: in.EnvironmentID.String(), Tenant: in.TenantName, Status: string(in.Status), State: in.State, Created: in.CreatedAt}
	}
	return web.Render(c, http.StatusOK, InstancesPage(web.Page(c, "Stack instances"), lf, rows))
}

// ShowPage shows a stack instance: its slots drawn as a graph with their statuses, outputs and
// deployments, its parameters, its state machine at the current state, its runs and its
// history of states. While a run is under way the page reloads its live part every two
// seconds.
func (h *Handlers) ShowPage(c echo.Context) error { return h.showPage(c, refusals{}, http.StatusOK) }

// refusals are what the page says was refused of what was last asked of it.
type refusals struct {
	destroy, action string
}

func (h *Handlers) showPage(c echo.Context, refused refusals, status int) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	ctx, actor := web.Ctx(c), web.Actor(c)
	inst, err := h.svc.Get(ctx, actor, id)
	if err != nil {
		return err
	}
	if inst.Status == lifecycle.InstancePending && refused == (refusals{}) {
		return c.Redirect(http.StatusSeeOther, "/stack-instances/"+id.String()+"/plan")
	}
	runs, err := h.svc.Runs(ctx, actor, id)
	if err != nil {
		return err
	}
	q := db.Queries(h.svc.pool)
	def, err := stack.LoadVersion(ctx, q, inst.StackID, inst.Version)
	if err != nil {
		return err
	}
	history, err := q.StackStateHistory(ctx, id)
	if err != nil {
		return fmt.Errorf("read the states of %s: %w", inst.Name, err)
	}
	v := InstanceView{ID: inst.ID.String(), Name: inst.Name, Tenant: inst.TenantName, Environment: inst.EnvironmentName,
		EnvironmentID: inst.EnvironmentID.String(), Stack: stackLabel(inst), StackID: inst.StackID.String(), Version: inst.Version,
		Status: string(inst.Status), State: inst.State, Error: inst.Error, Created: inst.CreatedAt, Deployed: inst.DeployedAt,
		Parameters: views.Values(inst.Parameters, secretNames(def)...), DestroyError: refused.destroy, ActionError: refused.action,
		CanDestroy: actor.Can(access.StackInstanceDestroy, inst.TenantID) && inst.Status != lifecycle.InstanceDestroyed && inst.Status != lifecycle.InstanceDestroying,
		CanRetry:   actor.Can(access.StackInstanceDeploy, inst.TenantID) && inst.Status == lifecycle.InstanceFailed, RetryDestroys: inst.Retry == RunDestroy}
	if v.RetryDestroys {
		v.CanRetry = actor.Can(access.StackInstanceDestroy, inst.TenantID)
	}
	v.Layers, v.Groups = slotLayers(def, inst.Slots)
	for _, sl := range inst.Slots {
		row := SlotRow{Name: sl.Name, Status: sl.Status, Deployment: sl.Deployment, Outputs: views.Values(sl.Outputs)}
		if sl.DeploymentID != nil {
			row.URL = "/deployments/" + sl.DeploymentID.String()
		}
		v.Slots = append(v.Slots, row)
	}
	v.States, v.Transitions = def.Machine.Drawing()
	if inst.State != "" && inst.Status != lifecycle.InstanceDestroyed {
		offers, err := h.svc.Operations(ctx, actor, id)
		if err != nil {
			return err
		}
		v.Triggers, v.Operations = offerRows(offers)
	}
	if inst.Status == lifecycle.InstanceActive || inst.Status == lifecycle.InstanceDegraded {
		if plan, err := h.svc.UpgradePlan(ctx, actor, id, 0); err == nil {
			v.Upgrade = &UpgradeView{To: plan.To, Slots: plan.Slots, May: actor.Can(access.StackInstanceUpgrade, inst.TenantID)}
		} else if problem.FieldOf(err) == "" {
			return err
		}
	}
	for _, r := range runs {
		v.Runs = append(v.Runs, runRow(r))
		if RunStatus(r.Status) == RunQueued || RunStatus(r.Status) == RunRunning {
			v.Busy = true
		}
	}
	switch inst.Status {
	case lifecycle.InstanceDeploying, lifecycle.InstanceDestroying, lifecycle.InstanceUpgrading:
		v.Busy = true
	}
	for _, hr := range history {
		v.History = append(v.History, HistoryRow{From: deref(hr.FromState), To: hr.ToState, Trigger: hr.Trigger, Source: hr.Source,
			By: deref(hr.ActorEmail), At: hr.CreatedAt})
	}
	v.Live = c.Request().URL.Path
	page := web.Page(c, inst.Name).Under(views.Crumb{Label: "Stack instances", URL: "/stack-instances"},
		views.Crumb{Label: inst.EnvironmentName, URL: "/environments/" + inst.EnvironmentID.String()})
	return web.Render(c, status, InstancePage(page, v))
}

func stackLabel(inst Instance) string {
	if inst.StackDisplayName != "" {
		return inst.StackDisplayName
	}
	return inst.StackName
}

// secretNames are the stack's secret parameters, masked wherever parameters are shown.
func secretNames(def stack.Definition) []string {
	schema := component.ParseSchema("parameters", def.Parameters, &problem.ValidationError{})
	if schema == nil {
		return nil
	}
	var out []string
	for _, name := range schema.Names() {
		if schema.Secret(name) {
			out = append(out, name)
		}
	}
	return out
}

// slotLayers groups a version's slots into the layers that may deploy at once, each drawn with
// the status of its deployment in slots (none for a stack not deployed yet).
func slotLayers(def stack.Definition, slots []Slot) ([][]views.SlotBox, [][]string) {
	nodes := make([]graph.Node, len(def.Slots))
	for i, s := range def.Slots {
		nodes[i] = graph.Node{Name: s.Name, After: s.Upstream()}
	}
	groups, err := graph.Layers(nodes)
	if err != nil {
		// A published version has no cycle; drawn one slot a column, it still shows.
		groups = nil
		for _, s := range def.Slots {
			groups = append(groups, []string{s.Name})
		}
	}
	layers := make([][]views.SlotBox, len(groups))
	for i, g := range groups {
		for _, name := range g {
			sl, _ := def.Slot(name)
			b := views.SlotBox{Name: name, After: sl.Upstream()}
			for _, s := range slots {
				if s.Name == name {
					b.Status = s.Status
					if s.DeploymentID != nil {
						b.URL = "/deployments/" + s.DeploymentID.String()
					}
				}
			}
			layers[i] = append(layers[i], b)
		}
	}
	return layers, groups
}

// offerRows are the triggers leaving the current state, with where each leads, and the day-2
// operations with their input forms, each offered or not.
func offerRows(offers []Offer) (triggers, ops []OfferRow) {
	for _, o := range offers {
		row := OfferRow{Name: o.Name, Label: o.DisplayName, Note: o.Description, Then: o.TriggersTransition, Offered: o.Offered, Reason: o.Reason}
		if o.Kind == "transition" {
			row.Note = "to " + o.To
			triggers = append(triggers, row)
			continue
		}
		row.Inputs, _ = paramform.Layout(o.Name+".", o.InputSchema, nil, nil)
		row.Inputs.Empty = "It takes no inputs."
		for i := range row.Inputs.Fields {
			if f := &row.Inputs.Fields[i]; f.Kind == "secret" {
				f.Kind = "password"
			}
		}
		ops = append(ops, row)
	}
	return triggers, ops
}

// FireForm fires a trigger from the instance's page and stays there.
func (h *Handlers) FireForm(c echo.Context) error {
	return h.actOnPage(c, func(ctx context.Context, actor access.Principal, id uuid.UUID) error {
		_, err := h.svc.Fire(ctx, actor, id, c.FormValue("trigger"))
		return err
	})
}

// RunOperationForm runs a day-2 operation with the inputs of its form, and stays on the page.
func (h *Handlers) RunOperationForm(c echo.Context) error {
	return h.actOnPage(c, func(ctx context.Context, actor access.Principal, id uuid.UUID) error {
		name := c.Param("name")
		offers, err := h.svc.Operations(ctx, actor, id)
		if err != nil {
			return err
		}
		i := slices.IndexFunc(offers, func(o Offer) bool { return o.Kind == "operation" && o.Name == name })
		if i < 0 {
			return problem.Invalid("operation", "exists", "this stack has no day-2 operation %s", name)
		}
		form, err := c.FormParams()
		if err != nil {
			return problem.Invalid("form", "encoding", "the form could not be read")
		}
		inputs, err := paramform.Read(form, name+".", offers[i].InputSchema)
		if err != nil {
			return err
		}
		_, err = h.svc.RunOperation(ctx, actor, id, name, inputs)
		return err
	})
}

// UpgradeForm upgrades the instance to the version its page offered, and stays on the page.
func (h *Handlers) UpgradeForm(c echo.Context) error {
	return h.actOnPage(c, func(ctx context.Context, actor access.Principal, id uuid.UUID) error {
		version, err := strconv.Atoi(c.FormValue("version"))
		if err != nil {
			return problem.Invalid("version", "integer", "must be a version number")
		}
		_, err = h.svc.Upgrade(ctx, actor, id, version)
		return err
	})
}

// actOnPage does what a form of the instance's page asks and goes back to the page; a refusal is
// said on the page, in words.
func (h *Handlers) actOnPage(c echo.Context, do func(context.Context, access.Principal, uuid.UUID) error) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	err = do(web.Ctx(c), web.Actor(c), id)
	if errs := web.FormErrors(err); errs != nil {
		var words []string
		for _, k := range views.SortedErrorKeys(errs) {
			words = append(words, errs[k])
		}
		return h.showPage(c, refusals{action: strings.Join(words, " ")}, http.StatusUnprocessableEntity)
	}
	if err != nil {
		return err
	}
	return web.Redirect(c, "/stack-instances/"+id.String())
}

func runRow(r Run) RunRow {
	row := RunRow{ID: r.ID.String(), Kind: r.Kind, Status: r.Status, Source: r.Source, By: r.RequestedBy, Error: r.Error, Created: r.CreatedAt}
	switch {
	case r.Trigger != "":
		row.What = r.Trigger
	case r.Operation != "":
		row.What = r.Operation
	}
	if row.By == "" {
		row.By = "Nimbus"
	}
	for _, s := range r.Steps {
		st := StepRow{Slot: s.Slot, Action: s.Action, Status: s.Status}
		if s.OperationID != nil {
			st.URL = "/operations/" + s.OperationID.String()
		}
		row.Steps = append(row.Steps, st)
	}
	return row
}

// DestroyForm destroys the instance once its name was typed to confirm, and stays on its page.
func (h *Handlers) DestroyForm(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	ctx, actor := web.Ctx(c), web.Actor(c)
	inst, err := h.svc.Get(ctx, actor, id)
	if err != nil {
		return err
	}
	if typed := strings.TrimSpace(c.FormValue("confirm")); typed != inst.Name {
		msg := fmt.Sprintf("Type %s, the name of this stack instance, to destroy it", inst.Name)
		if typed != "" {
			msg += fmt.Sprintf(" (you typed %s)", typed)
		}
		return h.showPage(c, refusals{destroy: msg + "."}, http.StatusUnprocessableEntity)
	}
	if _, err := h.svc.Destroy(ctx, actor, id); err != nil {
		return err
	}
	return web.Redirect(c, "/stack-instances/"+id.String())
}

// RetryForm retries what a failed instance was doing, and stays on the instance's page.
func (h *Handlers) RetryForm(c echo.Context) error {
	return web.OnID(c, h.svc.Retry, web.Follow(c, func(in Instance) string { return "/stack-instances/" + in.ID.String() }))
}
