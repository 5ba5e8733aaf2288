// Package server wires the domains into one HTTP handler: it builds each service once, then
// adds middleware, static files, metrics, the River UI and each domain's own routes.
package server

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/riverqueue/river"
	"riverqueue.com/riverui"

	"nimbus/app/access"
	"nimbus/app/approval"
	"nimbus/app/audit"
	"nimbus/app/auth"
	"nimbus/app/cluster"
	"nimbus/app/component"
	"nimbus/app/dashboard"
	"nimbus/app/deploy"
	"nimbus/app/environment"
	"nimbus/app/event"
	"nimbus/app/governance"
	"nimbus/app/graph"
	"nimbus/app/instance"
	"nimbus/app/ipam"
	"nimbus/app/landingzone"
	"nimbus/app/objstore"
	"nimbus/app/policy"
	"nimbus/app/poller"
	"nimbus/app/problem"
	"nimbus/app/provision"
	"nimbus/app/pulumix"
	"nimbus/app/resolver"
	"nimbus/app/secrets"
	"nimbus/app/stack"
	"nimbus/app/system"
	"nimbus/app/tenant"
	"nimbus/app/user"
	"nimbus/app/web"
	"nimbus/db/listen"
	"nimbus/jobs"
	"nimbus/static"
)

// maxBody caps request bodies; larger ones are refused with 413.
const maxBody = "1M"

// Deps is what the server needs; the caller owns their lifecycles.
type Deps struct {
	Pool       *pgxpool.Pool
	Log        *slog.Logger
	Jobs       *river.Client[pgx.Tx]
	Info       system.Info
	SessionTTL time.Duration
	// SessionMaxAge ends a session this long after sign-in however much it is used;
	// auth.DefaultSessionMaxAge when zero.
	SessionMaxAge time.Duration
	SecureCookies bool
	// ChecksPerMinute is how many component checks one tenant may ask for in a minute;
	// component.DefaultChecksPerMinute when zero.
	ChecksPerMinute int
	// OperationsPerTenant is how many of one tenant's operations the workers run at once (as
	// Engine.OperationsPerTenant), for the pages that say why an operation waits.
	OperationsPerTenant int
	// Keys seals secret parameters of deployments.
	Keys *secrets.Keyring
	// Runner exports and restores the states of deployments; nil without a toolchain.
	Runner *pulumix.Runner
	// Objects keeps blobs (full operation logs, state exports); /readyz checks it. May be nil.
	Objects objstore.Store
	// StreamRecheck is how often at the least a live stream checks that its viewer is still
	// signed in and may still see what it shows; deploy.DefaultStreamRecheck when zero.
	StreamRecheck time.Duration
	// TrustedProxies are the networks of the proxies in front of Nimbus, whose
	// X-Forwarded-For names the client; empty when clients connect directly.
	TrustedProxies []*net.IPNet
	// MaxStateSize caps a state restored through the API, in bytes;
	// deploy.DefaultMaxStateSize when zero.
	MaxStateSize int64
	// DatabaseDown reports that the database is known to be away, such as while the embedded
	// Postgres restarts: requests are then answered 503 without trying it. Nil when nothing
	// watches the database.
	DatabaseDown func() bool
	// Alive says whether the process can still do its work, for /healthz; nil means it can.
	Alive func() error
	// WebhooksPrivate lets event subscriptions' URLs name private, loopback and link-local
	// addresses, as Engine.Deliveries.AllowPrivate lets deliveries reach them.
	WebhooksPrivate bool
}

