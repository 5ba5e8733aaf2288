package proxmox_test

import (
	"testing"

	"nimbus/app/kernel/objstore/s3test"
	"nimbus/db/dbtest"
)

// Each test gets a database of its own; the tests on the S3 backend share one S3 server.
func TestMain(m *testing.M) { dbtest.Main(s3test.Around(m)) }
