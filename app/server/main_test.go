package server_test

import (
	"io"
	"log/slog"
	"testing"

	"nimbus/app/objstore/s3test"
	"nimbus/db/dbtest"
)

// The deploy tests run on an S3 state backend too; its server is shared by the package's tests.
func TestMain(m *testing.M) { dbtest.Main(s3test.Around(m)) }

func discardLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
