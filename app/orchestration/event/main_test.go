package event

import (
	"testing"

	"nimbus/app/kernel/objstore/s3test"
	"nimbus/db/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(s3test.Around(m)) }
