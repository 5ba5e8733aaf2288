package system

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"
)

func TestHealthz_FailsOnceTheProcessIsWedged(t *testing.T) {
	var wedged error
	h := NewHandlers(nil, nil, Info{}, slog.New(slog.NewTextHandler(io.Discard, nil))).Alive(func() error { return wedged })
	probe := func() int {
		rec := httptest.NewRecorder()
		if err := h.Healthz(echo.New().NewContext(httptest.NewRequest(http.MethodGet, "/healthz", nil), rec)); err != nil {
			t.Fatal(err)
		}
		return rec.Code
	}
	if got := probe(); got != http.StatusOK {
		t.Fatalf("alive: %d", got)
	}
	wedged = errors.New("postgres stopped and could not be restarted")
	if got := probe(); got != http.StatusServiceUnavailable {
		t.Fatalf("wedged: %d, want 503", got)
	}
}