// New builds the HTTP handler. ctx bounds the River UI's background work, which begins when
// the UI is first opened.
func New(ctx context.Context, d Deps) (http.Handler, error) {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = web.ErrorHandler(d.Log)
	// The client address keys sign-in throttling, so it is read from X-Forwarded-For only when
	// the hop that wrote it is a configured proxy: echo's default trust of every loopback and
	// private address would let anyone on the network name any address they like.
	e.IPExtractor = echo.ExtractIPDirect()
	if len(d.TrustedProxies) > 0 {
		trust := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
		for _, r := range d.TrustedProxies {
			trust = append(trust, echo.TrustIPRange(r))
		}
		e.IPExtractor = echo.ExtractIPFromXFFHeader(trust...)
	}

	// Every service is built once and shared by the handlers that need it.
	authSvc := auth.NewService(d.Pool, d.Log, d.SessionTTL).MaxAge(d.SessionMaxAge)
	pools := ipam.NewService(d.Pool)
	environments := environment.NewService(d.Pool)
	queue := jobs.NewInserter(d.Jobs)
	deployments := deploy.NewService(d.Pool, d.Keys, queue, d.Runner, d.Objects).Withdrawing(approval.Withdraw).
		PerTenant(d.OperationsPerTenant)
	instances := instance.NewService(d.Pool, deployments, d.Keys, queue)
	stacks := stack.NewService(d.Pool)
	provisions := provision.NewService(d.Pool, d.Keys, stacks, instances)
	tenants := tenant.NewService(d.Pool).WithProvisioning(provisions)
	lifecycle := environment.NewLifecycle(d.Pool, deployments, queue)
	zones := landingzone.NewService(d.Pool, lifecycle)
	components := component.NewService(d.Pool, pulumix.Local{Dir: d.Info.PulumiDir, Enabled: d.Info.Languages}, queue).
		LimitCheckRequests(d.ChecksPerMinute)
	approvals := approval.NewService(d.Pool, queue)
	operations := listen.New(d.Pool, "nimbus_operation", d.Log)
	go operations.Run(ctx)
	metrics := system.NewMetrics(d.Pool)

	e.Use(middleware.Recover())
	e.Use(metrics.Middleware)
	e.Use(requestLog(d.Log))
	e.Use(middleware.BodyLimitWithConfig(middleware.BodyLimitConfig{Limit: maxBody, Skipper: restoringState}))
	e.Use(web.RefuseNUL(restoringState))
	e.Use(securityHeaders)
	e.Use((&outage{down: d.DatabaseDown, log: d.Log}).guard)
	// The count of requests waiting for the viewer's approval, in every page's navigation.
	e.Use(web.CountApprovals(approvals.Waiting))

	e.GET("/metrics", echo.WrapHandler(promhttp.HandlerFor(metrics.Registry, promhttp.HandlerOpts{})))
	e.GET("/static/*", echo.WrapHandler(http.StripPrefix("/static/", cacheStatic(http.FileServer(http.FS(noDirs{static.FS}))))))

	probes := e.Group("")
	app := e.Group("", authSvc.Authenticate, auth.CheckCSRF)
	signed := app.Group("", auth.RequireSignIn)
	api := signed.Group("/api/v1")

	tenantH := tenant.NewHandlers(tenants)
	envH := environment.NewHandlers(environments, lifecycle)
	zoneH := landingzone.NewHandlers(zones, pools)
	componentH := component.NewHandlers(components)
	system.NewHandlers(d.Pool, d.Objects, d.Info, d.Log.With("component", "system")).Alive(d.Alive).Routes(probes, signed)
	auth.NewHandlers(authSvc, d.SecureCookies).Routes(app, signed, api)
	tenantH.Routes(signed, api)
	user.NewHandlers(user.NewService(d.Pool), tenants).Routes(signed, api)
	audit.NewHandlers(audit.NewService(d.Pool)).Routes(signed, api)
	governance.NewHandlers(governance.NewService(d.Pool)).Routes(signed, api, tenantH.Seen())
	componentH.Routes(signed, api)
	ipam.NewHandlers(pools).Routes(signed, api)
	resolver.NewHandlers(resolver.NewService(d.Pool)).Routes(signed, api, envH.Seen(), zoneH.Seen())
	deploy.NewHandlers(deployments, operations, ctx.Done(), d.MaxStateSize).RecheckStreams(d.StreamRecheck).
		Routes(signed, api, componentH.Seen())
	envH.Routes(signed, api)
	zoneH.Routes(signed, api)
	cluster.NewHandlers(cluster.NewService(d.Pool, d.Keys)).Routes(signed, api, zoneH.Seen())
	provision.NewHandlers(provisions).Routes(signed, api, zoneH.Seen())
	policy.NewHandlers(policy.NewService(d.Pool)).Routes(signed, api, zoneH.Seen())
	approval.NewHandlers(approvals, deployments).Routes(signed, api)
	instance.NewHandlers(instances).Routes(api)
	instance.NewHandlers(instances).Pages(signed)
	dashboard.NewHandlers(dashboard.NewService(d.Pool, environments, pools, approvals)).Routes(signed)
	stack.NewHandlers(stacks, components, stackInstances(instances)).Routes(signed, api)
	event.NewHandlers(event.NewService(d.Pool, d.Keys).CheckingConfig(poller.Check).AllowingPrivate(d.WebhooksPrivate),
		event.NewReceiver(d.Pool, d.Keys, queue, d.Log.With("component", "events"))).Routes(e, signed, api, zoneH.Seen(), tenantH.Seen())

	api.Any("/*", func(echo.Context) error { return echo.ErrNotFound })

	if d.Jobs != nil {
		ui, err := riverui.NewHandler(&riverui.HandlerOpts{
			Endpoints: riverui.NewEndpoints(d.Jobs, nil),
			Logger:    d.Log.With("component", "jobs-ui"),
			Prefix:    "/admin/jobs",
		})
		if err != nil {
			return nil, fmt.Errorf("jobs UI: %w", err)
		}
		jobsUI := signed.Group("/admin/jobs", requireProviderAdmin)
		serveUI := startOnFirstUse(ctx, ui, d.Log)
		// The bare prefix is a Nimbus page that frames the view, which is served below it.
		jobsUI.GET("", system.JobsPage("/admin/jobs/"))
		jobsUI.Any("/*", serveUI)
	}

	// Cross-origin browser requests that change state are refused before any handler runs; the
	// CSRF token check above covers old browsers that send neither Sec-Fetch-Site nor Origin.
	return http.NewCrossOriginProtection().Handler(e), nil
}

