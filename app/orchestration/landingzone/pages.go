package landingzone

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strings"

	"github.com/a-h/templ"
	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"nimbus/app/domain/ipam"
	"nimbus/app/domain/paramform"
	"nimbus/app/domain/resolver"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/web"
	"nimbus/views"
)

// templateRows is how many component rows the new-template form offers.
const templateRows = 3

// ListPage shows the landing zones and the form that adds one.
func (h *Handlers) ListPage(c echo.Context) error {
	return h.renderList(c, http.StatusOK, ZoneForm{}, nil)
}

func (h *Handlers) renderList(c echo.Context, status int, form ZoneForm, err error) error {
	ctx, actor := web.Ctx(c), web.Actor(c)
	zones, lerr := h.svc.List(ctx, actor)
	if lerr != nil {
		return lerr
	}
	rows := make([]ZoneRow, len(zones))
	for i, z := range zones {
		rows[i] = ZoneRow{ID: z.ID.String(), Name: z.Name, Provider: z.Provider, Status: string(z.Status), Description: z.Description,
			Environments: z.EnvironmentCount, Created: z.CreatedAt}
	}
	sort := views.SortOf(c.Request().URL.Path, c.QueryParams(), "name", "name", "provider", "status", "environments", "created")
	views.SortRows(rows, sort, map[string]func(a, b ZoneRow) int{
		"name":         func(a, b ZoneRow) int { return views.Fold(a.Name, b.Name) },
		"provider":     func(a, b ZoneRow) int { return views.Fold(a.Provider, b.Provider) },
		"status":       func(a, b ZoneRow) int { return strings.Compare(a.Status, b.Status) },
		"environments": func(a, b ZoneRow) int { return a.Environments - b.Environments },
		"created":      func(a, b ZoneRow) int { return a.Created.Compare(b.Created) },
	})
	providers, perr := h.svc.Providers(ctx, actor)
	if perr != nil {
		return perr
	}
	for _, p := range providers {
		form.Providers = append(form.Providers, views.Option{Value: p.Value, Label: p.Label})
	}
	form.Errors = web.FormErrors(err)
	return web.Render(c, status, LandingZones(web.Page(c, "Landing zones"), rows, sort, form))
}

// CreateForm adds a landing zone from the list page.
func (h *Handlers) CreateForm(c echo.Context) error {
	form := ZoneForm{Name: c.FormValue("name"), Provider: c.FormValue("provider"), Description: c.FormValue("description")}
	z, err := h.svc.Create(web.Ctx(c), web.Actor(c), NewZone{Name: form.Name, Provider: form.Provider, Description: form.Description})
	if web.FormErrors(err) != nil {
		return h.renderList(c, http.StatusUnprocessableEntity, form, err)
	}
	if err != nil {
		return err
	}
	web.SetFlash(c, web.FlashSuccess, "Landing zone "+z.Name+" created as a draft. Configure its resolvers, add its system services and templates, then publish it.")
	return web.Redirect(c, "/landing-zones/"+z.ID.String())
}

// ShowPage shows a zone with its system services, resolvers, pools, templates and
// environments, and the forms that shape it.
func (h *Handlers) ShowPage(c echo.Context) error {
	return h.renderShow(c, http.StatusOK, pageForms{}, nil)
}

// pageForms carries what was typed into a refused form back to the page.
type pageForms struct {
	service  MemberForm
	template TemplateForm
	zone     bool // the refusal is of publish or retire
	// lifetimes is what was typed into the lifetimes form, when it was refused.
	lifetimes *Lifetimes
}

