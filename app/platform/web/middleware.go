package web

import (
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"nimbus/app/kernel/problem"
)

// RequireProviderAdmin refuses everyone but provider admins.
func RequireProviderAdmin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !Actor(c).ProviderAdmin {
			return problem.ErrForbidden
		}
		return next(c)
	}
}

// SecurityHeaders keeps pages out of other sites' frames and scripts; the job queue's view
// under /admin/jobs/ is framed by Nimbus's own page, and only there.
func SecurityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		// The job queue's view is shown in a frame of Nimbus's own page, and only there.
		jobsView := strings.HasPrefix(c.Request().URL.Path, "/admin/jobs/")
		if jobsView {
			h.Set("X-Frame-Options", "SAMEORIGIN")
		} else {
			h.Set("X-Frame-Options", "DENY")
		}
		if !jobsView {
			h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; worker-src 'self' blob:; font-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'self'")
		}
		return next(c)
	}
}

// CacheStatic lets browsers keep static files for an hour.
func CacheStatic(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		h.ServeHTTP(w, r)
	})
}

// NoDirs is a file system whose directories cannot be opened, so that the file server answers
// 404 for them instead of listing what they hold. The static files have no index pages.
type NoDirs struct{ fs.FS }

func (n NoDirs) Open(name string) (fs.File, error) {
	f, err := n.FS.Open(name)
	if err != nil {
		return nil, err
	}
	if info, err := f.Stat(); err != nil || info.IsDir() {
		f.Close()
		return nil, fs.ErrNotExist
	}
	return f, nil
}

// RequestLog logs each request with its status and how long it took. One the client abandoned
// (a page left before it loaded, a closed connection) is logged as such, with status 499 and
// what it was doing when the client left, rather than as a server error.
func RequestLog(log *slog.Logger) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			err := next(c)
			if strings.HasPrefix(c.Request().URL.Path, "/static/") {
				return err
			}
			msg, status := "request", c.Response().Status
			attrs := []slog.Attr{slog.String("method", c.Request().Method), slog.String("path", c.Request().URL.Path)}
			switch {
			case Abandoned(c, err):
				msg, status = "request abandoned by the client", StatusClientClosedRequest
				attrs = append(attrs, slog.String("err", err.Error()))
			case err != nil:
				status = Status(c, err)
			}
			attrs = append(attrs, slog.Int("status", status), slog.Duration("took", time.Since(start)))
			log.LogAttrs(c.Request().Context(), slog.LevelDebug, msg, attrs...)
			return err
		}
	}
}

// ClientAddress reads a request's client address. It keys sign-in throttling, so it is read
// from X-Forwarded-For only when the hop that wrote it is one of the trusted proxies: echo's
// default trust of every loopback and private address would let anyone on the network name
// any address they like. With no proxies, the connection's own address is the client's.
func ClientAddress(trusted []*net.IPNet) echo.IPExtractor {
	if len(trusted) == 0 {
		return echo.ExtractIPDirect()
	}
	trust := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
	for _, r := range trusted {
		trust = append(trust, echo.TrustIPRange(r))
	}
	return echo.ExtractIPFromXFFHeader(trust...)
}
