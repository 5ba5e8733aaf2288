package pulumix

import (
	"testing"

	"nimbus/app/kernel/objstore/s3test"
)

// The stack tests run on an S3 backend too; its server is shared by the package's tests.
func TestMain(m *testing.M) { s3test.Main(m) }
