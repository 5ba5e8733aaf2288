package deploy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"nimbus/app/component"
	"nimbus/app/governance"
	"nimbus/app/problem"
	"nimbus/app/web"
	"nimbus/views"
)

// DeployDialog answers the catalog's and the component page's Deploy button with the dialog's
// form, generated from the latest version's inputs.
func (h *Handlers) DeployDialog(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	dd, err := h.svc.Deployable(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	v := dialogView(dd)
	bound, _, err := h.svc.bindings(web.Ctx(c), dd.Bindings, uuid.Nil)
	if err != nil {
		return err
	}
	v.Form = paramForm(dd.InputSchema, nil, nil, nil, bound, false, limitsOf(dd))
	return web.Render(c, http.StatusOK, DeployDialog(views.Page{CSRF: web.CSRF(c)}, v))
}

func limitsOf(dd Deployable) map[string]governance.Limits {
	if dd.Rule == nil {
		return nil
	}
	return dd.Rule.Parameters
}

func dialogView(dd Deployable) DeployDialogView {
	v := DeployDialogView{ComponentID: dd.ComponentID.String(), Component: dd.Component, Version: dd.Version}
	if dd.Rule != nil {
		v.Rules = dd.Rule.Describe()
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

// DeployDialogForm creates the deployment from the dialog: previewed first (it stays pending
// until deployed from the preview's page) or deployed at once. Problems come back into the
// dialog beside their fields.
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
	if err == nil {
		envID, perr := uuid.Parse(v.Environment)
		if perr != nil {
			err = problem.Invalid("environment_id", "uuid", "choose an environment")
		} else {
			var op Operation
			// The version the form was made for: a newer one published meanwhile may have
			// other inputs.
			version, _ := strconv.Atoi(c.FormValue("version"))
			_, op, err = h.svc.Deploy(ctx, actor, Request{ComponentID: id, Version: version, EnvironmentID: envID, Name: v.Name,
				Parameters: params, PreviewOnly: c.FormValue("action") != "deploy"})
			if err == nil {
				return web.Redirect(c, "/operations/"+op.ID.String())
			}
		}
	}
	errs := web.FormErrors(err)
	if errs == nil {
		return err
	}
	v.NameError, v.EnvError = errs["name"], errs["environment_id"]
	values := map[string]any{}
	for k := range c.Request().PostForm {
		if name, ok := strings.CutPrefix(k, "p."); ok {
			values[name] = c.Request().PostForm.Get(k)
		}
	}
	bound, _, berr := h.svc.bindings(ctx, dd.Bindings, uuid.Nil)
	if berr != nil {
		return berr
	}
	v.Form = paramForm(dd.InputSchema, values, nil, err, bound, false, limitsOf(dd))
	// Problems with no field of their own here (an instance limit, say) go above the form.
	var general []string
	for field, msg := range errs {
		if field != "name" && field != "environment_id" && !strings.HasPrefix(field, "parameters.") {
			general = append(general, msg)
		}
	}
	slices.Sort(general)
	v.Form.Error = strings.Join(general, "; ")
	return web.Render(c, http.StatusUnprocessableEntity, DeployDialog(views.Page{CSRF: web.CSRF(c)}, v))
}

// paramForm lays a version's input schema out as form fields, filled with values (the
// schema's defaults where a value is missing) and the problems of err beside each field.
// Secret inputs already set show as blank password fields that keep their value when left so.
//
// bound maps inputs bound to a resolver onto its type; resolved says whether the form's
// environment resolves them: then they are shown, not asked for. Where it is not known (the
// deploy dialog, before an environment is chosen) they stay fields, saying what happens.
//
// limits are the tenant's governance, which narrow the schema's bounds and choices.
func paramForm(rawSchema []byte, values map[string]any, secretSet []string, err error, bound map[string]string, resolved bool, limits map[string]governance.Limits) ParamForm {
	var f ParamForm
	schema := component.ParseSchema("input_schema", rawSchema, &problem.ValidationError{})
	if schema == nil {
		f.Error = "this version's input schema cannot be read"
		return f
	}
	errs := web.FormErrors(err)
	for _, name := range schema.Names() {
		p := schema.Properties[name]
		field := ParamField{Name: name, Label: p.Title, Description: p.Description, Kind: "text",
			Required: slices.Contains(schema.Required, name) && p.Default == nil, Error: errs["parameters."+name], Pattern: p.Pattern}
		if field.Label == "" {
			field.Label = name
		}
		value, given := values[name]
		if !given {
			value = p.Default
		}
		if value != nil {
			field.Value = display(value)
		}
		if typ, ok := bound[name]; ok {
			if resolved {
				field.Kind, field.Resolver, field.Required = "resolved", typ, false
				f.Fields = append(f.Fields, field)
				continue
			}
			// Which environment is not known yet: the page's script disables the field when
			// the one chosen resolves it.
			field.Required, field.BoundTo = false, typ
		}
		if p.MinLength != nil {
			field.MinLength = strconv.Itoa(*p.MinLength)
		}
		if p.MaxLength != nil {
			field.MaxLength = strconv.Itoa(*p.MaxLength)
		}
		switch {
		case p.Secret:
			field.Kind, field.Value = "password", ""
			if slices.Contains(secretSet, name) {
				field.Required, field.Placeholder = false, "unchanged"
			}
		case len(p.Enum) > 0:
			field.Kind = "select"
			for _, e := range p.Enum {
				field.Options = append(field.Options, display(e))
			}
		case p.Type == "boolean":
			field.Kind, field.Checked = "checkbox", value == true || value == "true"
		case p.Type == "integer" || p.Type == "number":
			field.Kind, field.Step = "number", "1"
			if p.Type == "number" {
				field.Step = "any"
			}
			if p.Minimum != nil {
				field.Min = strconv.FormatFloat(*p.Minimum, 'f', -1, 64)
			}
			if p.Maximum != nil {
				field.Max = strconv.FormatFloat(*p.Maximum, 'f', -1, 64)
			}
		case p.Type == "array" || p.Type == "object":
			field.Kind = "json"
		}
		narrow(&field, limits[name])
		f.Fields = append(f.Fields, field)
	}
	if err != nil && errs == nil {
		f.Error = err.Error()
	}
	return f
}

// formParams reads the "p.<name>" fields of a parameter form into typed values by the schema.
// Values that do not parse are refused by name.
func formParams(c echo.Context, rawSchema []byte) (map[string]any, error) {
	schema := component.ParseSchema("input_schema", rawSchema, &problem.ValidationError{})
	if schema == nil {
		return nil, problem.Invalid("version", "schema", "this version's input schema cannot be read")
	}
	form, err := c.FormParams()
	if err != nil {
		return nil, problem.Invalid("form", "encoding", "the form could not be read")
	}
	out := map[string]any{}
	v := &problem.ValidationError{}
	for _, name := range schema.Names() {
		p := schema.Properties[name]
		raw := strings.TrimSpace(form.Get("p." + name))
		if p.Secret {
			raw = form.Get("p." + name) // a secret is exactly what was typed
		}
		field := "parameters." + name
		switch {
		case p.Type == "boolean":
			if _, sent := form["p."+name]; sent {
				out[name] = raw == "true"
			}
		case raw == "":
			// Not sent: the input keeps its current value (a secret left blank stays as it
			// was), or its default.
		case p.Type == "integer" || p.Type == "number":
			n, err := strconv.ParseFloat(raw, 64)
			if err != nil {
				v.Add(field, "number", "%q is not a number", raw)
				continue
			}
			out[name] = n
		case p.Type == "array" || p.Type == "object":
			var val any
			if err := json.Unmarshal([]byte(raw), &val); err != nil {
				v.Add(field, "json", "is not valid JSON: %v", err)
				continue
			}
			out[name] = val
		default:
			out[name] = raw
		}
	}
	return out, v.Err()
}

// narrow applies the tenant's rule to a field: tighter bounds, and its allowed values as the
// only choices. The browser then refuses what the server would.
func narrow(f *ParamField, l governance.Limits) {
	bound := func(current string, b *governance.Bound, tighter func(a, b float64) bool) string {
		if b == nil {
			return current
		}
		if c, err := strconv.ParseFloat(current, 64); err == nil && !tighter(b.Value, c) {
			return current
		}
		return strconv.FormatFloat(b.Value, 'f', -1, 64)
	}
	if f.Kind == "number" {
		f.Min = bound(f.Min, l.Minimum, func(a, b float64) bool { return a > b })
		f.Max = bound(f.Max, l.Maximum, func(a, b float64) bool { return a < b })
	}
	if l.Allowed != nil && f.Kind != "checkbox" && f.Kind != "resolved" {
		f.Kind, f.Options = "select", nil
		for _, v := range l.Allowed.Values {
			f.Options = append(f.Options, display(v))
		}
	}
}