func (h *Handlers) renderShow(c echo.Context, status int, forms pageForms, err error) error {
	id, ierr := web.IDParam(c, "id")
	if ierr != nil {
		return ierr
	}
	ctx, actor := web.Ctx(c), web.Actor(c)
	z, zerr := h.svc.Get(ctx, actor, id)
	if zerr != nil {
		return zerr
	}
	v := ZoneView{ID: z.ID.String(), Name: z.Name, Provider: z.Provider, Status: z.Status, Description: z.Description,
		SystemStatus: z.SystemStatus, SystemReason: z.SystemReason, ServiceForm: forms.service, TemplateForm: forms.template}
	if forms.zone {
		v.Errors = web.FormErrors(err)
	}
	v.Lifetimes = z.Lifetimes
	if forms.lifetimes != nil {
		v.Lifetimes, v.LifetimeErrors = *forms.lifetimes, web.FormErrors(err)
	}
	for len(v.TemplateForm.Rows) < templateRows {
		v.TemplateForm.Rows = append(v.TemplateForm.Rows, MemberForm{})
	}
	if ierr := h.inputsOf(ctx, actor, z.ID, "", &v.ServiceForm); ierr != nil {
		return ierr
	}
	choices, cerr := h.svc.ComponentChoices(ctx, actor, z.ID)
	if cerr != nil {
		return cerr
	}
	types, labels := map[string]string{}, map[string]string{}
	for _, ch := range choices {
		v.Components = append(v.Components, views.Option{Value: ch.Value, Label: ch.Label})
		types[ch.Value], labels[ch.Value] = ch.Type, ch.Label
	}
	referFields(&v.ServiceForm, serviceRows(z.SystemServices), types, labels)
	for i := range v.TemplateForm.Rows {
		row := &v.TemplateForm.Rows[i]
		if ierr := h.inputsOf(ctx, actor, z.ID, rowField(i, ""), row); ierr != nil {
			return ierr
		}
		referFields(row, v.TemplateForm.Rows[:i], types, labels)
	}
	v.Services = componentRows(z.SystemServices)
	for _, t := range z.Templates {
		v.Templates = append(v.Templates, TemplateView{ID: t.ID.String(), Name: t.Name, Description: t.Description, Withdrawn: t.Withdrawn,
			Components: componentRows(t.Components)})
	}
	configured := map[string]bool{}
	for _, r := range z.Resolvers {
		configured[r] = true
	}
	for _, t := range resolver.Types() {
		v.Resolvers = append(v.Resolvers, ResolverState{Type: t, Label: resolver.Label(t), Configured: configured[t]})
	}
	list, perr := h.pools.List(ctx, actor, ipam.Filter{LandingZoneID: z.ID})
	if perr != nil {
		return perr
	}
	for _, p := range list {
		full, perr := h.pools.Get(ctx, actor, p.ID)
		if perr != nil {
			return perr
		}
		v.Pools = append(v.Pools, ipam.PoolRow{ID: p.ID.String(), Name: p.Name, Prefix: p.Prefix.String(), Used: full.Used, Utilisation: full.Utilisation})
	}
	for _, e := range z.Environments {
		v.Environments = append(v.Environments, ZoneEnvRow{ID: e.ID.String(), TenantID: e.TenantID.String(), Tenant: e.Tenant, Name: e.Name, Status: e.Status})
	}
	return web.Render(c, status, LandingZonePage(web.Page(c, z.Name).Under(views.Crumb{Label: "Landing zones", URL: "/landing-zones"}), v))
}

func componentRows(ms []Member) []ComponentRow {
	out := make([]ComponentRow, len(ms))
	for i, m := range ms {
		out[i] = ComponentRow{ID: m.ID.String(), Name: m.Name, Component: m.Component, ComponentID: m.ComponentID.String(),
			Parameters: append(views.Values(m.Parameters), refersValues(m.Refers)...), Status: m.Status}
		if m.DeploymentID != nil {
			out[i].DeploymentID = m.DeploymentID.String()
		}
	}
	return out
}

// memberFrom reads a component row of a form whose fields are named under prefix: the
// component, its name, and its inputs by the component's schema. form keeps what was typed,
// for showing the row again.
func (h *Handlers) memberFrom(c echo.Context, zoneID uuid.UUID, prefix string, form *MemberForm) (MemberIn, error) {
	in := MemberIn{Name: strings.TrimSpace(form.Name)}
	var err error
	if in.ComponentID, err = uuid.Parse(form.Component); err != nil {
		return in, problem.Invalid("component_id", "required", "choose a component")
	}
	schema, _, _, err := h.svc.Inputs(web.Ctx(c), web.Actor(c), zoneID, in.ComponentID)
	if err != nil {
		return in, err
	}
	values, _ := c.FormParams()
	form.Typed = paramform.Given(values, prefix)
	form.Chosen = chosenRefers(values, prefix)
	if len(form.Chosen) > 0 {
		in.Refers = form.Chosen
	}
	in.Parameters, err = paramform.Read(values, prefix, schema)
	return in, err
}

// inputsOf lays out the inputs of the component a row has chosen, with what was typed and
// the row's problems; nothing while no component is chosen.
func (h *Handlers) inputsOf(ctx context.Context, actor access.Principal, zoneID uuid.UUID, prefix string, row *MemberForm) error {
	row.Inputs = paramform.Form{Prefix: prefix}
	id, err := uuid.Parse(row.Component)
	if err != nil {
		return nil
	}
	schema, bound, filled, err := h.svc.Inputs(ctx, actor, zoneID, id)
	if web.FormErrors(err) != nil {
		return nil
	}
	if err != nil {
		return err
	}
	row.Inputs = paramform.Build(prefix, schema, row.Typed, row.Errors, bound, filled)
	return nil
}