// Engine is what background work needs to drive Pulumi: the runner (nil without a toolchain),
// the keyring that opens secret parameters, where blobs such as full operation logs go, how
// long one operation may take, and how long one may wait for approval (approval.DefaultTTL
// when zero).
type Engine struct {
	Runner           *pulumix.Runner
	Keys             *secrets.Keyring
	Objects          objstore.Store
	OperationTimeout time.Duration
	ApprovalTTL      time.Duration
	// ChecksPerTenant is how many of one tenant's component checks run at once;
	// component.DefaultChecksPerTenant when zero.
	ChecksPerTenant int
	// OperationsPerTenant is how many of one tenant's operations run at once, on every node
	// together; deploy.DefaultOperationsPerTenant when zero.
	OperationsPerTenant int
	// GraphParallel bounds the operations of one graph (a stack instance's slots, an
	// environment's components) running at once; graph.DefaultParallel when zero.
	GraphParallel int
	// Deliveries is how Nimbus's own events are sent to subscriptions.
	Deliveries event.DeliveryConfig
	// EventRetention is how long the event log keeps an event; event.DefaultRetention when zero.
	EventRetention time.Duration
	// Cloud is the folder of the simulated cloud the runner deploys to, which simcloud event
	// sources poll; empty for none.
	Cloud string
	// PollInterval is how often the clouds of cloud_provider event sources are polled;
	// poller.DefaultInterval when zero.
	PollInterval time.Duration
	// ExpiryCheck is how often environments' expiries are looked at;
	// environment.DefaultExpiryCheck when zero.
	ExpiryCheck time.Duration
}

// startOnFirstUse serves the River UI, starting its background work (it counts the jobs of
// each state every few seconds) when it is first opened rather than on every node from boot:
// most nodes never show it.
func startOnFirstUse(ctx context.Context, ui *riverui.Handler, log *slog.Logger) echo.HandlerFunc {
	var start sync.Once
	serve := echo.WrapHandler(ui)
	return func(c echo.Context) error {
		start.Do(func() {
			if err := ui.Start(ctx); err != nil {
				log.Error("start the jobs UI", "err", err)
			}
		})
		return serve(c)
	}
}

// Workers registers the job workers of every domain.
func Workers(pool *pgxpool.Pool, eng Engine, log *slog.Logger) func(*river.Workers) {
	return func(w *river.Workers) {
		river.AddWorker(w, component.NewCheckWorker(pool, eng.Runner, log.With("component", "checks")).PerTenant(eng.ChecksPerTenant))
		river.AddWorker(w, deploy.NewWorker(pool, eng.Runner, eng.Keys, eng.Objects, log.With("component", "operations"), eng.OperationTimeout).
			Gated(approval.NewGate(eng.ApprovalTTL)).PerTenant(eng.OperationsPerTenant))
		river.AddWorker(w, approval.NewExpirer(pool, log.With("component", "approvals")))
		river.AddWorker(w, deploy.NewReaper(pool))
		river.AddWorker(w, deploy.NewDriftScanner(pool))
		river.AddWorker(w, graph.NewRunner(pool, eng.GraphParallel, problem.Refusal).
			Serve(graph.ParentEnvironment, environment.NewGraph(pool, eng.Keys)).
			Serve(graph.ParentStackInstance, instance.NewParent(pool, eng.Keys).OnDestroyed(tenant.RemoveWhenDecommissioned)))
		river.AddWorker(w, instance.NewTimeoutWorker(pool, eng.Keys))
		router := event.NewRouter(pool, instance.NewSignaller(pool, eng.Keys), instance.Refused)
		river.AddWorker(w, router)
		river.AddWorker(w, event.NewSweeper(router))
		river.AddWorker(w, event.NewDeliverer(pool, eng.Keys, eng.Deliveries, log.With("component", "deliveries")))
		river.AddWorker(w, event.NewRetainer(pool, eng.EventRetention))
		river.AddWorker(w, poller.NewWorker(pool, poller.Clouds{Simcloud: eng.Cloud, Keys: eng.Keys, Client: &http.Client{Timeout: time.Minute}},
			log.With("component", "poller")))
		river.AddWorker(w, environment.NewExpirer(pool, expiredInstances(pool, eng.Keys), log.With("component", "expiry")))
	}
}

