package ipam

import (
	"net/http"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"nimbus/app/kernel/problem"
	"nimbus/app/platform/web"
)

// Handlers serves the IPAM pages and API.
type Handlers struct{ svc *Service }

// NewHandlers returns the handlers for svc.
func NewHandlers(svc *Service) *Handlers { return &Handlers{svc: svc} }

// CreateAPI answers POST /api/v1/ipam/pools with 201 and the pool.
func (h *Handlers) CreateAPI(c echo.Context) error {
	var in NewPool
	if err := web.DecodeJSON(c, &in); err != nil {
		return err
	}
	p, err := h.svc.CreatePool(web.Ctx(c), web.Actor(c), in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, p)
}

// ListAPI answers GET /api/v1/ipam/pools?environment_id=&landing_zone_id=.
func (h *Handlers) ListAPI(c echo.Context) error {
	var f Filter
	for field, dst := range map[string]*uuid.UUID{"environment_id": &f.EnvironmentID, "landing_zone_id": &f.LandingZoneID} {
		if s := c.QueryParam(field); s != "" {
			var err error
			if *dst, err = uuid.Parse(s); err != nil {
				return problem.Invalid(field, "uuid", "is not an ID")
			}
		}
	}
	pools, err := h.svc.List(web.Ctx(c), web.Actor(c), f)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"pools": pools})
}

// GetAPI answers GET /api/v1/ipam/pools/{id} with the pool and its allocations.
func (h *Handlers) GetAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	p, err := h.svc.Get(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	if p.Allocations == nil {
		p.Allocations = []Allocation{}
	}
	return c.JSON(http.StatusOK, p)
}
