package localpg

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// Supervision says how a running cluster is watched and brought back when its server dies.
type Supervision struct {
	// Every is how often the server is looked for; a second when zero.
	Every time.Duration
	// GiveUpAfter bounds how long the server may stay down while it is being restarted; then
	// Run returns an error. Two minutes when zero.
	GiveUpAfter time.Duration
	// Restarted runs after each restart, before the cluster is reported up again: connections
	// to the server that died are dead, and a pool should drop them rather than find out.
	Restarted func()
}

// Supervisor keeps a cluster's server running while this process uses it: a server that died
// (killed, out of memory) is started again, which replays its write-ahead log, with backoff.
type Supervisor struct {
	srv  *Server
	opts Supervision
	// down is set from the moment the server is found dead until it answers again.
	down atomic.Bool
	// gaveUp holds why supervision ended without the server, once it has.
	gaveUp atomic.Pointer[error]
	// looked is when the loop last came round (Unix nanoseconds), to tell a stuck loop.
	looked atomic.Int64
}

// maxStart bounds one start of the server, crash recovery included (pg_ctl's -t).
const maxStart = 60 * time.Second

// Supervise returns a supervisor for the cluster; Run makes it watch.
func (s *Server) Supervise(opts Supervision) *Supervisor {
	if opts.Every <= 0 {
		opts.Every = time.Second
	}
	if opts.GiveUpAfter <= 0 {
		opts.GiveUpAfter = 2 * time.Minute
	}
	v := &Supervisor{srv: s, opts: opts}
	v.looked.Store(time.Now().UnixNano())
	return v
}

// Run watches the server until ctx ends, restarting it whenever it is found dead. It returns
// an error when a dead server could not be brought back within GiveUpAfter: the process
// should then exit, so that whatever runs it starts it afresh.
func (v *Supervisor) Run(ctx context.Context) error {
	tick := time.NewTicker(v.opts.Every)
	defer tick.Stop()
	for {
		v.looked.Store(time.Now().UnixNano())
		if !v.srv.running() {
			if err := v.restart(ctx); err != nil {
				v.gaveUp.Store(&err)
				return err
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// Down reports whether the server is being restarted: requests cannot be served meanwhile.
func (v *Supervisor) Down() bool { return v.down.Load() }

// Alive reports whether supervision works: nil while the loop comes round, an error once it has
// given up or has not come round for longer than a restart can take.
func (v *Supervisor) Alive() error {
	if err := v.gaveUp.Load(); err != nil {
		return *err
	}
	stuck := maxStart + 2*v.opts.Every + 10*time.Second
	if since := time.Since(time.Unix(0, v.looked.Load())); since > stuck {
		return fmt.Errorf("postgres supervision has not come round for %s", since.Round(time.Second))
	}
	return nil
}

// restart starts the dead server again, trying with growing pauses until it answers or
// GiveUpAfter has passed. A server killed outright may leave backends behind for a moment,
// which the new server refuses to share its shared memory with: a later try gets through.
func (v *Supervisor) restart(ctx context.Context) error {
	v.down.Store(true)
	s := v.srv
	s.log.Error("postgres stopped unexpectedly; restarting it", "dir", s.pgdata)
	died := time.Now()
	pause := 250 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := s.withStartLock(ctx, func() error { return s.ensureRunning(ctx, s.settings) })
		v.looked.Store(time.Now().UnixNano())
		if err == nil {
			if v.opts.Restarted != nil {
				v.opts.Restarted()
			}
			v.down.Store(false)
			s.log.Info("postgres is back", "attempts", attempt, "down", time.Since(died).Round(time.Millisecond))
			return nil
		}
		if ctx.Err() != nil {
			return nil // stopping: whoever stops the process stops the cluster
		}
		if time.Since(died)+pause > v.opts.GiveUpAfter {
			return fmt.Errorf("postgres stopped and could not be restarted in %s (%d attempts): %w",
				v.opts.GiveUpAfter, attempt, err)
		}
		s.log.Warn("restarting postgres failed; trying again", "attempt", attempt, "in", pause, "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(pause):
		}
		pause = min(2*pause, 10*time.Second)
	}
}
