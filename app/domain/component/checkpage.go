package component

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"nimbus/app/kernel/problem"
	"nimbus/app/platform/web"
)

// CheckForm saves what the editor holds, so that the engine checks what the author sees, then
// starts a check and answers with its live panel.
func (h *Handlers) CheckForm(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	var saved *Component
	if c.FormValue("code") != "" {
		d := draftFromForm(c)
		comp, err := h.svc.Update(web.Ctx(c), web.Actor(c), id, d.patch())
		if web.FormErrors(err) != nil {
			return web.Render(c, http.StatusUnprocessableEntity, SaveResult(refused("Not checked: the draft has problems to fix first.", err)))
		}
		if err != nil {
			return err
		}
		saved = &comp
	}
	zone, err := zoneParam(c.FormValue("landing_zone_id"))
	if err != nil {
		return err
	}
	chk, err := h.svc.RequestCheck(web.Ctx(c), web.Actor(c), id, zone)
	if err != nil {
		return err
	}
	gate, err := h.gateUpdate(c, id)
	if err != nil {
		return err
	}
	if saved != nil {
		return web.Render(c, http.StatusAccepted, templ.Join(checkPanel(chk), DraftRevision(saved.Revision, true), gate))
	}
	return web.Render(c, http.StatusAccepted, templ.Join(checkPanel(chk), gate))
}

// CheckPanel answers the editor's polling with the check's progress.
func (h *Handlers) CheckPanel(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	chk, err := h.svc.Check(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	if !chk.Done() {
		return web.Render(c, http.StatusOK, checkPanel(chk))
	}
	// The check's end may open the way to publishing; once passed, an earlier refusal to
	// publish is out of date.
	gate, err := h.gateUpdate(c, chk.ComponentID)
	if err != nil {
		return err
	}
	if chk.Status == CheckSucceeded {
		gate = templ.Join(gate, clearPublishResult())
	}
	return web.Render(c, http.StatusOK, templ.Join(checkPanel(chk), gate))
}

func checkPanel(chk Check) templ.Component {
	elapsed := ""
	if chk.StartedAt != nil {
		end := time.Now()
		if chk.FinishedAt != nil {
			end = *chk.FinishedAt
		}
		elapsed = end.Sub(*chk.StartedAt).Round(100 * time.Millisecond).String()
	}
	return CheckPanel(chk.ID.String(), chk.Status, chk.Output, elapsed, chk.Done())
}

// refused lists a validation error's problems for the editor, with why nothing happened.
func refused(why string, err error) Outcome {
	o := Outcome{Refused: why, JSON: "[]"}
	var v *problem.ValidationError
	if !errors.As(err, &v) {
		return o
	}
	for _, f := range v.Fields {
		o.Problems = append(o.Problems, Problem{Field: f.Field, Message: f.Message, Line: f.Line, Column: f.Column})
	}
	b, _ := json.Marshal(v.Fields)
	o.JSON = string(b)
	return o
}
