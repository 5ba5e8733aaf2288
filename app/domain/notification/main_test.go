package notification_test

import (
	"testing"

	"nimbus/db/dbtest"
)

// Each test gets a database of its own.
func TestMain(m *testing.M) { dbtest.Main(m) }
