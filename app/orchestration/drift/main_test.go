package drift_test

import (
	"testing"

	"nimbus/db/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }
