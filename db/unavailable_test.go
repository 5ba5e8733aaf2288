package db

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestUnavailable_TellsAnAbsentDatabaseFromARefusal(t *testing.T) {
	// A socket nobody listens on: the error a pool gets while the server is down.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, dialErr := pgconn.Connect(ctx, "host="+t.TempDir()+" user=nimbus dbname=nimbus")
	if dialErr == nil {
		t.Fatal("connected to nothing")
	}
	// A request the browser gave up on, and one out of time, with the database there or not.
	gone, giveUp := context.WithCancel(context.Background())
	giveUp()
	_, goneErr := pgconn.Connect(gone, "host="+t.TempDir()+" user=nimbus dbname=nimbus")
	late, cancelLate := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancelLate()
	_, lateErr := pgconn.Connect(late, "host="+t.TempDir()+" user=nimbus dbname=nimbus")
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"no server", fmt.Errorf("list tenants: %w", dialErr), true},
		{"request cancelled", fmt.Errorf("list tenants: %w", goneErr), false},
		{"request out of time", fmt.Errorf("list tenants: %w", lateErr), false},
		{"server died under a query", &pgconn.PgError{Code: "57P01"}, true},
		{"server starting", &pgconn.PgError{Code: "57P03"}, true},
		{"connection lost", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), true},
		{"duplicate key", &pgconn.PgError{Code: "23505"}, false},
		{"a bug", errors.New("nil map"), false},
		{"object storage", &url.Error{Op: "Get", URL: "http://s3", Err: io.ErrUnexpectedEOF}, false},
	} {
		if got := Unavailable(c.err); got != c.want {
			t.Errorf("%s: Unavailable(%v) = %v", c.name, c.err, got)
		}
	}
}
