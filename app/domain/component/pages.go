package component

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"nimbus/app/domain/proxmox"
	"nimbus/app/domain/resolver"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/web"
	"nimbus/views"
)

// CatalogPage shows the components the viewer may see, with filters and paging.
func (h *Handlers) CatalogPage(c echo.Context) error {
	f, err := filterFrom(c)
	if err != nil {
		return err
	}
	actor := web.Actor(c)
	cat, err := h.svc.List(web.Ctx(c), actor, f)
	if err != nil {
		return err
	}
	sem, err := h.svc.Semantics(web.Ctx(c), actor)
	if err != nil {
		return err
	}
	cards := make([]CatalogCard, len(cat.Components))
	for i, s := range cat.Components {
		cards[i] = CatalogCard{ID: s.ID.String(), Name: s.Name, DisplayName: s.DisplayName, Description: s.Description,
			Provider: s.Provider, SemanticType: s.SemanticType, Language: s.Language, Tenant: s.TenantName, LatestVersion: s.LatestVersion,
			Deployments: s.Deployments, Denied: s.Denied}
	}
	pager := views.Pager{Label: "page " + strconv.Itoa(cat.Page)}
	link := func(page int) string {
		q := c.QueryParams()
		q.Set("page", strconv.Itoa(page))
		return "/catalog?" + q.Encode()
	}
	if cat.Page > 1 {
		pager.PrevURL = link(cat.Page - 1)
	}
	if cat.Page*cat.PerPage < cat.Total {
		pager.NextURL = link(cat.Page + 1)
	}
	filter := CatalogFilter{Search: f.Search, Provider: f.Provider, SemanticType: f.SemanticType, Scope: f.Scope,
		Published: f.PublishedOnly, Providers: sem.Providers, SemanticTypes: sem.SemanticTypes}
	canCreate := actor.CanSomewhere(access.ComponentDefinitionCreate)
	return web.Render(c, http.StatusOK, CatalogPage(web.Page(c, "Catalog"), filter, cards, cat.Total, pager, canCreate))
}

// ShowPage shows a component with its versions.
func (h *Handlers) ShowPage(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	actor := web.Actor(c)
	comp, err := h.svc.Get(web.Ctx(c), actor, id)
	if err != nil {
		return err
	}
	versions, err := h.svc.Versions(web.Ctx(c), actor, id)
	if err != nil {
		return err
	}
	view := ComponentView{
		ID: comp.ID.String(), Name: comp.Name, DisplayName: comp.DisplayName, Description: comp.Description,
		Provider: comp.Provider, SemanticType: comp.SemanticType, Language: comp.Language, Owner: owner(comp), OwnerURL: ownerURL(comp),
		LatestVersion: comp.LatestVersion,
		CanEdit:       can(actor, access.ComponentDefinitionUpdate, comp.TenantID),
		CanPublish:    can(actor, access.ComponentDefinitionPublish, comp.TenantID),
		CanDelete:     can(actor, access.ComponentDefinitionDelete, comp.TenantID),
	}
	for _, v := range versions {
		view.Versions = append(view.Versions, VersionRow{Version: v.Version, Changelog: v.Changelog,
			PublishedBy: v.PublishedBy, PublishedAt: v.PublishedAt, Archived: v.Archived})
	}
	// The contract shown is the latest version's, which deployments get; a component never
	// published shows its draft's.
	inputs, outputs := comp.InputSchema, comp.OutputSchema
	view.ContractOf = "the draft"
	if comp.LatestVersion > 0 {
		v, err := h.svc.Version(web.Ctx(c), actor, id, comp.LatestVersion)
		if err != nil {
			return err
		}
		inputs, outputs, view.ContractOf = v.InputSchema, v.OutputSchema, "v"+strconv.Itoa(v.Version)
	}
	view.Inputs, view.Outputs = contract(inputs), contract(outputs)
	if view.CanEdit {
		if view.Repository, err = h.svc.Repository(web.Ctx(c), actor, id); err != nil {
			return err
		}
	}
	deployed, err := h.svc.Deployments(web.Ctx(c), actor, id)
	if err != nil {
		return err
	}
	for _, d := range deployed {
		view.Deployments = append(view.Deployments, DeploymentRow{ID: d.ID.String(), Name: d.Name, EnvironmentID: d.EnvironmentID.String(),
			Environment: d.Environment, Version: d.Version, Status: d.Status, CreatedAt: d.CreatedAt})
	}
	return web.Render(c, http.StatusOK, ComponentPage(web.Page(c, comp.DisplayName).Under(catalogCrumb), view))
}

