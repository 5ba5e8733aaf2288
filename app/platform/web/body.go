package web

import (
	"errors"
	"io"
	"net/http"

	"github.com/labstack/echo/v4"

	"nimbus/app/kernel/problem"
)

// ReadBody reads the request's whole body, which the body limit bounds, for a handler that
// takes it as it is. A body over the limit is answered 413, as DecodeJSON answers it; a
// problem found in what the body holds as it is read is answered as it is.
func ReadBody(c echo.Context) ([]byte, error) {
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return nil, bodyError(err)
	}
	return body, nil
}

// bodyError says what went wrong reading a body: a problem with what it holds stays as it
// is, one over the limit is 413, anything else could not be read at all.
func bodyError(err error) error {
	var (
		invalid  *problem.ValidationError
		maxBytes *http.MaxBytesError
		tooLarge *echo.HTTPError
	)
	switch {
	case errors.As(err, &invalid):
		return err
	case errors.As(err, &maxBytes), errors.As(err, &tooLarge) && tooLarge.Code == http.StatusRequestEntityTooLarge:
		return echo.NewHTTPError(http.StatusRequestEntityTooLarge, "the request body is too large")
	}
	return &BadRequest{Message: "the request body could not be read"}
}
