package component

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"nimbus/app/kernel/problem"
	"nimbus/app/platform/web"
)

// SemanticsPage shows the providers, semantic types and provider resource types, with forms
// for provider admins to add to them.
func (h *Handlers) SemanticsPage(c echo.Context) error {
	return h.renderSemantics(c, http.StatusOK, nil, nil)
}

func (h *Handlers) renderSemantics(c echo.Context, status int, form map[string]string, err error) error {
	actor := web.Actor(c)
	sem, semErr := h.svc.Semantics(web.Ctx(c), actor)
	if semErr != nil {
		return semErr
	}
	rows := make([]SemanticRow, len(sem.ResourceTypes))
	for i, r := range sem.ResourceTypes {
		rows[i] = SemanticRow{Provider: r.Provider, SemanticType: r.SemanticType, PulumiType: r.PulumiType}
	}
	v := SemanticsView{Providers: sem.Providers, SemanticTypes: sem.SemanticTypes, Rows: rows,
		CanEdit: actor.ProviderAdmin, Form: form, Errors: web.FormErrors(err)}
	return web.Render(c, status, SemanticsPage(web.Page(c, "Providers and types"), v))
}

// AddSemanticForm adds a provider, semantic type or resource type from the providers page.
func (h *Handlers) AddSemanticForm(c echo.Context) error {
	kind := c.Param("kind")
	form := map[string]string{"kind": kind}
	for _, f := range []string{"name", "display_name", "description", "provider", "semantic_type", "pulumi_type"} {
		form[f] = c.FormValue(f)
	}
	term := NewTerm{Name: form["name"], DisplayName: form["display_name"], Description: form["description"]}
	var err error
	switch kind {
	case "provider":
		err = h.svc.AddProvider(web.Ctx(c), web.Actor(c), term)
	case "semantic-type":
		err = h.svc.AddSemanticType(web.Ctx(c), web.Actor(c), term)
	case "resource-type":
		err = h.svc.AddResourceType(web.Ctx(c), web.Actor(c), NewResourceType{Provider: form["provider"],
			SemanticType: form["semantic_type"], PulumiType: form["pulumi_type"], Description: form["description"]})
	default:
		return problem.ErrNotFound
	}
	if web.FormErrors(err) != nil {
		return h.renderSemantics(c, http.StatusUnprocessableEntity, form, err)
	}
	if err != nil {
		return err
	}
	web.SetFlash(c, web.FlashSuccess, "Added.")
	return web.Redirect(c, "/admin/providers")
}
