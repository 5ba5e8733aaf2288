package instance

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"nimbus/app/platform/web"
)

// FireAPI answers POST /api/v1/stack-instances/{id}/transitions {trigger} with 202 and the
// transition's run.
func (h *Handlers) FireAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	// One the caller may not see is not found, whatever the body holds.
	if _, err := h.svc.Get(web.Ctx(c), web.Actor(c), id); err != nil {
		return err
	}
	var body struct {
		Trigger string `json:"trigger"`
	}
	if err := web.DecodeJSON(c, &body); err != nil {
		return err
	}
	run, err := h.svc.Fire(FromAPI(web.Ctx(c)), web.Actor(c), id, body.Trigger)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, run)
}

// RunOperationAPI answers POST /api/v1/stack-instances/{id}/operations/{name} {inputs} with
// 202 and the operation's run.
func (h *Handlers) RunOperationAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	// One the caller may not see is not found, whatever the body holds.
	if _, err := h.svc.Get(web.Ctx(c), web.Actor(c), id); err != nil {
		return err
	}
	var body struct {
		Inputs map[string]any `json:"inputs"`
	}
	if err := web.DecodeJSON(c, &body); err != nil {
		return err
	}
	run, err := h.svc.RunOperation(FromAPI(web.Ctx(c)), web.Actor(c), id, c.Param("name"), body.Inputs)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, run)
}

// OperationsAPI answers GET /api/v1/stack-instances/{id}/operations: the day-2 operations and
// the triggers of the current state, each offered now or not.
func (h *Handlers) OperationsAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	offers, err := h.svc.Operations(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"offers": offers})
}

// HistoryAPI answers GET /api/v1/stack-instances/{id}/history, newest first.
func (h *Handlers) HistoryAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	history, err := h.svc.History(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"history": history})
}