// contract lists a schema's properties in its order, for the component's page; a schema that
// cannot be read lists nothing.
func contract(raw json.RawMessage) []PropertyRow {
	s := ParseSchema("schema", raw, &problem.ValidationError{})
	if s == nil {
		return nil
	}
	required := map[string]bool{}
	for _, r := range s.Required {
		required[r] = true
	}
	var out []PropertyRow
	for _, name := range s.Names() {
		p := s.Properties[name]
		row := PropertyRow{Name: name, Title: p.Title, Type: p.Type, Description: p.Description, Required: required[name], Secret: p.Secret}
		switch {
		case p.Type == "array" && p.Items != nil:
			row.Type = "list of " + p.Items.Type
		case p.IsMap():
			row.Type = "map of strings"
		}
		if p.Default != nil {
			row.Default = views.Value(p.Default)
		}
		out = append(out, row)
	}
	return out
}

func owner(c Component) string {
	if c.ProviderLevel() {
		return "the provider (every tenant sees it)"
	}
	return "tenant " + c.TenantName
}

// ownerURL is the page of the tenant owning c; "" for a provider-level component.
func ownerURL(c Component) string {
	if c.ProviderLevel() {
		return ""
	}
	return "/tenants/" + c.TenantID.String()
}

// NewPage shows the editor for a new component, prefilled with the starter of the provider
// and semantic type asked for (simcloud and VirtualMachine unless the query says otherwise).
func (h *Handlers) NewPage(c echo.Context) error {
	sem, err := h.svc.Semantics(web.Ctx(c), web.Actor(c))
	if err != nil {
		return err
	}
	e := EditorView{Language: "yaml", Provider: "simcloud", SemanticType: "VirtualMachine", ResolverBindings: "{}"}
	if p := c.QueryParam("provider"); p != "" {
		e.Provider = p
	}
	if t := c.QueryParam("semantic_type"); t != "" {
		e.SemanticType = t
	}
	st, ok := sem.Starter(e.Provider, e.SemanticType)
	if !ok {
		return problem.Invalid("semantic_type", "exists", "choose a provider and a semantic type from the lists")
	}
	e.Code, e.InputSchema, e.OutputSchema = st.Code, st.InputSchema, st.OutputSchema
	return h.renderEditor(c, http.StatusOK, e, nil)
}

// StarterAPI answers GET /components/starter with the draft a new component of the provider
// and semantic type in the query starts from, for the editor to swap in when either changes.
func (h *Handlers) StarterAPI(c echo.Context) error {
	sem, err := h.svc.Semantics(web.Ctx(c), web.Actor(c))
	if err != nil {
		return err
	}
	st, ok := sem.Starter(c.QueryParam("provider"), c.QueryParam("semantic_type"))
	if !ok {
		return problem.Invalid("semantic_type", "exists", "choose a provider and a semantic type from the lists")
	}
	return c.JSON(http.StatusOK, st)
}

// renderEditor fills in the choices and shows the editor with any problems from err.
func (h *Handlers) renderEditor(c echo.Context, status int, e EditorView, err error) error {
	actor := web.Actor(c)
	sem, semErr := h.svc.Semantics(web.Ctx(c), actor)
	if semErr != nil {
		return semErr
	}
	e.Providers, e.SemanticTypes = sem.Providers, sem.SemanticTypes
	targets, _ := json.Marshal(resolver.Targets())
	e.ResolverTargets = string(targets)
	hosts := h.svc.engine.LanguageHosts()
	for _, lang := range Languages {
		opt := LanguageOption{Value: lang, Label: languageLabel[lang]}
		if !hosts[languageHost(lang)] {
			opt.Disabled = "the pulumi-language-" + languageHost(lang) + " host is not installed"
		}
		e.Languages = append(e.Languages, opt)
	}
	if actor.ProviderAdmin {
		e.Tenants = append(e.Tenants, views.Option{Value: "", Label: "Provider (every tenant)"})
	}
	owners, ownErr := h.svc.Owners(web.Ctx(c), actor)
	if ownErr != nil {
		return ownErr
	}
	for _, o := range owners {
		e.Tenants = append(e.Tenants, views.Option{Value: o.ID.String(), Label: "Tenant " + o.Name})
	}
	e.Errors = web.FormErrors(err)
	if e.Outcome.Refused == "" && e.PublishOutcome.Refused == "" && e.Errors != nil {
		e.Outcome = refused("The draft was not saved: fix the problems marked below.", err)
	}
	page := web.Page(c, "New component").Under(catalogCrumb)
	if e.ID != "" {
		title := "Edit draft"
		if e.ReadOnly {
			title = "Version " + strconv.Itoa(e.Version)
		}
		page = web.Page(c, title).Under(catalogCrumb, views.Crumb{Label: e.DisplayName, URL: "/components/" + e.ID})
	}
	if e.ID != "" && !e.ReadOnly && e.CanPublish {
		id, _ := uuid.Parse(e.ID)
		why, gateErr := h.publishGate(c, id)
		if gateErr != nil {
			return gateErr
		}
		e.PublishGate = why
	}
	if e.ID != "" && !e.ReadOnly && e.Provider == proxmox.Provider {
		zones, err := h.svc.CheckZones(web.Ctx(c), web.Actor(c))
		switch {
		case errors.Is(err, problem.ErrForbidden):
			e.CheckRefused = providerAdminsCheck
		case err != nil:
			return err
		case len(zones) == 0:
			e.CheckRefused = proxmox.NoZoneWithAccess
		}
		e.CheckZones = zones
	}
	return web.Render(c, status, Editor(page, e))
}

