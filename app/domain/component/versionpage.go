package component

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/labstack/echo/v4"

	"nimbus/app/kernel/problem"
	"nimbus/app/platform/web"
	"nimbus/views"
)

// VersionPage shows a published version read-only.
func (h *Handlers) VersionPage(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	n, err := versionParam(c)
	if err != nil {
		return err
	}
	actor := web.Actor(c)
	comp, err := h.svc.Get(web.Ctx(c), actor, id)
	if err != nil {
		return err
	}
	v, err := h.svc.Version(web.Ctx(c), actor, id, n)
	if err != nil {
		return err
	}
	e := editorView(comp, actor)
	e.ReadOnly, e.Version, e.Language, e.Code = true, v.Version, v.Language, v.Code
	e.InputSchema, e.OutputSchema, e.ResolverBindings = pretty(v.InputSchema), pretty(v.OutputSchema), pretty(v.ResolverBindings)
	return h.renderEditor(c, http.StatusOK, e, nil)
}

// DiffPage shows two versions side by side.
func (h *Handlers) DiffPage(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	// The component first: one the viewer cannot see is not found, whatever the query.
	actor := web.Actor(c)
	comp, err := h.svc.Get(web.Ctx(c), actor, id)
	if err != nil {
		return err
	}
	from, err1 := strconv.ParseInt(c.QueryParam("from"), 10, 32)
	to, err2 := strconv.ParseInt(c.QueryParam("to"), 10, 32)
	if err1 != nil || err2 != nil {
		return problem.Invalid("from", "integer", "choose two versions to compare")
	}
	a, err := h.svc.Version(web.Ctx(c), actor, id, int(from))
	if err != nil {
		return err
	}
	b, err := h.svc.Version(web.Ctx(c), actor, id, int(to))
	if err != nil {
		return err
	}
	d := DiffView{ID: id.String(), Name: comp.DisplayName, From: int(from), To: int(to), Part: c.QueryParam("part")}
	switch d.Part {
	case "input_schema":
		d.Old, d.New, d.Language = pretty(a.InputSchema), pretty(b.InputSchema), "json"
	case "output_schema":
		d.Old, d.New, d.Language = pretty(a.OutputSchema), pretty(b.OutputSchema), "json"
	case "resolver_bindings":
		d.Old, d.New, d.Language = pretty(a.ResolverBindings), pretty(b.ResolverBindings), "json"
	default:
		d.Part, d.Old, d.New, d.Language = "code", a.Code, b.Code, b.Language
		if a.Language != b.Language {
			d.Note = "The language changed from " + a.Language + " to " + b.Language + "."
		}
	}
	page := web.Page(c, "Compare v"+strconv.Itoa(d.From)+" with v"+strconv.Itoa(d.To)).
		Under(catalogCrumb, views.Crumb{Label: comp.DisplayName, URL: "/components/" + id.String()})
	return web.Render(c, http.StatusOK, Diff(page, d))
}

// ArchiveVersionForm archives a version from the component page.
func (h *Handlers) ArchiveVersionForm(c echo.Context) error {
	if err := h.ArchiveVersionAPI(c); err != nil {
		return err
	}
	web.SetFlash(c, web.FlashSuccess, "Version archived.")
	return web.Redirect(c, "/components/"+url.PathEscape(c.Param("id")))
}
