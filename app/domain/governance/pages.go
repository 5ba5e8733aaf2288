package governance

import (
	"encoding/csv"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"nimbus/app/kernel/problem"
	"nimbus/app/platform/web"
	"nimbus/views"
)

// ListPage shows the governance of every published component a tenant can use.
func (h *Handlers) ListPage(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	o, err := h.svc.List(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	rows := make([]GovernanceRow, len(o.Components))
	for i, s := range o.Components {
		rows[i] = GovernanceRow{ID: s.Component.ID.String(), Name: s.Component.Name, DisplayName: s.Component.DisplayName,
			Provider: s.Component.Provider, Version: s.Component.Version, Allowed: s.Effective.IsAllowed,
			Rules: s.Effective.Describe(), Instances: instances(s.Instances, s.Effective)}
	}
	page := web.Page(c, "Governance of "+o.TenantName).Under(views.Crumb{Label: "Tenants", URL: "/tenants"},
		views.Crumb{Label: o.TenantName, URL: "/tenants/" + o.TenantID.String()})
	return web.Render(c, http.StatusOK, GovernanceList(page, o.TenantID.String(), o.TenantName, rows))
}

// EditPage shows a component's governance in a tenant: what binds, the provider's ceiling and
// the tenant's own rule, each a form for those who may change it.
func (h *Handlers) EditPage(c echo.Context) error {
	tenantID, componentID, err := pathIDs(c)
	if err != nil {
		return err
	}
	v, err := h.svc.Get(web.Ctx(c), web.Actor(c), tenantID, componentID)
	if err != nil {
		return err
	}
	return h.renderEdit(c, http.StatusOK, v, "", nil, nil)
}

// SetForm saves the rule of the scope the form names; a refused rule comes back with the
// values as typed and each problem beside its field.
func (h *Handlers) SetForm(c echo.Context) error {
	tenantID, componentID, err := pathIDs(c)
	if err != nil {
		return err
	}
	ctx, actor := web.Ctx(c), web.Actor(c)
	v, err := h.svc.Get(ctx, actor, tenantID, componentID)
	if err != nil {
		return err
	}
	scope := c.FormValue("scope")
	typed := map[string]string{"is_allowed": c.FormValue("is_allowed"), "max_instances": c.FormValue("max_instances")}
	for _, p := range v.Params {
		for _, key := range []string{"minimum", "maximum", "allowed", "pattern"} {
			name := ConstraintField(p.Name, key)
			typed[name] = c.FormValue(name)
		}
	}
	change, err := changeFromForm(scope, typed, v.Params)
	if err == nil {
		_, err = h.svc.Set(ctx, actor, tenantID, componentID, change)
	}
	if errs := web.FormErrors(err); errs != nil {
		return h.renderEdit(c, http.StatusUnprocessableEntity, v, scope, typed, errs)
	}
	if err != nil {
		return err
	}
	who := "the tenant's rule"
	if scope == Provider {
		who = "the provider's ceiling"
	}
	web.SetFlash(c, web.FlashSuccess, "Saved "+who+" for "+v.Component.Name+".")
	return web.Redirect(c, "/tenants/"+tenantID.String()+"/governance/"+componentID.String())
}

// ClearForm removes the rule of the scope the form names.
func (h *Handlers) ClearForm(c echo.Context) error {
	tenantID, componentID, err := pathIDs(c)
	if err != nil {
		return err
	}
	scope := c.FormValue("scope")
	v, err := h.svc.Clear(web.Ctx(c), web.Actor(c), tenantID, componentID, scope)
	if err != nil {
		return err
	}
	who := "the tenant's rule"
	if scope == Provider {
		who = "the provider's ceiling"
	}
	web.SetFlash(c, web.FlashSuccess, "Removed "+who+" for "+v.Component.Name+".")
	return web.Redirect(c, "/tenants/"+tenantID.String()+"/governance/"+componentID.String())
}

// changeFromForm reads a rule form. Inputs left empty set nothing; allowed values are
// comma-separated, double-quoted where one holds a comma, and read as the input's type.
func changeFromForm(scope string, typed map[string]string, params []Param) (Change, error) {
	v := &problem.ValidationError{}
	ch := Change{Scope: scope, ParameterConstraints: map[string]Constraint{}}
	switch typed["is_allowed"] {
	case "true", "false":
		allowed := typed["is_allowed"] == "true"
		ch.IsAllowed = &allowed
	default:
		v.Add("is_allowed", "required", "choose allowed or denied")
	}
	if raw := strings.TrimSpace(typed["max_instances"]); raw != "" {
		m, err := strconv.Atoi(raw)
		if err != nil {
			v.Add("max_instances", "integer", "must be a whole number, or empty for no limit")
		}
		ch.MaxInstances = &m
	}
	for _, p := range params {
		var c Constraint
		for key, dst := range map[string]**float64{"minimum": &c.Minimum, "maximum": &c.Maximum} {
			name := ConstraintField(p.Name, key)
			if raw := strings.TrimSpace(typed[name]); raw != "" {
				x, err := parseNumber(raw)
				if err != nil {
					v.Add(name, "number", "must be a number")
				}
				*dst = &x
			}
		}
		name := ConstraintField(p.Name, "allowed")
		if raw := strings.TrimSpace(typed[name]); raw != "" {
			c.Allowed = []any{}
			items, err := splitList(raw)
			if err != nil {
				v.Add(name, "list", "%v; put a value holding a comma in double quotes", err)
			}
			for _, item := range items {
				value, err := typedValue(p.Type, strings.TrimSpace(item))
				if err != nil {
					v.Add(name, "type", "%q %v", strings.TrimSpace(item), err)
					break
				}
				c.Allowed = append(c.Allowed, value)
			}
		}
		c.Pattern = strings.TrimSpace(typed[ConstraintField(p.Name, "pattern")])
		if !c.empty() {
			ch.ParameterConstraints[p.Name] = c
		}
	}
	return ch, v.Err()
}

// splitList reads a comma-separated list as a CSV record, so "a, b" is one value.
func splitList(raw string) ([]string, error) {
	r := csv.NewReader(strings.NewReader(raw))
	r.TrimLeadingSpace = true
	items, err := r.Read()
	if err != nil {
		var parseErr *csv.ParseError
		if errors.As(err, &parseErr) {
			err = parseErr.Err
		}
		return nil, err
	}
	return items, nil
}

// joinList writes values as splitList reads them.
func joinList(items []string) string {
	quoted := make([]string, len(items))
	for i, item := range items {
		quoted[i] = item
		if strings.ContainsAny(item, ",\"\r\n") || strings.TrimLeft(item, " \t") != item {
			quoted[i] = `"` + strings.ReplaceAll(item, `"`, `""`) + `"`
		}
	}
	return strings.Join(quoted, ", ")
}

// typedValue reads one allowed value typed into a form as the input's JSON type.
func typedValue(typ, s string) (any, error) {
	switch typ {
	case "integer", "number":
		x, err := parseNumber(s)
		if err != nil {
			return nil, fmt.Errorf("is not a number")
		}
		return x, nil
	case "boolean":
		b, err := strconv.ParseBool(s)
		if err != nil {
			return nil, fmt.Errorf("is not true or false")
		}
		return b, nil
	}
	return s, nil
}

// parseNumber reads a number typed into a form; NaN and infinities, which ParseFloat accepts
// and JSON cannot hold, are not numbers here.
func parseNumber(s string) (float64, error) {
	x, err := strconv.ParseFloat(s, 64)
	if err == nil && (math.IsNaN(x) || math.IsInf(x, 0)) {
		err = fmt.Errorf("%q is not a finite number", s)
	}
	return x, err
}

// renderEdit shows the edit page; after a refused save, failed names the scope whose form
// keeps the typed values and errs.
func (h *Handlers) renderEdit(c echo.Context, status int, v View, failed string, typed map[string]string, errs views.Errors) error {
	actor := web.Actor(c)
	page := GovernanceEdit{TenantID: v.TenantID.String(), TenantName: v.TenantName, ComponentID: v.Component.ID.String(),
		DisplayName: v.Component.DisplayName, Name: v.Component.Name, Version: v.Component.Version,
		Ceiling: ruleText("Provider's ceiling", v.Provider), Own: ruleText("Tenant's own rule", v.Tenant),
		Effective: v.Effective.Describe(), Instances: instances(v.Instances, v.Effective)}
	for _, p := range v.Params {
		page.Params = append(page.Params, GovernanceParam{Name: p.Name, Type: p.Type, Hint: hint(p),
			Bounded: p.Bounded, Patterned: p.Patterned, Listed: p.Listed})
	}
	// Provider admins may write either rule through the API; the page gives each admin their own.
	switch {
	case CanSet(actor, v.TenantID, Provider):
		page.Form = &RuleForm{Scope: Provider, Title: "Provider's ceiling", Values: formValues(v.Provider), Set: v.Provider != nil,
			Note: "The most this tenant may do with this component. The tenant's admins can narrow it, never widen it."}
		page.Beside = page.Own
	case CanSet(actor, v.TenantID, Tenant):
		page.Form = &RuleForm{Scope: Tenant, Title: "Tenant's own rule", Values: formValues(v.Tenant), Set: v.Tenant != nil,
			Note: "Narrows the provider's ceiling, shown beside each field, for this tenant. Leave a field empty to keep the provider's limit."}
		page.Beside = page.Ceiling
	}
	if page.Form != nil && page.Form.Scope == failed {
		page.Form.Values, page.Form.Errors = typed, errs
	}
	frame := web.Page(c, v.Component.DisplayName+" · governance").Under(views.Crumb{Label: "Tenants", URL: "/tenants"},
		views.Crumb{Label: v.TenantName, URL: "/tenants/" + v.TenantID.String()},
		views.Crumb{Label: "Governance", URL: "/tenants/" + v.TenantID.String() + "/governance"})
	return web.Render(c, status, GovernanceEditPage(frame, page))
}

// ruleText puts a saved rule in words, per input.
func ruleText(title string, r *Rule) RuleText {
	t := RuleText{Title: title, Params: map[string]string{}}
	if r == nil {
		return t
	}
	t.Set, t.UpdatedBy, t.Allowed, t.MaxInstances = true, r.UpdatedBy, "Allowed", "no limit"
	if !r.IsAllowed {
		t.Allowed = "Denied"
	}
	if t.UpdatedBy == "" {
		t.UpdatedBy = "someone since removed"
	}
	t.UpdatedAt = r.UpdatedAt
	if r.MaxInstances != nil {
		t.MaxInstances = "at most " + strconv.Itoa(*r.MaxInstances)
	}
	for name, c := range r.Constraints {
		var parts []string
		if c.Minimum != nil {
			parts = append(parts, "at least "+num(*c.Minimum))
		}
		if c.Maximum != nil {
			parts = append(parts, "at most "+num(*c.Maximum))
		}
		if c.Allowed != nil {
			parts = append(parts, "one of "+list(c.Allowed))
		}
		if c.Pattern != "" {
			parts = append(parts, "matches "+c.Pattern)
		}
		t.Params[name] = strings.Join(parts, "; ")
	}
	return t
}

// formValues fills a form with a saved rule's values; nil leaves it empty and allowed.
func formValues(r *Rule) map[string]string {
	values := map[string]string{"is_allowed": "true"}
	if r == nil {
		return values
	}
	values["is_allowed"] = strconv.FormatBool(r.IsAllowed)
	if r.MaxInstances != nil {
		values["max_instances"] = strconv.Itoa(*r.MaxInstances)
	}
	for name, c := range r.Constraints {
		if c.Minimum != nil {
			values[ConstraintField(name, "minimum")] = num(*c.Minimum)
		}
		if c.Maximum != nil {
			values[ConstraintField(name, "maximum")] = num(*c.Maximum)
		}
		if c.Allowed != nil {
			parts := make([]string, len(c.Allowed))
			for i, a := range c.Allowed {
				parts[i] = fmt.Sprint(a)
			}
			values[ConstraintField(name, "allowed")] = joinList(parts)
		}
		values[ConstraintField(name, "pattern")] = c.Pattern
	}
	return values
}

// hint says what the schema itself allows, so a constraint can be chosen within it.
func hint(p Param) string {
	out := p.Type
	switch {
	case p.Minimum != nil && p.Maximum != nil:
		out += ", " + num(*p.Minimum) + " to " + num(*p.Maximum)
	case p.Minimum != nil:
		out += ", at least " + num(*p.Minimum)
	case p.Maximum != nil:
		out += ", at most " + num(*p.Maximum)
	}
	if len(p.Enum) > 0 {
		out += ", one of " + list(p.Enum)
	}
	return out
}

// instances says how many are deployed against the limit: "1 of 2", "3 (no limit)".
func instances(live int, e EffectiveRule) string {
	if e.MaxInstances == nil {
		return fmt.Sprintf("%d (no limit)", live)
	}
	return fmt.Sprintf("%d of %d", live, e.MaxInstances.Value)
}
