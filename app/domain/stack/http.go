package stack

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"nimbus/app/domain/component"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/web"
)

// Handlers serves the stack definition pages and API.
type Handlers struct {
	svc        *Service
	components *component.Service
	instances  Instances
}

// NewHandlers returns the handlers for svc: components offers the slots' components and shows
// their programs, instances lists a stack's instances on its page.
func NewHandlers(svc *Service, components *component.Service, instances Instances) *Handlers {
	return &Handlers{svc: svc, components: components, instances: instances}
}

// ListAPI answers GET /api/v1/stacks.
func (h *Handlers) ListAPI(c echo.Context) error {
	f := Filter{Search: c.QueryParam("q"), Provider: c.QueryParam("provider"), Scope: c.QueryParam("scope")}
	list, err := h.svc.List(web.Ctx(c), web.Actor(c), f)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"stacks": list})
}

// CreateAPI answers POST /api/v1/stacks.
func (h *Handlers) CreateAPI(c echo.Context) error {
	var in New
	if err := web.DecodeJSON(c, &in); err != nil {
		return err
	}
	st, err := h.svc.Create(web.Ctx(c), web.Actor(c), in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, st)
}

// GetAPI answers GET /api/v1/stacks/{id}.
func (h *Handlers) GetAPI(c echo.Context) error {
	return web.OnID(c, h.svc.Get, func(st Stack) error { return c.JSON(http.StatusOK, st) })
}

// UpdateAPI answers PUT /api/v1/stacks/{id}: it replaces the draft.
func (h *Handlers) UpdateAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	var d Draft
	if err := web.DecodeJSON(c, &d); err != nil {
		return err
	}
	st, err := h.svc.UpdateDraft(web.Ctx(c), web.Actor(c), id, d)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, st)
}

// DeleteAPI answers DELETE /api/v1/stacks/{id}.
func (h *Handlers) DeleteAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	if err := h.svc.Delete(web.Ctx(c), web.Actor(c), id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// PublishAPI answers POST /api/v1/stacks/{id}/publish.
func (h *Handlers) PublishAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	var in struct {
		Changelog string `json:"changelog"`
	}
	if err := web.DecodeJSON(c, &in); err != nil {
		return err
	}
	v, err := h.svc.Publish(web.Ctx(c), web.Actor(c), id, in.Changelog)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, v)
}

// VersionsAPI answers GET /api/v1/stacks/{id}/versions.
func (h *Handlers) VersionsAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	vs, err := h.svc.Versions(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"versions": vs})
}

func versionParam(c echo.Context) (int, error) {
	n, err := strconv.ParseInt(c.Param("n"), 10, 32)
	if err != nil || n < 1 {
		return 0, problem.ErrNotFound
	}
	return int(n), nil
}

// VersionAPI answers GET /api/v1/stacks/{id}/versions/{n} with the version's definition.
func (h *Handlers) VersionAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	n, err := versionParam(c)
	if err != nil {
		return err
	}
	v, err := h.svc.Version(web.Ctx(c), web.Actor(c), id, n)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

// ArchiveAPI answers POST /api/v1/stacks/{id}/versions/{n}/archive.
func (h *Handlers) ArchiveAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	n, err := versionParam(c)
	if err != nil {
		return err
	}
	if err := h.svc.Archive(web.Ctx(c), web.Actor(c), id, n); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// DiffAPI answers GET /api/v1/stacks/{id}/diff?from=&to=, or, for a fork,
// ?against=parent&version=&to=.
func (h *Handlers) DiffAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	v := &problem.ValidationError{}
	number := func(name string) int {
		raw := c.QueryParam(name)
		if raw == "" {
			return 0
		}
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 {
			v.Add(name, "integer", "must be a version number from 1")
		}
		return n
	}
	var cmp Compare
	switch c.QueryParam("against") {
	case "":
		cmp = Compare{From: number("from"), To: number("to")}
	case "parent":
		cmp = Compare{From: number("version"), To: number("to"), Parent: true}
	default:
		v.Add("against", "enum", "against is parent, or left out")
	}
	if err := v.Err(); err != nil {
		return err
	}
	d, err := h.svc.Diff(web.Ctx(c), web.Actor(c), id, cmp)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, d)
}

// ForkAPI answers POST /api/v1/stacks/{id}/fork with the new stack.
func (h *Handlers) ForkAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	var in ForkRequest
	if err := web.DecodeJSON(c, &in); err != nil {
		return err
	}
	st, err := h.svc.Fork(web.Ctx(c), web.Actor(c), id, in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, st)
}
