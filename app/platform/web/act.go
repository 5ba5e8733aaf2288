package web

import (
	"context"
	"net/http"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"nimbus/app/kernel/access"
)

// OnID does act to the object with the request's :id on behalf of the actor, and answers with
// what respond makes of the result.
func OnID[T any](c echo.Context, act func(context.Context, access.Principal, uuid.UUID) (T, error), respond func(T) error) error {
	id, err := IDParam(c, "id")
	if err != nil {
		return err
	}
	v, err := act(Ctx(c), Actor(c), id)
	if err != nil {
		return err
	}
	return respond(v)
}

// Follow answers by going on to the page that url names for the result.
func Follow[T any](c echo.Context, url func(T) string) func(T) error {
	return func(v T) error { return Redirect(c, url(v)) }
}

// Accepted answers 202 with the result, for work that goes on after the answer.
func Accepted[T any](c echo.Context) func(T) error {
	return func(v T) error { return c.JSON(http.StatusAccepted, v) }
}
