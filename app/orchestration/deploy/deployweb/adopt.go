package deployweb

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"nimbus/app/kernel/problem"
	"nimbus/app/orchestration/deploy"
	"nimbus/app/platform/web"
)

// AdoptAPI answers POST /api/v1/inventory/{id}/adopt: a provider admin adopts an unmanaged
// item into a new deployment (see deploy.Service.Adopt), asked for as a deploy is.
func (h *Handlers) AdoptAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	var req deploy.Request
	if err := web.DecodeJSON(c, &req); err != nil {
		return err
	}
	d, op, err := h.svc.Adopt(web.Ctx(c), web.Actor(c), id, req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, map[string]any{"deployment": d, "operation": op})
}

// AdoptForm adopts an item from its page, with the parameters given as a JSON object, and
// follows the operation; a refusal goes back to the item's page, naming what to change.
func (h *Handlers) AdoptForm(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	component, _ := uuid.Parse(c.FormValue("component_id")) // none chosen is refused by name
	environment, _ := uuid.Parse(c.FormValue("environment_id"))
	req := deploy.Request{ComponentID: component, EnvironmentID: environment, Name: strings.TrimSpace(c.FormValue("name"))}
	var op deploy.Operation
	if given := strings.TrimSpace(c.FormValue("parameters")); given != "" && json.Unmarshal([]byte(given), &req.Parameters) != nil {
		err = problem.Invalid("parameters", "json", "must be a JSON object, such as {\"name\": \"legacy-box\"}")
	} else {
		_, op, err = h.svc.Adopt(web.Ctx(c), web.Actor(c), id, req)
	}
	if errs := web.FormErrors(err); errs != nil {
		for _, field := range slices.Sorted(maps.Keys(errs)) {
			web.SetFlash(c, web.FlashError, "Not adopted: "+field+" "+errs[field]+".")
		}
		return web.Redirect(c, "/inventory/"+id.String())
	}
	if err != nil {
		return err
	}
	return web.Redirect(c, "/operations/"+op.ID.String())
}
