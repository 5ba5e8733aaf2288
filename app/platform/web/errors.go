package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/views"
)

// BadRequest is input that could not be read at all, such as malformed JSON.
type BadRequest struct{ Message string }

func (e *BadRequest) Error() string { return e.Message }

// DecodeJSON reads the request body into v, refusing unknown fields and trailing data, and
// says in plain words what is wrong with a body it cannot read.
func DecodeJSON(c echo.Context, v any) error {
	ct := c.Request().Header.Get(echo.HeaderContentType)
	if ct != "" && !strings.HasPrefix(ct, echo.MIMEApplicationJSON) {
		return &BadRequest{Message: "the request body must be JSON (Content-Type: application/json)"}
	}
	dec := json.NewDecoder(c.Request().Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonProblem(err)
	}
	if dec.More() {
		return &BadRequest{Message: "the request body must hold a single JSON object"}
	}
	return nil
}

func jsonProblem(err error) error {
	var (
		syntax   *json.SyntaxError
		typeErr  *json.UnmarshalTypeError
		maxBytes *http.MaxBytesError
		tooLarge *echo.HTTPError
		invalid  *problem.ValidationError
	)
	switch {
	case errors.As(err, &invalid): // what the body holds, such as a NUL (RefuseNUL)
		return err
	case errors.As(err, &maxBytes), errors.As(err, &tooLarge) && tooLarge.Code == http.StatusRequestEntityTooLarge:
		return echo.NewHTTPError(http.StatusRequestEntityTooLarge, "the request body is too large")
	case errors.Is(err, io.EOF):
		return &BadRequest{Message: "the request body is empty; send a JSON object"}
	case errors.As(err, &syntax), errors.Is(err, io.ErrUnexpectedEOF):
		return &BadRequest{Message: "the request body is not valid JSON"}
	case errors.As(err, &typeErr):
		return &BadRequest{Message: fmt.Sprintf("field %q must be a %s", typeErr.Field, jsonType(typeErr.Type.Kind().String()))}
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return &BadRequest{Message: "unknown field " + strings.TrimPrefix(err.Error(), "json: unknown field ")}
	}
	return &BadRequest{Message: "the request body could not be read: " + err.Error()}
}

func jsonType(kind string) string {
	switch kind {
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "slice", "array":
		return "list"
	case "map", "struct":
		return "object"
	}
	return "number"
}

// apiError is the JSON shape of every API error.
type apiError struct {
	Error  string               `json:"error"`
	Errors []problem.FieldError `json:"errors,omitempty"`
}

// ErrorHandler turns any error a handler returns into the right status and a clear message:
// JSON for the API, a friendly page otherwise. Unexpected errors are logged and shown as a
// generic 500 without details.
func ErrorHandler(log *slog.Logger) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		// A client that went away has no one left to read an answer, and its leaving is no
		// fault of ours: the request logger records it as abandoned.
		if c.Response().Committed || Abandoned(c, err) {
			return
		}
		status, body := classify(err)
		if status == http.StatusInternalServerError {
			log.Error("request failed", "method", c.Request().Method, "path", c.Request().URL.Path, "err", err)
		}
		var (
			limited     *problem.TooManyRequests
			unavailable *problem.Unavailable
		)
		switch {
		case errors.As(err, &limited):
			c.Response().Header().Set("Retry-After", strconv.Itoa(limited.RetryAfter))
		case errors.As(err, &unavailable):
			c.Response().Header().Set("Retry-After", strconv.Itoa(unavailable.RetryAfter))
		}
		if IsAPI(c) || strings.HasPrefix(c.Request().URL.Path, "/admin/jobs/api") {
			_ = c.JSON(status, body)
			return
		}
		if c.Request().Header.Get("HX-Request") == "true" {
			htmxError(c, status, body.Error)
			return
		}
		if status == http.StatusUnauthorized {
			_ = c.Redirect(http.StatusSeeOther, "/login?next="+url.QueryEscape(c.Request().URL.RequestURI()))
			return
		}
		if c.Request().Method == http.MethodHead {
			_ = c.NoContent(status)
			return
		}
		_ = Render(c, status, views.ErrorPage(Page(c, http.StatusText(status)), status, body.Error))
	}
}

// htmxError answers a failed htmx request. A redirect would be followed inside the request and
// the sign-in page swapped into whatever small target asked, so a lost session sends the whole
// window there with HX-Redirect instead. Other errors get just their message as plain text,
// for app.js to show as a flash rather than a whole error page.
func htmxError(c echo.Context, status int, message string) {
	if status == http.StatusUnauthorized {
		c.Response().Header().Set("HX-Redirect", "/login?next="+url.QueryEscape(htmxCurrentPage(c)))
		_ = c.NoContent(status)
		return
	}
	_ = c.String(status, message)
}

// htmxCurrentPage is the page an htmx request was made from, to return to after signing in.
func htmxCurrentPage(c echo.Context) string {
	u, err := url.Parse(c.Request().Header.Get("HX-Current-URL"))
	if err != nil || !strings.HasPrefix(u.Path, "/") {
		return "/"
	}
	return u.RequestURI()
}