// expiredInstances destroys the stack instances of expired environments through the
// instances' own service, queuing with the client of the job that asks.
func expiredInstances(pool *pgxpool.Pool, keys *secrets.Keyring) func(jobs.Queue) environment.DestroyInstance {
	return func(queue jobs.Queue) environment.DestroyInstance {
		instances := instance.NewService(pool, deploy.NewService(pool, keys, queue, nil, nil), keys, queue)
		return func(ctx context.Context, actor access.Principal, id uuid.UUID) error {
			_, err := instances.Destroy(ctx, actor, id)
			return err
		}
	}
}

// Periodic lists the domains' scheduled jobs, some as often as eng says.
func Periodic(eng Engine) []*river.PeriodicJob {
	return []*river.PeriodicJob{deploy.ReaperSchedule(), approval.ExpirySchedule(), deploy.DriftSchedule(), event.SweepSchedule(), event.RetentionSchedule(),
		poller.Schedule(eng.PollInterval), environment.ExpirySchedule(eng.ExpiryCheck)}
}

// restoreStateRoute is the one route whose body may be larger than maxBody: a stack's state
// can be far larger than any form.
const restoreStateRoute = "/api/v1/deployments/:id/state"

// restoringState says whether the request is a state restore, which the body limit skips: its
// handler sets a limit of its own (MaxStateSize) and checks who asks before it reads any of
// the body. The route Echo matched is compared, not the path, so that no other path, however
// it ends, escapes the limit.
func restoringState(c echo.Context) bool {
	return c.Request().Method == http.MethodPut && c.Path() == restoreStateRoute
}

func requireProviderAdmin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !web.Actor(c).ProviderAdmin {
			return problem.ErrForbidden
		}
		return next(c)
	}
}

func securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
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

func cacheStatic(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		h.ServeHTTP(w, r)
	})
}

// noDirs is a file system whose directories cannot be opened, so that the file server answers
// 404 for them instead of listing what they hold. The static files have no index pages.
type noDirs struct{ fs.FS }

func (n noDirs) Open(name string) (fs.File, error) {
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

// requestLog logs each request with its status and how long it took. One the client abandoned
// (a page left before it loaded, a closed connection) is logged as such, with status 499 and
// what it was doing when the client left, rather than as a server error.
func requestLog(log *slog.Logger) echo.MiddlewareFunc {
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
			case web.Abandoned(c, err):
				msg, status = "request abandoned by the client", web.StatusClientClosedRequest
				attrs = append(attrs, slog.String("err", err.Error()))
			case err != nil:
				status = web.Status(c, err)
			}
			attrs = append(attrs, slog.Int("status", status), slog.Duration("took", time.Since(start)))
			log.LogAttrs(c.Request().Context(), slog.LevelDebug, msg, attrs...)
			return err
		}
	}
}

// stackInstances lists a stack's instances for its page; the stack package cannot ask the
// instance service itself, which reads stacks.
func stackInstances(svc *instance.Service) stack.Instances {
	return func(ctx context.Context, actor access.Principal, id uuid.UUID) ([]stack.InstanceRow, error) {
		list, err := svc.List(ctx, actor, instance.Filter{StackID: id})
		if err != nil {
			return nil, err
		}
		out := make([]stack.InstanceRow, len(list))
		for i, in := range list {
			out[i] = stack.InstanceRow{ID: in.ID, Name: in.Name, Environment: in.EnvironmentName, Status: string(in.Status),
				State: in.State, Version: in.Version, CreatedAt: in.CreatedAt}
		}
		return out, nil
	}
}
