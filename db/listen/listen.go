// Package listen wakes waiting readers when Postgres says something they watch has changed.
// One connection per process listens on a channel; each subscriber watches one payload (an
// operation's id, say) and re-reads what it shows when woken, so notifications carry no data
// and a missed one costs only a later wake.
package listen

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Hub fans one Postgres notification channel out to subscribers by payload.
type Hub struct {
	pool    *pgxpool.Pool
	channel string
	log     *slog.Logger

	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}
}

// New returns a hub for channel; Run makes it listen.
func New(pool *pgxpool.Pool, channel string, log *slog.Logger) *Hub {
	return &Hub{pool: pool, channel: channel, log: log, subs: map[string]map[chan struct{}]struct{}{}}
}

// Subscribe returns a channel that receives a value after each notification with payload key,
// several notifications folding into one while the reader is busy, and a function that ends
// the subscription. Subscribe before reading the state, so that no change falls between.
func (h *Hub) Subscribe(key string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	if h.subs[key] == nil {
		h.subs[key] = map[chan struct{}]struct{}{}
	}
	h.subs[key][ch] = struct{}{}
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.subs[key], ch)
		if len(h.subs[key]) == 0 {
			delete(h.subs, key)
		}
	}
}

// Run listens until ctx ends, reconnecting after a lost connection. Every subscriber is woken
// after each (re)connection: what changed while no one listened is read then.
func (h *Hub) Run(ctx context.Context) {
	const first = 100 * time.Millisecond
	backoff := first
	for ctx.Err() == nil {
		listened, err := h.listen(ctx)
		if ctx.Err() != nil {
			return
		}
		if listened {
			// A connection that worked and was then lost (a database restart) starts over
			// from the shortest pause: the pause grows only while connecting fails.
			backoff = first
		}
		h.log.Warn("listening for notifications failed; trying again", "channel", h.channel, "err", err, "in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// listen listens until the connection fails; listened says whether it got as far as listening.
func (h *Hub) listen(ctx context.Context) (listened bool, err error) {
	pooled, err := h.pool.Acquire(ctx)
	if err != nil {
		return false, err
	}
	// A connection that listened is not handed back to the pool: it would keep listening.
	conn := pooled.Hijack()
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{h.channel}.Sanitize()); err != nil {
		return false, err
	}
	h.wakeAll()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true, err
		}
		h.wake(n.Payload)
	}
}

func (h *Hub) wake(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs[key] {
		select {
		case ch <- struct{}{}:
		default: // already due to read
		}
	}
}

func (h *Hub) wakeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, subs := range h.subs {
		for ch := range subs {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}
