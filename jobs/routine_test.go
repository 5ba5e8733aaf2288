package jobs

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// River's routine, told at INFO, stays out of a log at INFO; its warnings do not.
func TestRoutine_RiversInfoIsDebug(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(routine{slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})}).With("component", "jobs")
	log.Info("producer job counts")
	log.Warn("job stuck")
	if got := buf.String(); strings.Contains(got, "producer job counts") || !strings.Contains(got, "job stuck") {
		t.Fatalf("the log at INFO holds: %s", got)
	}
	buf.Reset()
	debug := slog.New(routine{slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})})
	if debug.Info("producer job counts"); !strings.Contains(buf.String(), "level=DEBUG") {
		t.Fatalf("the log at DEBUG holds: %s", buf.String())
	}
}
