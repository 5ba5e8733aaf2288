package component

import (
	"net/http"
	"path"
	"strings"

	"github.com/labstack/echo/v4"

	"nimbus/app/kernel/problem"
	"nimbus/app/platform/web"
)

// RepositoryPage shows the component's repository link and its syncs, or the form to link one.
func (h *Handlers) RepositoryPage(c echo.Context) error {
	return h.renderRepository(c, http.StatusOK, RepositoryView{Form: NewLink{TagPattern: "v*", Branch: "main"}})
}

// LinkRepositoryForm links the component from its repository page, and shows the webhook's
// secret this once.
func (h *Handlers) LinkRepositoryForm(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	in := NewLink{URL: c.FormValue("url"), Path: c.FormValue("path"), Branch: c.FormValue("branch"),
		TagPattern: c.FormValue("tag_pattern"), User: c.FormValue("user"), Token: c.FormValue("token"),
		Forge: c.FormValue("forge"), StatusAPI: c.FormValue("status_api")}
	linked, err := h.svc.LinkRepository(web.Ctx(c), web.Actor(c), id, in)
	if errs := web.FormErrors(err); errs != nil {
		in.Token = "" // never sent back
		return h.renderRepository(c, http.StatusUnprocessableEntity, RepositoryView{Form: in, Errors: errs})
	}
	if err != nil {
		return err
	}
	return h.renderRepository(c, http.StatusOK, RepositoryView{Secret: linked.WebhookSecret})
}

// UnlinkRepositoryForm unlinks the component from its repository page.
func (h *Handlers) UnlinkRepositoryForm(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	if err := h.svc.UnlinkRepository(web.Ctx(c), web.Actor(c), id); err != nil {
		return err
	}
	return web.Redirect(c, "/components/"+id.String()+"/repository")
}

func (h *Handlers) renderRepository(c echo.Context, status int, view RepositoryView) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	actor := web.Actor(c)
	comp, err := h.svc.Get(web.Ctx(c), actor, id)
	if err != nil {
		return err
	}
	link, err := h.svc.Repository(web.Ctx(c), actor, id)
	if err != nil {
		return err
	}
	view.ID, view.Name, view.DisplayName, view.Link = comp.ID.String(), comp.Name, comp.DisplayName, link
	if link != nil {
		view.WebhookURL = c.Scheme() + "://" + c.Request().Host + link.WebhookPath
	}
	page := web.Page(c, comp.DisplayName+": repository").Under(catalogCrumb)
	return web.Render(c, status, RepositoryPage(page, view))
}

// RepositoryAPI answers GET /api/v1/components/{id}/repository: the link and its latest
// syncs; 404 when the component has none.
func (h *Handlers) RepositoryAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	link, err := h.svc.Repository(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	if link == nil {
		return problem.ErrNotFound
	}
	return c.JSON(http.StatusOK, link)
}

// LinkRepositoryAPI answers PUT /api/v1/components/{id}/repository with 201 and the link,
// its webhook's secret this once.
func (h *Handlers) LinkRepositoryAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	var in NewLink
	if err := web.DecodeJSON(c, &in); err != nil {
		return err
	}
	linked, err := h.svc.LinkRepository(web.Ctx(c), web.Actor(c), id, in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, linked)
}

// UnlinkRepositoryAPI answers DELETE /api/v1/components/{id}/repository.
func (h *Handlers) UnlinkRepositoryAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	if err := h.svc.UnlinkRepository(web.Ctx(c), web.Actor(c), id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// linkedFile is the path of the linked program in its repository.
func linkedFile(l *Link) string { return path.Join(l.Path, ProgramFile) }

// shortCommit is a commit's id as people read it.
func shortCommit(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// firstLine is a commit message's subject.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
