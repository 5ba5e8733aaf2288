// Package cursor is where a list continues: the creation time and ID of the last row a page
// showed (and, in a list sorted by a column, its value there), carried in a URL as an opaque
// token. A page that starts after a cursor reads from an index, however far back it is, where
// an offset would count every row before it.
package cursor

import (
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// A page of a list holds DefaultRows rows unless asked for another number, MaxRows at most: a
// screenful is what a person reads, and what a page renders and a client receives quickly; a
// client that wants fewer round trips asks for more.
const (
	DefaultRows = 50
	MaxRows     = 200
)

// Rows is how many rows a page asked for limit rows holds: DefaultRows when limit was not
// given (below one), MaxRows at most.
func Rows(limit int) int {
	switch {
	case limit < 1:
		return DefaultRows
	case limit > MaxRows:
		return MaxRows
	}
	return limit
}

// Cursor is the last row of a page; the zero Cursor is the start of the list.
type Cursor struct {
	At time.Time
	ID uuid.UUID
	// Key is the row's value in the column a sorted list is ordered by, as the page showed it;
	// nil in a list read newest first. The value can change before the next page is asked for
	// (a status moves on, a tenant is renamed): that page starts after the value the row had,
	// so that no row is skipped or shown twice.
	Key *string
}

// IsZero reports whether c is the start of the list.
func (c Cursor) IsZero() bool { return c.ID == uuid.Nil }

// String is c as a token for a URL.
func (c Cursor) String() string {
	token := strconv.FormatInt(c.At.UnixMicro(), 10) + "." + c.ID.String()
	if c.Key != nil {
		token += "." + *c.Key
	}
	return base64.RawURLEncoding.EncodeToString([]byte(token))
}

// ErrMalformed is a token that String did not make.
var ErrMalformed = errors.New("not a cursor of this list")

// Parse reads a token made by String; the empty token is the start of the list.
func Parse(token string) (Cursor, error) {
	if token == "" {
		return Cursor{}, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return Cursor{}, ErrMalformed
	}
	at, rest, ok := strings.Cut(string(raw), ".")
	if !ok {
		return Cursor{}, ErrMalformed
	}
	id, key, keyed := strings.Cut(rest, ".") // an ID has no dots; a key may
	var c Cursor
	if keyed {
		c.Key = &key
	}
	micros, err := strconv.ParseInt(at, 10, 64)
	if err != nil {
		return Cursor{}, ErrMalformed
	}
	u, err := uuid.Parse(id)
	if err != nil || u == uuid.Nil {
		return Cursor{}, ErrMalformed
	}
	c.At, c.ID = time.UnixMicro(micros), u
	return c, nil
}

// Before is the time bound of the query that reads the page after c; NULL at the start.
func (c Cursor) Before() *time.Time {
	if c.IsZero() {
		return nil
	}
	return &c.At
}

// BeforeID is the ID bound that breaks ties between rows made at the same time.
func (c Cursor) BeforeID() uuid.NullUUID { return uuid.NullUUID{UUID: c.ID, Valid: !c.IsZero()} }
