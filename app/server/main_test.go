package server_test

import (
	"io"
	"log/slog"
	"testing"

	"nimbus/db/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

func discardLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