// InputsFragment answers a form row's component choice with the fields of its inputs; for a
// template's row, also with the refers of the rows after it, which may name it.
func (h *Handlers) InputsFragment(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	ctx, actor, values := web.Ctx(c), web.Actor(c), c.QueryParams()
	prefix := values.Get("row")
	types, labels, err := h.componentTypes(ctx, actor, id)
	if err != nil {
		return err
	}
	row := MemberForm{Component: values.Get(prefix + "component_id")}
	if err := h.inputsOf(ctx, actor, id, prefix, &row); err != nil {
		return err
	}
	before := rowsBefore(values, prefix)
	if prefix == "" {
		// The system-service form: a new service comes after every one the zone has.
		z, err := h.svc.Get(ctx, actor, id)
		if err != nil {
			return err
		}
		before = serviceRows(z.SystemServices)
	}
	referFields(&row, before, types, labels)
	later, err := h.refersAfter(ctx, actor, id, values, prefix, types, labels)
	if err != nil {
		return err
	}
	return web.Render(c, http.StatusOK, templ.Join(append([]templ.Component{memberInputs(prefix, row)}, later...)...))
}

// RefersFragment answers a change of a template row's name with the refers of the rows after
// it, which offer members by name, each sent in place of the one on the page.
func (h *Handlers) RefersFragment(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	ctx, actor := web.Ctx(c), web.Actor(c)
	types, labels, err := h.componentTypes(ctx, actor, id)
	if err != nil {
		return err
	}
	later, err := h.refersAfter(ctx, actor, id, c.QueryParams(), c.QueryParam("row"), types, labels)
	if err != nil {
		return err
	}
	return web.Render(c, http.StatusOK, templ.Join(later...))
}

// refersAfter lays out again, as the template form holds them now, the refers of the rows
// after the one under prefix, keeping what each chose; nothing for the system-service form.
func (h *Handlers) refersAfter(ctx context.Context, actor access.Principal, zoneID uuid.UUID, values url.Values, prefix string,
	types, labels map[string]string) ([]templ.Component, error) {
	n, ok := rowIndex(prefix)
	if !ok {
		return nil, nil
	}
	var out []templ.Component
	for i := n + 1; i < templateRows; i++ {
		at := rowField(i, "")
		row := MemberForm{Component: values.Get(at + "component_id"), Chosen: chosenRefers(values, at)}
		if err := h.inputsOf(ctx, actor, zoneID, at, &row); err != nil {
			return nil, err
		}
		referFields(&row, rowsBefore(values, at), types, labels)
		out = append(out, refersBlock(at, row.Refers, true))
	}
	return out, nil
}

// componentTypes are the semantic types and names of the components the zone's forms offer,
// by ID: what decides which members a refers may name, and how it names them.
func (h *Handlers) componentTypes(ctx context.Context, actor access.Principal, zoneID uuid.UUID) (types, labels map[string]string, err error) {
	choices, err := h.svc.ComponentChoices(ctx, actor, zoneID)
	if err != nil {
		return nil, nil, err
	}
	types, labels = map[string]string{}, map[string]string{}
	for _, ch := range choices {
		types[ch.Value], labels[ch.Value] = ch.Type, ch.Label
	}
	return types, labels, nil
}

// AddSystemServiceForm adds a system service from the zone page.
func (h *Handlers) AddSystemServiceForm(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	form := MemberForm{Component: c.FormValue("component_id"), Name: c.FormValue("name")}
	in, err := h.memberFrom(c, id, "", &form)
	if err == nil {
		_, err = h.svc.AddSystemService(web.Ctx(c), web.Actor(c), id, in)
	}
	if errs := web.FormErrors(err); errs != nil {
		form.Errors = errs
		return h.renderShow(c, http.StatusUnprocessableEntity, pageForms{service: form}, err)
	}
	if err != nil {
		return err
	}
	web.SetFlash(c, web.FlashSuccess, "System service "+in.Name+" added.")
	return web.Redirect(c, "/landing-zones/"+id.String())
}

