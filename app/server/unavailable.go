package server

import (
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/labstack/echo/v4"

	"nimbus/app/kernel/problem"
	"nimbus/db"
)

// retryAfter is how many seconds a client is asked to wait while the database is away: about
// what a restarted Postgres takes to replay its log and answer.
const retryAfter = 5

// databaseAway is what every request gets while the database cannot serve: a 503 saying so,
// never a 500, so that browsers, scripts and load balancers know to come back.
var databaseAway = &problem.Unavailable{
	Message:    "the database is not answering at the moment (it may be restarting); try again in a few seconds",
	RetryAfter: retryAfter,
}

// outage answers requests while the database is away, and says so in the log once per outage
// rather than once per request.
type outage struct {
	// down reports that the database is known to be away (its supervisor is restarting it);
	// nil when nothing supervises it.
	down func() bool
	log  *slog.Logger
	// away is set by the first request the database failed, cleared by the next it served.
	away atomic.Bool
}

// guard answers 503 at once while the database is known to be down, and turns a request that
// failed because the database could not be reached into the same 503. The probes and static
// files go on: they say how Nimbus is, or need no database.
func (o *outage) guard(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		path := c.Request().URL.Path
		if path == "/healthz" || path == "/readyz" || path == "/metrics" || strings.HasPrefix(path, "/static/") {
			return next(c)
		}
		if o.down != nil && o.down() {
			return databaseAway
		}
		err := next(c)
		if err != nil && db.Unavailable(err) {
			if o.away.CompareAndSwap(false, true) {
				o.log.Error("the database cannot be reached: requests are answered 503 until it is back", "err", err)
			}
			return databaseAway
		}
		if err == nil && o.away.CompareAndSwap(true, false) {
			o.log.Info("the database answers again")
		}
		return err
	}
}
