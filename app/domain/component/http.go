package component

import (
	"context"
	"net/http"
	"strconv"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/web"
)

// Handlers serves the component API and pages.
type Handlers struct{ svc *Service }

// NewHandlers returns the handlers for svc.
func NewHandlers(svc *Service) *Handlers { return &Handlers{svc: svc} }

func filterFrom(c echo.Context) (Filter, error) {
	f := Filter{
		Search: c.QueryParam("search"), Provider: c.QueryParam("provider"),
		SemanticType: c.QueryParam("semantic_type"), Scope: c.QueryParam("scope"),
	}
	v := &problem.ValidationError{}
	if raw := c.QueryParam("published"); raw != "" {
		b, err := strconv.ParseBool(raw)
		if err != nil {
			v.Add("published", "boolean", "must be true or false")
		}
		f.PublishedOnly = b
	}
	for name, dst := range map[string]*int{"page": &f.Page, "per_page": &f.PerPage} {
		if raw := c.QueryParam(name); raw != "" {
			n, err := strconv.Atoi(raw)
			if err != nil || n < 1 {
				v.Add(name, "integer", "must be a whole number from 1")
			}
			*dst = n
		}
	}
	return f, v.Err()
}

// ListAPI answers GET /api/v1/components.
func (h *Handlers) ListAPI(c echo.Context) error {
	f, err := filterFrom(c)
	if err != nil {
		return err
	}
	cat, err := h.svc.List(web.Ctx(c), web.Actor(c), f)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, cat)
}

// CreateAPI answers POST /api/v1/components.
func (h *Handlers) CreateAPI(c echo.Context) error {
	var in New
	if err := web.DecodeJSON(c, &in); err != nil {
		return err
	}
	comp, err := h.svc.Create(web.Ctx(c), web.Actor(c), in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, comp)
}

// GetAPI answers GET /api/v1/components/{id}.
func (h *Handlers) GetAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	comp, err := h.svc.Get(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, comp)
}

// UpdateAPI answers PATCH /api/v1/components/{id}: it edits the draft.
func (h *Handlers) UpdateAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	var p Patch
	if err := web.DecodeJSON(c, &p); err != nil {
		return err
	}
	comp, err := h.svc.Update(web.Ctx(c), web.Actor(c), id, p)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, comp)
}

// DeleteAPI answers DELETE /api/v1/components/{id}.
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

// PublishAPI answers POST /api/v1/components/{id}/publish.
func (h *Handlers) PublishAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	var in struct {
		Changelog string `json:"changelog"`
		// Revision is the draft's revision the publisher reviewed; the service refuses a
		// missing one after it has checked access, so that it reveals nothing.
		Revision int `json:"revision"`
	}
	if err := web.DecodeJSON(c, &in); err != nil {
		return err
	}
	v, err := h.svc.Publish(web.Ctx(c), web.Actor(c), id, in.Revision, in.Changelog)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, v)
}

// VersionsAPI answers GET /api/v1/components/{id}/versions.
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

// VersionAPI answers GET /api/v1/components/{id}/versions/{n} with the version's code.
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

// ArchiveVersionAPI answers POST /api/v1/components/{id}/versions/{n}/archive.
func (h *Handlers) ArchiveVersionAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	n, err := versionParam(c)
	if err != nil {
		return err
	}
	if err := h.svc.ArchiveVersion(web.Ctx(c), web.Actor(c), id, n); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// CheckAPI answers POST /api/v1/components/{id}/check with 202 and the queued check. The body
// may be left out; a Proxmox component's names the zone whose API access the check previews
// with: {"landing_zone_id"}.
func (h *Handlers) CheckAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	var in struct {
		LandingZoneID string `json:"landing_zone_id"`
	}
	if c.Request().ContentLength != 0 {
		if err := web.DecodeJSON(c, &in); err != nil {
			return err
		}
	}
	zone, err := zoneParam(in.LandingZoneID)
	if err != nil {
		return err
	}
	chk, err := h.svc.RequestCheck(web.Ctx(c), web.Actor(c), id, zone)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, chk)
}

// GetCheckAPI answers GET /api/v1/checks/{id}.
func (h *Handlers) GetCheckAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	chk, err := h.svc.Check(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, chk)
}

// SemanticsAPI answers GET /api/v1/providers with the whole semantic layer.
func (h *Handlers) SemanticsAPI(c echo.Context) error {
	sem, err := h.svc.Semantics(web.Ctx(c), web.Actor(c))
	if err != nil {
		return err
	}
	type resourceType struct {
		Provider     string `json:"provider"`
		SemanticType string `json:"semantic_type"`
		PulumiType   string `json:"pulumi_type"`
	}
	rts := make([]resourceType, len(sem.ResourceTypes))
	for i, r := range sem.ResourceTypes {
		rts[i] = resourceType{Provider: r.Provider, SemanticType: r.SemanticType, PulumiType: r.PulumiType}
	}
	return c.JSON(http.StatusOK, map[string]any{"providers": sem.Providers, "semantic_types": sem.SemanticTypes, "resource_types": rts})
}

// AddProviderAPI answers POST /api/v1/providers.
func (h *Handlers) AddProviderAPI(c echo.Context) error { return addFromJSON(c, h.svc.AddProvider) }

// AddSemanticTypeAPI answers POST /api/v1/semantic-types.
func (h *Handlers) AddSemanticTypeAPI(c echo.Context) error {
	return addFromJSON(c, h.svc.AddSemanticType)
}

// AddResourceTypeAPI answers POST /api/v1/provider-resource-types.
func (h *Handlers) AddResourceTypeAPI(c echo.Context) error {
	return addFromJSON(c, h.svc.AddResourceType)
}

// addFromJSON decodes the body, hands it to add on behalf of the actor, and answers 201.
func addFromJSON[T any](c echo.Context, add func(context.Context, access.Principal, T) error) error {
	var in T
	if err := web.DecodeJSON(c, &in); err != nil {
		return err
	}
	if err := add(web.Ctx(c), web.Actor(c), in); err != nil {
		return err
	}
	return c.NoContent(http.StatusCreated)
}

// zoneParam reads the landing zone a check previews with: "" for none.
func zoneParam(raw string) (uuid.UUID, error) {
	if raw == "" {
		return uuid.Nil, nil
	}
	id, err := uuid.Parse(raw)
	if err != nil {
		return uuid.Nil, problem.Invalid("landing_zone_id", "uuid", "must be a landing zone's ID")
	}
	return id, nil
}
