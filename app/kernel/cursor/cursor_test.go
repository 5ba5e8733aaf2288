package cursor_test

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"nimbus/app/kernel/cursor"
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
	if got.Key != nil {
		t.Fatalf("a cursor without a key parsed with %q", *got.Key)
	}
	for _, key := range []string{"", "web.example.com", "deploying"} {
		keyed := cursor.Cursor{At: c.At, ID: c.ID, Key: &key}
		got, err := cursor.Parse(keyed.String())
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != c.ID || !got.At.Equal(c.At) || got.Key == nil || *got.Key != key {
			t.Fatalf("parsed %+v from a cursor with key %q", got, key)
		}
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