// AddTemplateForm adds a template from the zone page; component rows left empty are skipped.
func (h *Handlers) AddTemplateForm(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	form := TemplateForm{Name: c.FormValue("name"), Description: c.FormValue("description")}
	in := NewTemplate{Name: form.Name, Description: form.Description, MandatoryComponents: []MemberIn{}}
	// Rows keep their place in the form, so each error lands beside its row.
	index := map[int]int{}
	rowErrors := map[int]error{}
	for i := range templateRows {
		at := rowField(i, "")
		row := MemberForm{Component: c.FormValue(at + "component_id"), Name: c.FormValue(at + "name")}
		if row.Component == "" && row.Name == "" {
			form.Rows = append(form.Rows, row)
			continue
		}
		m, merr := h.memberFrom(c, id, at, &row)
		form.Rows = append(form.Rows, row)
		if merr != nil {
			if web.FormErrors(merr) == nil {
				return merr
			}
			rowErrors[i] = merr
		}
		index[len(in.MandatoryComponents)] = i
		in.MandatoryComponents = append(in.MandatoryComponents, m)
	}
	if len(rowErrors) == 0 {
		_, err = h.svc.AddTemplate(web.Ctx(c), web.Actor(c), id, in)
	} else {
		err = h.svc.CheckTemplate(web.Ctx(c), web.Actor(c), id, in)
	}
	errs := web.FormErrors(err)
	if err != nil && errs == nil {
		return err
	}
	if err == nil && len(rowErrors) == 0 {
		web.SetFlash(c, web.FlashSuccess, "Template "+in.Name+" added.")
		return web.Redirect(c, "/landing-zones/"+id.String())
	}
	form.Errors = views.Errors{}
	for field, msg := range errs {
		var n int
		var rest string
		if _, serr := fmt.Sscanf(field, "mandatory_components[%d].%s", &n, &rest); serr == nil {
			row := &form.Rows[index[n]]
			if row.Errors == nil {
				row.Errors = views.Errors{}
			}
			row.Errors[rest] = msg
			continue
		}
		form.Errors[field] = msg
	}
	// What did not parse was not sent: its own message stands, not the check's of what was.
	for i, rerr := range rowErrors {
		if form.Rows[i].Errors == nil {
			form.Rows[i].Errors = views.Errors{}
		}
		maps.Copy(form.Rows[i].Errors, web.FormErrors(rerr))
	}
	return h.renderShow(c, http.StatusUnprocessableEntity, pageForms{template: form}, err)
}

// WithdrawTemplateForm withdraws a template from the zone page.
func (h *Handlers) WithdrawTemplateForm(c echo.Context) error {
	return h.removeForm(c, "template_id", h.svc.WithdrawTemplate, "Template withdrawn: it opens no more environments.")
}

// RemoveSystemServiceForm takes a system service off a draft zone from its page.
func (h *Handlers) RemoveSystemServiceForm(c echo.Context) error {
	return h.removeForm(c, "service_id", h.svc.RemoveSystemService, "System service removed.")
}

func (h *Handlers) removeForm(c echo.Context, param string, remove func(context.Context, access.Principal, uuid.UUID, uuid.UUID) error, done string) error {
	zone, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	id, err := web.IDParam(c, param)
	if err != nil {
		return err
	}
	err = remove(web.Ctx(c), web.Actor(c), zone, id)
	if web.FormErrors(err) != nil {
		return h.renderShow(c, http.StatusUnprocessableEntity, pageForms{zone: true}, err)
	}
	if err != nil {
		return err
	}
	web.SetFlash(c, web.FlashSuccess, done)
	return web.Redirect(c, "/landing-zones/"+zone.String())
}

// LifetimesForm sets the zone's environment lifetimes from its page.
func (h *Handlers) LifetimesForm(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	in := Lifetimes{Default: c.FormValue("default_ttl"), Max: c.FormValue("max_ttl")}
	_, err = h.svc.SetLifetimes(web.Ctx(c), web.Actor(c), id, in)
	if web.FormErrors(err) != nil {
		return h.renderShow(c, http.StatusUnprocessableEntity, pageForms{lifetimes: &in}, err)
	}
	if err != nil {
		return err
	}
	web.SetFlash(c, web.FlashSuccess, "Environment lifetimes saved: environments opened from now on get them.")
	return web.Redirect(c, "/landing-zones/"+id.String())
}

// PublishForm publishes the zone from its page.
func (h *Handlers) PublishForm(c echo.Context) error {
	return h.zoneForm(c, h.svc.Publish, "Published: its system services are being deployed.")
}

// RetireForm retires the zone from its page once its name is typed to confirm.
func (h *Handlers) RetireForm(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	z, err := h.svc.Get(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	if strings.TrimSpace(c.FormValue("confirm")) != z.Name {
		return h.renderShow(c, http.StatusUnprocessableEntity, pageForms{zone: true}, problem.Invalid("confirm", "match", "type %s to confirm", z.Name))
	}
	return h.zoneForm(c, h.svc.Retire, "Retired: its system services are being destroyed.")
}

func (h *Handlers) zoneForm(c echo.Context, do func(context.Context, access.Principal, uuid.UUID) (Zone, error), done string) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	_, err = do(web.Ctx(c), web.Actor(c), id)
	if web.FormErrors(err) != nil {
		return h.renderShow(c, http.StatusUnprocessableEntity, pageForms{zone: true}, err)
	}
	if err != nil {
		return err
	}
	web.SetFlash(c, web.FlashSuccess, done)
	return web.Redirect(c, "/landing-zones/"+id.String())
}
