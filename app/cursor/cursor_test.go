package cursor_test

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"nimbus/app/cursor"
)

func TestCursor_TokenRoundTrips(t *testing.T) {
	c := cursor.Cursor{At: time.Date(2026, 11, 26, 12, 0, 0, 123456000, time.UTC), ID: uuid.New()}
	got, err := cursor.Parse(c.String())
	if err != nil {
		t.Fatal(err)
	}
	if !got.At.Equal(c.At) || got.ID != c.ID {
		t.Fatalf("parsed %v from %v", got, c)
	}
	if start, err := cursor.Parse(""); err != nil || !start.IsZero() || start.Before() != nil {
		t.Fatalf("empty token: %v %v", start, err)
	}
}

func TestCursor_RefusesMalformedTokens(t *testing.T) {
	for _, token := range []string{"x", "MTIz", "YWJjLmRlZg", cursor.Cursor{ID: uuid.Nil}.String()} {
		if _, err := cursor.Parse(token); err == nil {
			t.Errorf("%q parsed", token)
		}
	}
}