// StatusClientClosedRequest is the status logs and metrics give a request its client abandoned
// before the answer, as nginx does: the browser navigated away or closed the connection.
// Nothing is sent, since no one is left to read it.
const StatusClientClosedRequest = 499

// Abandoned says whether the handler's err comes of the client going away mid-request: its
// request's context was cancelled, which the HTTP server does when the connection closes. Any
// error then (a query cut short, a write to a closed connection) is the leaving's consequence,
// not a failure of the server.
func Abandoned(c echo.Context, err error) bool {
	return err != nil && errors.Is(c.Request().Context().Err(), context.Canceled)
}

// Status is the HTTP status ErrorHandler answers err with, for logs and metrics; a request its
// client abandoned is StatusClientClosedRequest, whatever the error.
func Status(c echo.Context, err error) int {
	if Abandoned(c, err) {
		return StatusClientClosedRequest
	}
	status, _ := classify(err)
	return status
}

func classify(err error) (int, apiError) {
	var (
		validation *problem.ValidationError
		bad        *BadRequest
		limited    *problem.TooManyRequests
		down       *problem.Unavailable
		denied     *problem.Denied
		unauth     *problem.Unauthenticated
		httpErr    *echo.HTTPError
	)
	switch {
	case errors.As(err, &validation):
		return http.StatusUnprocessableEntity, apiError{Error: validation.Error(), Errors: validation.Fields}
	case errors.As(err, &bad):
		return http.StatusBadRequest, apiError{Error: bad.Message}
	case errors.As(err, &limited):
		return http.StatusTooManyRequests, apiError{Error: limited.Message}
	case errors.As(err, &down):
		return http.StatusServiceUnavailable, apiError{Error: down.Message}
	case errors.Is(err, problem.ErrNotFound):
		return http.StatusNotFound, apiError{Error: "not found: it does not exist or you cannot see it"}
	case errors.As(err, &denied):
		return http.StatusForbidden, apiError{Error: denied.Message}
	case errors.Is(err, problem.ErrForbidden):
		return http.StatusForbidden, apiError{Error: problem.ErrForbidden.Error()}
	case errors.As(err, &unauth):
		return http.StatusUnauthorized, apiError{Error: unauth.Message}
	case errors.Is(err, problem.ErrUnauthenticated):
		return http.StatusUnauthorized, apiError{Error: "sign in, or send an API token as Authorization: Bearer <token>"}
	case errors.As(err, &httpErr):
		msg := http.StatusText(httpErr.Code)
		switch httpErr.Code {
		case http.StatusNotFound:
			msg = "not found: there is no page at this address"
		case http.StatusRequestEntityTooLarge:
			msg = "the request body is too large"
		case http.StatusMethodNotAllowed:
			msg = "this address does not accept that method"
		default:
			if m, ok := httpErr.Message.(string); ok && httpErr.Code < 500 {
				msg = m
			}
		}
		return httpErr.Code, apiError{Error: msg}
	}
	return http.StatusInternalServerError, apiError{Error: "something went wrong on our side; it has been logged"}
}

// IDParam parses a UUID path parameter; a malformed one is simply not found.
func IDParam(c echo.Context, name string) (uuid.UUID, error) {
	id, err := uuid.Parse(c.Param(name))
	if err != nil {
		return uuid.Nil, problem.ErrNotFound
	}
	return id, nil
}

// FormErrors returns the field messages of a validation error for showing beside a form's
// fields, or nil when err is not one (and should be returned as it is).
func FormErrors(err error) views.Errors {
	var v *problem.ValidationError
	if !errors.As(err, &v) {
		return nil
	}
	errs := views.Errors{}
	for _, f := range v.Fields {
		if was, ok := errs[f.Field]; ok {
			f.Message = was + "; " + f.Message // one field shows every problem it has
		}
		errs[f.Field] = f.Message
	}
	return errs
}

// Seen answers a request about an object the actor cannot see with 404, as for one that does
// not exist, before its handler reads the query or the body. get looks up the object with the
// path's :id on behalf of the actor and answers problem.ErrNotFound when there is none or the
// actor may not see it. A handler that checked its input first would answer another tenant's
// object otherwise than a missing one whenever the input was bad, telling that it exists. An
// object the actor sees but may not change goes on to the handler, which refuses it.
func Seen[T any](get func(ctx context.Context, actor access.Principal, id uuid.UUID) (T, error)) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			id, err := IDParam(c, "id")
			if err != nil {
				return err
			}
			if _, err := get(Ctx(c), Actor(c), id); err != nil && !errors.Is(err, problem.ErrForbidden) {
				return err
			}
			return next(c)
		}
	}
}

// Unseen is Seen for a handler whose service looks the object up, on behalf of the actor,
// before anything else: it answers the handler's refusal of its input (bad), unless the actor
// cannot see the object, and so pays for a second look-up only when the input is bad.
func Unseen[T any](c echo.Context, get func(ctx context.Context, actor access.Principal, id uuid.UUID) (T, error), bad error) error {
	id, err := IDParam(c, "id")
	if err != nil {
		return err
	}
	if _, err := get(Ctx(c), Actor(c), id); err != nil && !errors.Is(err, problem.ErrForbidden) {
		return err
	}
	return bad
}