var catalogCrumb = views.Crumb{Label: "Catalog", URL: "/catalog"}

// publishGate says why the viewer cannot publish the draft yet (see Service.PublishGate).
func (h *Handlers) publishGate(c echo.Context, id uuid.UUID) (string, error) {
	comp, err := h.svc.Get(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return "", err
	}
	if !can(web.Actor(c), access.ComponentDefinitionPublish, comp.TenantID) {
		return "", problem.ErrForbidden
	}
	return h.svc.PublishGate(web.Ctx(c), comp)
}

// gateUpdate is the Publish button as the engine's checks now leave it, to replace the page's
// after a save or a check; nothing for those who may not publish.
func (h *Handlers) gateUpdate(c echo.Context, id uuid.UUID) (templ.Component, error) {
	why, err := h.publishGate(c, id)
	if errors.Is(err, problem.ErrForbidden) {
		return templ.NopComponent, nil
	}
	if err != nil {
		return nil, err
	}
	return PublishGate(why, true), nil
}

var languageLabel = map[string]string{"yaml": "YAML", "typescript": "TypeScript", "python": "Python"}

func draftFromForm(c echo.Context) Draft {
	return Draft{
		Name: c.FormValue("name"), DisplayName: c.FormValue("display_name"), Description: c.FormValue("description"),
		Language: c.FormValue("language"), Code: normaliseNewlines(c.FormValue("code")),
		InputSchema: json.RawMessage(c.FormValue("input_schema")), OutputSchema: json.RawMessage(c.FormValue("output_schema")),
		ResolverBindings: json.RawMessage(c.FormValue("resolver_bindings")),
	}
}

// patch sets every editable part of the draft to d's.
func (d Draft) patch() Patch {
	return Patch{DisplayName: &d.DisplayName, Description: &d.Description, Language: &d.Language, Code: &d.Code,
		InputSchema: &d.InputSchema, OutputSchema: &d.OutputSchema, ResolverBindings: &d.ResolverBindings}
}

// normaliseNewlines undoes the CRLF that browsers send for textarea content.
func normaliseNewlines(s string) string { return strings.ReplaceAll(s, "\r\n", "\n") }

// CreateForm creates a component from the editor.
func (h *Handlers) CreateForm(c echo.Context) error {
	d := draftFromForm(c)
	in := New{Draft: d, Provider: c.FormValue("provider"), SemanticType: c.FormValue("semantic_type")}
	if raw := c.FormValue("tenant_id"); raw != "" {
		id, err := uuid.Parse(raw)
		if err != nil {
			return problem.Invalid("tenant_id", "uuid", "choose an owner from the list")
		}
		in.TenantID = &id
	}
	comp, err := h.svc.Create(web.Ctx(c), web.Actor(c), in)
	if web.FormErrors(err) != nil {
		return h.formFailed(c, EditorView{Name: d.Name, DisplayName: d.DisplayName, Description: d.Description,
			Language: d.Language, Provider: in.Provider, SemanticType: in.SemanticType, TenantID: c.FormValue("tenant_id"),
			Code: d.Code, InputSchema: string(d.InputSchema), OutputSchema: string(d.OutputSchema),
			ResolverBindings: string(d.ResolverBindings)}, err)
	}
	if err != nil {
		return err
	}
	web.SetFlash(c, web.FlashSuccess, "Component "+comp.Name+" created. Check it, then publish its first version.")
	return web.Redirect(c, "/components/"+comp.ID.String()+"/edit")
}

// formFailed answers a refused save: htmx gets the problem list (and markers), a plain form
// post gets the whole editor again with the author's text kept.
func (h *Handlers) formFailed(c echo.Context, e EditorView, err error) error {
	if c.Request().Header.Get("HX-Request") == "true" {
		return web.Render(c, http.StatusUnprocessableEntity, SaveResult(refused("The draft was not saved: fix the problems marked below.", err)))
	}
	return h.renderEditor(c, http.StatusUnprocessableEntity, e, err)
}

