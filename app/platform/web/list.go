package web

import (
	"net/url"
	"strconv"

	"github.com/labstack/echo/v4"

	"nimbus/app/kernel/cursor"
	"nimbus/app/kernel/problem"
	"nimbus/views"
)

// ListPosition reads where a page of a list starts (?before=, a cursor from the page before)
// and how many rows it holds (?limit=, at most cursor.MaxRows; zero when not given), adding
// what is wrong with them to v.
func ListPosition(c echo.Context, v *problem.ValidationError) (cursor.Cursor, int) {
	at, err := cursor.Parse(c.QueryParam("before"))
	if err != nil {
		v.Add("before", "cursor", "must be the cursor of a page of this list, as its next link gives it")
	}
	limit := 0
	if raw := c.QueryParam("limit"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > cursor.MaxRows {
			v.Add("limit", "range", "must be a whole number from 1 to %d", cursor.MaxRows)
		}
		limit = n
	}
	return at, limit
}

// NextPage is the URL of the page after rows, a page of limit rows at most of a list in which
// at places each row: this request's, with before set to the last row's place. A full page has
// one, even when the next turns out empty; a short page is the end, and then NextPage is "".
// An API answer also names it in a Link header (RFC 8288).
func NextPage[T any](c echo.Context, rows []T, limit int, at func(T) cursor.Cursor) string {
	limit = cursor.Rows(limit)
	if len(rows) == 0 || len(rows) < limit {
		return ""
	}
	last := at(rows[len(rows)-1])
	if last.IsZero() {
		return ""
	}
	q := c.QueryParams()
	q.Set("before", last.String())
	next := c.Request().URL.Path + "?" + q.Encode()
	if IsAPI(c) {
		c.Response().Header().Add("Link", "<"+next+`>; rel="next"`)
	}
	return next
}

// Pager links a page of a list to the one after it and, past the first, back to the first.
func Pager(c echo.Context, next string) views.Pager {
	p := views.Pager{NextURL: next}
	if c.QueryParam("before") != "" {
		q := url.Values{}
		for k, vs := range c.QueryParams() {
			if k != "before" {
				q[k] = vs
			}
		}
		p.PrevURL = c.Request().URL.Path
		if len(q) > 0 {
			p.PrevURL += "?" + q.Encode()
		}
	}
	return p
}
