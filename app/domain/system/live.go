package system

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// Alive makes /healthz ask check whether the process can still do its work (its embedded
// database's supervisor has not given up nor stopped coming round), not only whether it
// answers HTTP. check may be nil.
func (h *Handlers) Alive(check func() error) *Handlers {
	h.alive = check
	return h
}

// Healthz answers 200 while the process is alive and 503 once it is wedged, so that whatever
// runs it restarts it. A database that is away but being brought back is not a reason:
// /readyz says that. Why it failed goes to the log.
func (h *Handlers) Healthz(c echo.Context) error {
	if h.alive != nil {
		if err := h.alive(); err != nil {
			h.log.Error("not alive", "err", err)
			return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "failing"})
		}
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}
