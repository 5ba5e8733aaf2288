package deployweb

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"nimbus/app/domain/component"
	"nimbus/app/domain/governance"
	"nimbus/app/domain/paramform"
	"nimbus/app/kernel/problem"
	"nimbus/app/orchestration/deploy"
	"nimbus/app/platform/web"
	"nimbus/views"
)

// DeployDialog answers the catalog's and the component page's Deploy button with the dialog's
// form, generated from the latest version's inputs.
func (h *Handlers) DeployDialog(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	if preview := c.QueryParam("preview"); preview != "" {
		return h.planPanel(c, preview)
	}
	dd, err := h.svc.Deployable(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	v := dialogView(dd)
	v.Form = paramForm(dd.InputSchema, nil, nil, nil, dd.Bound, false, limitsOf(dd))
	markResolved(&v.Form, dd, v.Environment)
	suggest(&v.Form, dd)
	return web.Render(c, http.StatusOK, DeployDialog(views.Page{CSRF: web.CSRF(c)}, v))
}

// suggest offers, beside each input that names another deployment, the deployments of the
// offered environments it may name: a machine's network is chosen, not pasted.
func suggest(f *ParamForm, dd deploy.Deployable) {
	for i := range f.Fields {
		for _, r := range dd.Referable[f.Fields[i].Name] {
			f.Fields[i].Suggestions = append(f.Fields[i].Suggestions,
				paramform.Suggestion{Value: r.Value, Label: r.Deployment + " in " + r.Environment})
		}
	}
}

// markResolved shows the inputs that the chosen environment's resolvers fill as such, as the
// dialog's script does when another environment is chosen. No environment chosen yet means
// the first offered.
func markResolved(f *ParamForm, dd deploy.Deployable, environment string) {
	if len(dd.Environments) == 0 {
		return
	}
	env := dd.Environments[0].ID
	if id, err := uuid.Parse(environment); err == nil {
		env = id
	}
	for i := range f.Fields {
		f.Fields[i].Resolved = f.Fields[i].BoundTo != "" && slices.Contains(dd.Resolves[env], f.Fields[i].BoundTo)
	}
}

func limitsOf(dd deploy.Deployable) map[string]governance.Limits {
	if dd.Rule == nil {
		return nil
	}
	return dd.Rule.Parameters
}

func dialogView(dd deploy.Deployable) DeployDialogView {
	v := DeployDialogView{ComponentID: dd.ComponentID.String(), Component: dd.Component, Version: dd.Version}
	if dd.Rule != nil {
		v.Rules = rulesInWords(*dd.Rule, titles(dd.InputSchema))
	}
	if dd.Limited {
		v.Left = fmt.Sprintf("%d more may be deployed in this tenant", dd.Left)
	}
	for _, e := range dd.Environments {
		v.Environments = append(v.Environments, views.Option{Value: e.ID.String(), Label: e.TenantName + " / " + e.Name})
	}
	resolves, _ := json.Marshal(dd.Resolves)
	v.Resolves = string(resolves)
	return v
}

// DeployDialogForm creates the deployment from the dialog: previewed first, its plan shown in
// the dialog (the deployment stays pending until deployed from it), or deployed at once.
// Every problem comes back into the dialog in one answer, each beside its field.
func (h *Handlers) DeployDialogForm(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	ctx, actor := web.Ctx(c), web.Actor(c)
	dd, err := h.svc.Deployable(ctx, actor, id)
	if err != nil {
		return err
	}
	v := dialogView(dd)
	v.Environment, v.Name = c.FormValue("environment_id"), c.FormValue("name")
	params, err := formParams(c, dd.InputSchema)
	envID, _ := uuid.Parse(v.Environment) // none chosen is reported by Review
	// The version the form was made for: a newer one published meanwhile may have other inputs.
	version, _ := strconv.Atoi(c.FormValue("version"))
	req := deploy.Request{ComponentID: id, Version: version, EnvironmentID: envID, Name: v.Name,
		Parameters: params, PreviewOnly: c.FormValue("action") != "deploy"}
	if err = h.svc.Review(ctx, actor, req, err); err == nil {
		var op deploy.Operation
		if _, op, err = h.svc.Deploy(ctx, actor, req); err == nil {
			if req.PreviewOnly {
				pv, err := h.plan(c, id, op.ID)
				if err != nil {
					return err
				}
				return web.Render(c, http.StatusOK, DeployPlan(pv))
			}
			return web.Redirect(c, "/operations/"+op.ID.String())
		}
	}
	errs := web.FormErrors(err)
	if errs == nil {
		return err
	}
	v.NameError, v.EnvError = errs["name"], errs["environment_id"]
	values := paramform.Given(c.Request().PostForm, "")
	v.Form = paramForm(dd.InputSchema, values, nil, err, dd.Bound, false, limitsOf(dd))
	suggest(&v.Form, dd)
	markResolved(&v.Form, dd, v.Environment)
	// Problems with no field of their own here (an instance limit, say) go above the form.
	var general []string
	for field, msg := range errs {
		input, ok := problem.Within(field, "parameters")
		if field != "name" && field != "environment_id" && (!ok || input == "") {
			general = append(general, sentence(msg))
		}
	}
	slices.Sort(general)
	v.Error = strings.Join(general, " ")
	return web.Render(c, http.StatusUnprocessableEntity, DeployDialog(views.Page{CSRF: web.CSRF(c)}, v))
}

// planPanel answers the dialog's poll of its preview with the plan so far.
func (h *Handlers) planPanel(c echo.Context, preview string) error {
	componentID, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	op, err := uuid.Parse(preview)
	if err != nil {
		return problem.Invalid("preview", "uuid", "is not an operation's ID")
	}
	pv, err := h.plan(c, componentID, op)
	if err != nil {
		return err
	}
	return web.Render(c, http.StatusOK, PlanPanel(pv))
}

// plan is what the dialog shows of a preview: its status, then the resources it would create
// or change.
func (h *Handlers) plan(c echo.Context, componentID, op uuid.UUID) (PlanView, error) {
	d, err := h.svc.Detail(web.Ctx(c), web.Actor(c), op)
	if err != nil {
		return PlanView{}, err
	}
	if d.Kind != deploy.KindPreview {
		return PlanView{}, problem.Invalid("preview", "kind", "is not a preview")
	}
	v := PlanView{OperationID: d.ID.String(), DeploymentID: d.DeploymentID.String(), Deployment: d.Deployment,
		Status: string(d.Status), Ended: d.Status.Ended(), Error: d.Error, CSRF: web.CSRF(c),
		PollURL: "/components/" + componentID.String() + "/deploy?preview=" + d.ID.String()}
	v.Rows, v.Summary = Planned(d)
	v.Policy = d.Policy
	return v, nil
}

// Planned is what a preview plans, as people read it: each resource it would create or change,
// and what that comes to in words.
func Planned(d deploy.Detail) ([]PlanRow, string) {
	var rows []PlanRow
	for _, r := range d.Resources {
		if strings.HasPrefix(r.Type, "pulumi:") {
			continue // the stack and its providers: bookkeeping, not what the user asked for
		}
		row := PlanRow{Name: r.Name, Type: r.Type, Op: r.Op}
		for _, ch := range r.Changes {
			row.Changes = append(row.Changes, fmt.Sprintf("%s: %s → %s", ch.Path, views.Value(ch.Old), views.Value(ch.New)))
		}
		rows = append(rows, row)
	}
	return rows, planSummary(rows)
}

// planSummary says what deploying would do to the resources, such as "create 2 resources".
func planSummary(rows []PlanRow) string {
	counts := map[string]int{}
	for _, r := range rows {
		counts[r.Op]++
	}
	var parts []string
	for _, op := range []string{"create", "update", "replace", "delete"} {
		if n := counts[op]; n == 1 {
			parts = append(parts, op+" 1 resource")
		} else if n > 1 {
			parts = append(parts, fmt.Sprintf("%s %d resources", op, n))
		}
	}
	if len(parts) == 0 {
		return "Deploying would change nothing."
	}
	return "Deploying would " + strings.Join(parts, ", ") + "."
}

// sentence makes a message a sentence of its own, for a list of them.
func sentence(msg string) string {
	msg = strings.TrimSpace(msg)
	if msg == "" {
		return msg
	}
	r, size := utf8.DecodeRuneInString(msg)
	msg = string(unicode.ToUpper(r)) + msg[size:]
	if !strings.HasSuffix(msg, ".") {
		msg += "."
	}
	return msg
}

// paramForm lays a version's input schema out as form fields, filled with values (the
// schema's defaults where a value is missing) and the problems of err beside each field.
// Secret inputs already set show as blank password fields that keep their value when left so;
// booleans are checkboxes.
//
// bound maps inputs bound to a resolver onto its type; resolved says whether the form's
// environment resolves them: then they are shown, not asked for. Where it is not known (the
// deploy dialog, before an environment is chosen) they stay fields, saying what happens.
//
// limits are the tenant's governance, which narrow the schema's bounds and choices.
func paramForm(rawSchema []byte, values map[string]any, secretSet []string, err error, bound map[string]string, resolved bool, limits map[string]governance.Limits) ParamForm {
	errs := web.FormErrors(err)
	laid, ok := paramform.Layout("", rawSchema, values, errs)
	f := ParamForm{Form: laid}
	f.Empty, f.Follows = "This component takes no parameters.", true
	if !ok {
		f.Error = "this version's input schema cannot be read"
		return f
	}
	for i := range f.Fields {
		field := &f.Fields[i]
		if field.Label != field.Name {
			field.Key = field.Name // so that an input called name is not taken for the deployment's
		}
		if _, given := values[field.Name]; !given && field.HasDefault {
			field.Value = field.Default
		}
		if typ, ok := bound[field.Name]; ok {
			if resolved {
				field.Kind, field.Resolver, field.Required = "resolved", typ, false
				field.Note = sentence(filledBy(typ) + " when deployed")
				continue
			}
			// The environment may change in the form: the field is asked for as the schema
			// says, and the page shows it read-only while the one chosen resolves it.
			field.BoundTo, field.FilledBy = typ, filledBy(typ)
			field.BoundNote = sentence(filledBy(typ) + " of this environment when deployed: nothing to enter here")
		}
		switch field.Kind {
		case "secret":
			field.Kind, field.Value = "password", ""
			if slices.Contains(secretSet, field.Name) {
				field.Required, field.Placeholder = false, "unchanged"
			}
		case "boolean":
			field.Kind, field.Checked = "checkbox", field.Value == "true"
		}
		if words := narrow(field, limits[field.Name]); len(words) > 0 {
			field.Limits = sentence(strings.Join(words, "; "))
		}
		if field.Kind == "select" && !field.HasDefault && !slices.Contains(field.Options, "") {
			field.Blank = noChoice(*field)
		}
	}
	if err != nil && errs == nil {
		f.Error = err.Error()
	}
	return f
}

// formParams reads the "p.<name>" fields of a parameter form into typed values by the schema.
func formParams(c echo.Context, rawSchema []byte) (map[string]any, error) {
	form, err := c.FormParams()
	if err != nil {
		return nil, problem.Invalid("form", "encoding", "the form could not be read")
	}
	return paramform.Read(form, "", rawSchema)
}

// narrow applies the tenant's rule to a field: tighter bounds, and its allowed values as the
// only choices. The browser then refuses what the server would; the words it returns say
// which limits bind the field and who set them.
func narrow(f *paramform.Field, l governance.Limits) []string {
	if f.Kind == "resolved" {
		return nil
	}
	var limits []string
	// bound returns the governance bound when it is tighter than the schema's current one.
	bound := func(current string, b *governance.Bound, tighter func(a, b float64) bool) (string, bool) {
		if b == nil {
			return current, false
		}
		if c, err := strconv.ParseFloat(current, 64); err == nil && !tighter(b.Value, c) {
			return current, false
		}
		return strconv.FormatFloat(b.Value, 'f', -1, 64), true
	}
	if f.Kind == "number" {
		var binds bool
		if f.Min, binds = bound(f.Min, l.Minimum, func(a, b float64) bool { return a > b }); binds {
			limits = append(limits, fmt.Sprintf("at least %s, set by %s", f.Min, setBy(l.Minimum.SetBy)))
		}
		if f.Max, binds = bound(f.Max, l.Maximum, func(a, b float64) bool { return a < b }); binds {
			limits = append(limits, fmt.Sprintf("at most %s, set by %s", f.Max, setBy(l.Maximum.SetBy)))
		}
	}
	if l.Allowed != nil && f.Kind != "checkbox" {
		f.Kind, f.Options = "select", nil
		for _, v := range l.Allowed.Values {
			f.Options = append(f.Options, paramform.Text(v))
		}
		if len(f.Options) == 0 {
			limits = append(limits, "no value is allowed: the choices of the provider and of your tenant's admins do not overlap")
		} else {
			limits = append(limits, "the choices are set by "+setBy(l.Allowed.SetBy))
		}
	}
	for _, m := range l.Patterns {
		limits = append(limits, fmt.Sprintf("must match %s, set by %s", m.Pattern, setBy(m.SetBy)))
	}
	return limits
}

// setBy names who set a governance limit, as the tenant's users know them.
func setBy(scope string) string {
	switch scope {
	case governance.Provider:
		return "the provider"
	case governance.Tenant:
		return "your tenant's admins"
	}
	return "the provider and your tenant's admins"
}

// rulesInWords is the tenant's rule as the dialog's notice lists it, each input by its title.
func rulesInWords(e governance.EffectiveRule, titles map[string]string) []string {
	var out []string
	if e.MaxInstances != nil {
		instances := "instances"
		if e.MaxInstances.Value == 1 {
			instances = "instance"
		}
		out = append(out, fmt.Sprintf("at most %d %s in your tenant (set by %s)", e.MaxInstances.Value, instances, setBy(e.MaxInstances.SetBy)))
	}
	for _, name := range slices.Sorted(maps.Keys(e.Parameters)) {
		l, title := e.Parameters[name], cmp.Or(titles[name], name)
		if l.Minimum != nil {
			out = append(out, fmt.Sprintf("%s: at least %s (set by %s)", title, number(l.Minimum.Value), setBy(l.Minimum.SetBy)))
		}
		if l.Maximum != nil {
			out = append(out, fmt.Sprintf("%s: at most %s (set by %s)", title, number(l.Maximum.Value), setBy(l.Maximum.SetBy)))
		}
		if l.Allowed != nil {
			values := make([]string, len(l.Allowed.Values))
			for i, v := range l.Allowed.Values {
				values[i] = views.Value(v)
			}
			out = append(out, fmt.Sprintf("%s: one of %s (set by %s)", title, strings.Join(values, ", "), setBy(l.Allowed.SetBy)))
		}
		for _, m := range l.Patterns {
			out = append(out, fmt.Sprintf("%s: matches %s (set by %s)", title, m.Pattern, setBy(m.SetBy)))
		}
	}
	return out
}

func number(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// titles maps each input of a schema to its title, where it has one.
func titles(rawSchema []byte) map[string]string {
	out := map[string]string{}
	if schema := component.ParseSchema("input_schema", rawSchema, &problem.ValidationError{}); schema != nil {
		for name, p := range schema.Properties {
			if p.Title != "" {
				out[name] = p.Title
			}
		}
	}
	return out
}

// filledBy says which resolver fills an input, by the name its page gives it.
func filledBy(resolverType string) string {
	words := map[string]string{"ipam": "IPAM", "image_catalog": "image catalog", "secret_provisioner": "secrets"}
	return "filled by the " + cmp.Or(words[resolverType], resolverType) + " resolver"
}

// noChoice is the label of a select's empty choice, offered only when the input has no
// default: one to make when the input is required, "none" otherwise.
func noChoice(f paramform.Field) string {
	if f.Required {
		return "choose one"
	}
	return "—"
}
