// Package server wires the domains into one HTTP handler: it builds each service once, then
// adds middleware, static files, metrics, the River UI and each domain's own routes.
package server

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/trace/noop"

	"nimbus/app/domain/auth"
	"nimbus/app/domain/cluster"
	"nimbus/app/domain/component"
	"nimbus/app/domain/elevation"
	"nimbus/app/domain/governance"
	"nimbus/app/domain/inventory"
	"nimbus/app/domain/ipam"
	"nimbus/app/domain/notification"
	"nimbus/app/domain/policy"
	"nimbus/app/domain/proxmox"
	"nimbus/app/domain/resolver"
	"nimbus/app/domain/stack"
	"nimbus/app/domain/system"
	"nimbus/app/domain/tenant"
	"nimbus/app/domain/user"
	"nimbus/app/orchestration/approval"
	"nimbus/app/orchestration/backup"
	"nimbus/app/orchestration/dashboard"
	"nimbus/app/orchestration/deploy/deployweb"
	"nimbus/app/orchestration/drift"
	"nimbus/app/orchestration/environment"
	"nimbus/app/orchestration/event"
	"nimbus/app/orchestration/instance"
	"nimbus/app/orchestration/landingzone"
	"nimbus/app/orchestration/provision"
	"nimbus/app/platform/audit"
	"nimbus/app/platform/tracing"
	"nimbus/app/platform/web"
	"nimbus/db/listen"
	"nimbus/jobs"
	"nimbus/static"
)

// maxBody caps request bodies; larger ones are refused with 413.
const maxBody = "1M"

// New builds the HTTP handler. ctx bounds the River UI's background work, which begins when
// the UI is first opened.
func New(ctx context.Context, d Deps) (http.Handler, error) {
	if d.Tracer == nil {
		d.Tracer = noop.NewTracerProvider()
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = web.ErrorHandler(d.Log)
	e.IPExtractor = web.ClientAddress(d.TrustedProxies)

	svc := Build(d)
	operations := listen.New(d.Pool, "nimbus_operation", d.Log)
	go operations.Run(ctx)
	metrics := system.NewMetrics(d.Pool)

	e.Use(middleware.Recover())
	e.Use(tracing.Middleware(d.Tracer))
	e.Use(metrics.Middleware)
	e.Use(web.RequestLog(d.Log))
	e.Use(middleware.BodyLimitWithConfig(middleware.BodyLimitConfig{Limit: maxBody, Skipper: restoringState}))
	e.Use(web.RefuseNUL(restoringState))
	e.Use(web.SecurityHeaders)
	e.Use((&outage{down: d.DatabaseDown, log: d.Log}).guard)
	// The count of requests waiting for the viewer's approval, in every page's navigation.
	e.Use(web.CountApprovals(svc.Approvals.Waiting))
	// The count of the viewer's unread notifications, in every page's header.
	e.Use(web.CountUnread(svc.Notices.Unread))

	e.GET("/metrics", echo.WrapHandler(promhttp.HandlerFor(metrics.Registry, promhttp.HandlerOpts{})))
	e.GET("/static/*", echo.WrapHandler(http.StripPrefix("/static/", web.CacheStatic(http.FileServer(http.FS(web.NoDirs{FS: static.FS}))))))

	probes := e.Group("")
	app := e.Group("", svc.Auth.Authenticate, auth.CheckCSRF)
	signed := app.Group("", auth.RequireSignIn)
	api := signed.Group("/api/v1")

	tenantH := tenant.NewHandlers(svc.Tenants)
	envH := environment.NewHandlers(svc.Environments, svc.Lifecycle)
	zoneH := landingzone.NewHandlers(svc.Zones, svc.Pools)
	componentH := component.NewHandlers(svc.Components)
	if d.Backup != nil {
		d.Info.BackupURL = backup.DownloadPath
	}
	system.NewHandlers(d.Pool, d.Objects, d.Info, d.Log.With("component", "system")).Alive(d.Alive).Routes(probes, signed)
	if d.Backup != nil {
		backup.NewHandlers(*d.Backup, d.Log.With("component", "backup")).Routes(signed)
	}
	auth.NewHandlers(svc.Auth, svc.SSO, svc.Factors, d.SecureCookies).Routes(app, signed, api)
	tenantH.Routes(signed, api)
	user.NewHandlers(svc.Users, svc.Tenants).Routes(signed, api)
	elevation.NewHandlers(svc.Elevations).Routes(signed, api)
	audit.NewHandlers(svc.Audit).Routes(signed, api)
	inventoryH := inventory.NewHandlers(svc.Inventory, svc.Tenants)
	inventoryH.Routes(signed, api)
	governance.NewHandlers(svc.Governance).Routes(signed, api, tenantH.Seen())
	componentH.Routes(signed, api)
	componentH.WebhookRoutes(e)
	ipam.NewHandlers(svc.Pools).Routes(signed, api)
	resolver.NewHandlers(svc.Resolvers).Routes(signed, api, envH.Seen(), zoneH.Seen())
	deployweb.NewHandlers(svc.Deployments, operations, ctx.Done(), d.MaxStateSize).RecheckStreams(d.StreamRecheck).
		Routes(signed, api, componentH.Seen(), inventoryH.Seen())
	drift.NewHandlers(svc.Drift).Routes(api)
	envH.Routes(signed, api)
	zoneH.Routes(signed, api)
	cluster.NewHandlers(svc.Clusters).Routes(signed, api, zoneH.Seen())
	proxmox.NewHandlers(svc.Proxmox).Routes(signed, api, zoneH.Seen())
	provision.NewHandlers(svc.Provisions).Routes(signed, api, zoneH.Seen())
	policy.NewHandlers(svc.Policies).Routes(signed, api, zoneH.Seen())
	approval.NewHandlers(svc.Approvals, svc.Deployments).Routes(signed, api)
	notification.NewHandlers(svc.Notices).Routes(signed, api)
	notification.NewMailHandlers(svc.Mail).Routes(signed, api)
	instance.NewHandlers(svc.Instances).Routes(api)
	instance.NewHandlers(svc.Instances).Pages(signed)
	dashboard.NewHandlers(dashboard.NewService(d.Pool, svc.Environments, svc.Pools)).Routes(signed)
	stack.NewHandlers(svc.Stacks, svc.Components, stackInstances(svc.Instances)).Routes(signed, api)
	event.NewHandlers(svc.Events,
		event.NewReceiver(d.Pool, d.Keys, jobs.NewInserter(d.Jobs), d.Log.With("component", "events"))).Routes(e, signed, api, zoneH.Seen(), tenantH.Seen())

	api.Any("/*", func(echo.Context) error { return echo.ErrNotFound })

	if d.Jobs != nil {
		serveUI, err := system.JobsUI(ctx, d.Jobs, "/admin/jobs", d.Log.With("component", "jobs-ui"))
		if err != nil {
			return nil, err
		}
		// The bare prefix is a Nimbus page that frames the view, which is served below it.
		jobsUI := signed.Group("/admin/jobs", web.RequireProviderAdmin)
		jobsUI.GET("", system.JobsPage("/admin/jobs/"))
		jobsUI.Any("/*", serveUI)
	}

	// Cross-origin browser requests that change state are refused before any handler runs; the
	// CSRF token check above covers old browsers that send neither Sec-Fetch-Site nor Origin.
	return http.NewCrossOriginProtection().Handler(e), nil
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
