package cli_test

import (
	"os"
	"testing"

	"nimbus/app/sandbox"
)

// The servers these tests start run their engines through this binary, as nimbus does.
func TestMain(m *testing.M) {
	sandbox.LaunchIfAsked()
	os.Exit(m.Run())
}
