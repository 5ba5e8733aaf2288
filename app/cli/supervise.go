package cli

import (
	"context"
	"log/slog"
	"time"

	"nimbus/db/localpg"
)

// watch is what serve learns from the supervision of its database.
type watch struct {
	// Down and Alive are the supervisor's, nil for an external database, which Nimbus does
	// not run and so cannot bring back.
	Down  func() bool
	Alive func() error
	// GaveUp receives the error that ended supervision without the database.
	GaveUp <-chan error
	// Stop ends supervision and waits for it.
	Stop func()
}

// supervise keeps the embedded Postgres running while Nimbus serves: a server that dies is
// restarted, and the pool drops its connections to the dead one.
func (d *database) supervise(giveUpAfter time.Duration, log *slog.Logger) watch {
	if d.embedded == nil {
		return watch{Stop: func() {}}
	}
	sv := d.embedded.Supervise(localpg.Supervision{GiveUpAfter: giveUpAfter, Restarted: d.Pool.Reset})
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp, done := make(chan error, 1), make(chan struct{})
	go func() {
		defer close(done)
		if err := sv.Run(ctx); err != nil {
			log.Error("the embedded database could not be brought back; stopping", "err", err)
			gaveUp <- err
		}
	}()
	return watch{Down: sv.Down, Alive: sv.Alive, GaveUp: gaveUp, Stop: func() { cancel(); <-done }}
}