// EditPage shows the draft in the editor.
func (h *Handlers) EditPage(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	actor := web.Actor(c)
	comp, err := h.svc.Get(web.Ctx(c), actor, id)
	if err != nil {
		return err
	}
	if !can(actor, access.ComponentDefinitionUpdate, comp.TenantID) {
		return problem.ErrForbidden
	}
	e := editorView(comp, actor)
	link, err := h.svc.Repository(web.Ctx(c), actor, id)
	if err != nil {
		return err
	}
	if link != nil {
		e.Linked = whereToChange(link.URL, link.Path, link.Branch)
		e.DraftCommit, e.DraftAuthor, e.DraftMessage = link.DraftCommit, link.DraftAuthor, link.DraftMessage
	}
	return h.renderEditor(c, http.StatusOK, e, nil)
}

func editorView(comp Component, actor access.Principal) EditorView {
	return EditorView{ID: comp.ID.String(), Name: comp.Name, DisplayName: comp.DisplayName, Description: comp.Description,
		Language: comp.Language, Provider: comp.Provider, SemanticType: comp.SemanticType, Code: comp.Code,
		InputSchema: pretty(comp.InputSchema), OutputSchema: pretty(comp.OutputSchema), ResolverBindings: pretty(comp.ResolverBindings),
		Revision: comp.Revision, CanPublish: can(actor, access.ComponentDefinitionPublish, comp.TenantID)}
}

func pretty(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

// SaveDraftForm saves the draft from the editor: by htmx (Ctrl+S, the Save button) or as a
// plain form post.
func (h *Handlers) SaveDraftForm(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	d := draftFromForm(c)
	actor := web.Actor(c)
	comp, err := h.svc.Update(web.Ctx(c), actor, id, d.patch())
	if web.FormErrors(err) != nil {
		current, getErr := h.svc.Get(web.Ctx(c), actor, id)
		if getErr != nil {
			return getErr
		}
		e := editorView(current, actor)
		e.DisplayName, e.Description, e.Language, e.Code = d.DisplayName, d.Description, d.Language, d.Code
		e.InputSchema, e.OutputSchema, e.ResolverBindings = string(d.InputSchema), string(d.OutputSchema), string(d.ResolverBindings)
		return h.formFailed(c, e, err)
	}
	if err != nil {
		return err
	}
	if c.Request().Header.Get("HX-Request") == "true" {
		saved := SaveResult(Outcome{SavedAt: time.Now().UTC().Format("15:04:05 UTC"), JSON: "[]"})
		gate, err := h.gateUpdate(c, id)
		if err != nil {
			return err
		}
		// The editor now shows the saved draft: its publish form names this revision, and
		// Publish waits for a check of it.
		return web.Render(c, http.StatusOK, templ.Join(saved, DraftRevision(comp.Revision, true), gate))
	}
	web.SetFlash(c, web.FlashSuccess, "Draft of "+comp.Name+" saved.")
	return web.Redirect(c, "/components/"+id.String()+"/edit")
}

// PublishForm publishes the saved draft with the changelog from the editor.
func (h *Handlers) PublishForm(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	actor := web.Actor(c)
	// A missing or malformed revision is 0, which Publish refuses once it knows the component.
	revision, _ := strconv.Atoi(c.FormValue("revision"))
	v, err := h.svc.Publish(web.Ctx(c), actor, id, revision, c.FormValue("changelog"))
	if web.FormErrors(err) != nil {
		comp, getErr := h.svc.Get(web.Ctx(c), actor, id)
		if getErr != nil {
			return getErr
		}
		// The editor shows the draft as it is now, with its revision, to review again.
		e := editorView(comp, actor)
		why := "Not published: the saved draft needs the fixes below first."
		switch problem.FieldOf(err) {
		case "revision":
			why = "Not published: the draft changed after you opened it. It is shown above as it is now."
		case "changelog", "check":
			why = "Not published:"
		}
		e.PublishOutcome = refused(why, err)
		e.Changelog = c.FormValue("changelog")
		return h.renderEditor(c, http.StatusUnprocessableEntity, e, err)
	}
	if err != nil {
		return err
	}
	web.SetFlash(c, web.FlashSuccess, "Published v"+strconv.Itoa(v.Version)+".")
	return web.Redirect(c, "/components/"+id.String())
}

// DeleteForm deletes a component from its page.
func (h *Handlers) DeleteForm(c echo.Context) error {
	if err := h.DeleteAPI(c); err != nil {
		return err
	}
	web.SetFlash(c, web.FlashSuccess, "Component deleted.")
	return web.Redirect(c, "/catalog")
}
