// Package server wires the domains into one HTTP handler: middleware, routes, static files,
// metrics and the River UI.
package server

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strings"
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
	"nimbus/app/component"
	"nimbus/app/dashboard"
	"nimbus/app/deploy"
	"nimbus/app/environment"
	"nimbus/app/governance"
	"nimbus/app/ipam"
	"nimbus/app/landingzone"
	"nimbus/app/objstore"
	"nimbus/app/problem"
	"nimbus/app/pulumix"
	"nimbus/app/resolver"
	"nimbus/app/secrets"
	"nimbus/app/system"
	"nimbus/app/tenant"
	"nimbus/app/user"
	"nimbus/app/web"
	"nimbus/db/listen"
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
}

// New builds the HTTP handler. ctx bounds the River UI's background work.
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

	authSvc := auth.NewService(d.Pool, d.Log, d.SessionTTL).MaxAge(d.SessionMaxAge)
	authH := auth.NewHandlers(authSvc, d.SecureCookies)
	tenantSvc := tenant.NewService(d.Pool)
	tenantH := tenant.NewHandlers(tenantSvc)
	userH := user.NewHandlers(user.NewService(d.Pool))
	auditSvc := audit.NewService(d.Pool)
	auditH := audit.NewHandlers(auditSvc)
	sysH := system.NewHandlers(d.Pool, d.Objects, d.Info, d.Log.With("component", "system"))
	zones := landingzone.NewService(d.Pool, d.Keys, d.Jobs)
	zoneH := landingzone.NewHandlers(zones)
	environments := environment.NewService(d.Pool)
	envH := environment.NewHandlers(environments, environment.NewLifecycle(d.Pool, d.Keys, d.Jobs))
	operations := listen.New(d.Pool, "nimbus_operation", d.Log)
	go operations.Run(ctx)
	deployments := deploy.NewService(d.Pool, d.Keys, d.Jobs, d.Runner, d.Objects).Withdrawing(approval.Withdraw)
	deployH := deploy.NewHandlers(deployments, operations, ctx.Done(), d.MaxStateSize).RecheckStreams(d.StreamRecheck)
	pools := ipam.NewService(d.Pool)
	ipamH := ipam.NewHandlers(pools)
	resolverH := resolver.NewHandlers(resolver.NewService(d.Pool))
	components := component.NewService(d.Pool, pulumix.Local{Dir: d.Info.PulumiDir, Enabled: d.Info.Languages}, d.Jobs).
		LimitCheckRequests(d.ChecksPerMinute)
	componentH := component.NewHandlers(components)
	approvals := approval.NewService(d.Pool, d.Jobs)
	// A route about one object first makes sure the actor can see it, so that another
	// tenant's object and a missing one get the same 404 whatever the query or body.
	var (
		seenTenant      = web.Seen(found(tenantSvc.Get))
		seenPool        = web.Seen(found(pools.Get))
		seenEnvironment = web.Seen(found(environments.Get))
		seenDeployment  = web.Seen(found(deployments.Get))
		seenOperation   = web.Seen(found(deployments.Operation))
		seenComponent   = web.Seen(found(components.Get))
		seenCheck       = web.Seen(found(components.Check))
		seenZone        = web.Seen(found(zones.Get))
		seenApproval    = web.Seen(found(approvals.Get))
	)
	governH := governance.NewHandlers(governance.NewService(d.Pool))
	metrics := system.NewMetrics(d.Pool)

	e.Use(middleware.Recover())
	e.Use(metrics.Middleware)
	e.Use(requestLog(d.Log))
	e.Use(middleware.BodyLimitWithConfig(middleware.BodyLimitConfig{Limit: maxBody,
		// A stack's state can be far larger than any form; its handler sets a limit of its own
		// (MaxStateSize), and checks who asks before it reads any of it.
		Skipper: func(c echo.Context) bool {
			return c.Request().Method == http.MethodPut && strings.HasSuffix(c.Request().URL.Path, "/state")
		}}))
	e.Use(securityHeaders)

	e.GET("/healthz", sysH.Healthz)
	e.GET("/readyz", sysH.Readyz)
	e.GET("/metrics", echo.WrapHandler(promhttp.HandlerFor(metrics.Registry, promhttp.HandlerOpts{})))
	e.GET("/static/*", echo.WrapHandler(http.StripPrefix("/static/", cacheStatic(http.FileServer(http.FS(noDirs{static.FS}))))))

	app := e.Group("", authSvc.Authenticate, auth.CheckCSRF)
	app.GET("/login", authH.LoginForm)
	app.POST("/login", authH.Login)

	signed := app.Group("", auth.RequireSignIn)
	signed.POST("/logout", authH.Logout)
	signed.GET("/tenants", tenantH.ListPage)
	signed.POST("/tenants", tenantH.CreateForm)
	signed.GET("/tenants/:id", tenantH.ShowPage, seenTenant)
	signed.GET("/tenants/:id/governance", governH.ListPage, seenTenant)
	signed.GET("/tenants/:id/governance/:component_id", governH.EditPage, seenTenant)
	signed.POST("/tenants/:id/governance/:component_id", governH.SetForm, seenTenant)
	signed.POST("/tenants/:id/governance/:component_id/clear", governH.ClearForm, seenTenant)
	signed.POST("/tenants/:id/members", tenantH.SetMemberForm, seenTenant)
	signed.POST("/tenants/:id/members/:user_id/delete", tenantH.RemoveMemberForm, seenTenant)
	signed.GET("/users", userH.ListPage)
	signed.POST("/users", userH.CreateForm)
	signed.GET("/tokens", authH.TokensPage)
	signed.POST("/tokens", authH.CreateTokenForm)
	signed.POST("/tokens/:id/revoke", authH.RevokeTokenForm)
	signed.GET("/audit", auditH.Page)
	signed.GET("/admin/system", sysH.StatusPage)
	signed.GET("/admin/providers", componentH.SemanticsPage)
	signed.POST("/admin/providers/:kind", componentH.AddSemanticForm)
	signed.GET("/ipam", ipamH.ListPage)
	signed.POST("/ipam/pools", ipamH.CreateForm)
	signed.GET("/ipam/pools/:id", ipamH.ShowPage, seenPool)
	signed.GET("/environments/:id/resolvers", resolverH.EnvironmentPage, seenEnvironment)
	signed.GET("/environments/:id/resolvers/naming/next", resolverH.NextNameFragment, seenEnvironment)
	signed.POST("/environments/:id/resolvers/:type", resolverH.SetForm, seenEnvironment)
	signed.GET("/images", resolverH.ImagesPage)
	signed.POST("/images", resolverH.AddImageForm)
	signed.POST("/images/:id/delete", resolverH.DeleteImageForm)
	signed.GET("/deployments", deployH.ListPage)
	signed.GET("/deployments/:id", deployH.ShowPage, seenDeployment)
	signed.POST("/deployments/:id/apply", deployH.ApplyForm, seenDeployment)
	signed.POST("/deployments/:id/upgrade", deployH.UpgradeForm, seenDeployment)
	signed.POST("/deployments/:id/refresh", deployH.RefreshForm, seenDeployment)
	signed.POST("/deployments/:id/destroy", deployH.DestroyForm, seenDeployment)
	signed.GET("/operations/:id", deployH.OperationPage, seenOperation)
	signed.GET("/operations/:id/stream", deployH.Stream, seenOperation)
	signed.POST("/operations/:id/cancel", deployH.CancelForm, seenOperation)
	signed.POST("/operations/:id/apply", deployH.ApplyPreviewForm, seenOperation)
	signed.GET("/components/:id/deploy", deployH.DeployDialog, seenComponent)
	signed.POST("/components/:id/deploy", deployH.DeployDialogForm, seenComponent)
	signed.GET("/environments", envH.ListPage)
	signed.POST("/environments", envH.CreateForm)
	signed.GET("/environments/:id", envH.ShowPage, seenEnvironment)
	signed.POST("/environments/:id/decommission", envH.DecommissionForm, seenEnvironment)
	signed.POST("/environments/:id/retry", envH.RetryForm, seenEnvironment)
	signed.GET("/landing-zones", zoneH.ListPage)
	signed.POST("/landing-zones", zoneH.CreateForm)
	signed.GET("/landing-zones/:id", zoneH.ShowPage, seenZone)
	signed.POST("/landing-zones/:id/system-services", zoneH.AddSystemServiceForm, seenZone)
	signed.POST("/landing-zones/:id/templates", zoneH.AddTemplateForm, seenZone)
	signed.POST("/landing-zones/:id/templates/:template_id/withdraw", zoneH.WithdrawTemplateForm, seenZone)
	signed.POST("/landing-zones/:id/system-services/:service_id/remove", zoneH.RemoveSystemServiceForm, seenZone)
	signed.POST("/landing-zones/:id/publish", zoneH.PublishForm, seenZone)
	signed.POST("/landing-zones/:id/retire", zoneH.RetireForm, seenZone)
	signed.GET("/landing-zones/:id/resolvers", resolverH.ZonePage, seenZone)
	signed.GET("/landing-zones/:id/resolvers/naming/next", resolverH.NextNameFragment, seenZone)
	signed.POST("/landing-zones/:id/resolvers/:type", resolverH.SetForm, seenZone)
	signed.GET("/catalog", componentH.CatalogPage)
	signed.GET("/components/new", componentH.NewPage)
	signed.POST("/components", componentH.CreateForm)
	signed.GET("/components/:id", componentH.ShowPage, seenComponent)
	signed.GET("/components/:id/edit", componentH.EditPage, seenComponent)
	signed.POST("/components/:id/draft", componentH.SaveDraftForm, seenComponent)
	signed.POST("/components/:id/publish", componentH.PublishForm, seenComponent)
	signed.POST("/components/:id/delete", componentH.DeleteForm, seenComponent)
	signed.GET("/components/:id/versions/:n", componentH.VersionPage, seenComponent)
	signed.POST("/components/:id/versions/:n/archive", componentH.ArchiveVersionForm, seenComponent)
	signed.GET("/components/:id/diff", componentH.DiffPage, seenComponent)
	signed.POST("/components/:id/check", componentH.CheckForm, seenComponent)
	signed.GET("/checks/:id", componentH.CheckPanel, seenCheck)

	api := signed.Group("/api/v1")
	api.GET("/tenants", tenantH.ListAPI)
	api.POST("/tenants", tenantH.CreateAPI)
	api.GET("/tenants/:id", tenantH.GetAPI, seenTenant)
	api.GET("/tenants/:id/members", tenantH.MembersAPI, seenTenant)
	api.GET("/tenants/:id/governance", governH.ListAPI, seenTenant)
	api.GET("/tenants/:id/governance/:component_id", governH.GetAPI, seenTenant)
	api.PUT("/tenants/:id/governance/:component_id", governH.SetAPI, seenTenant)
	api.DELETE("/tenants/:id/governance/:component_id", governH.ClearAPI, seenTenant)
	api.POST("/tenants/:id/members", tenantH.SetMemberAPI, seenTenant)
	api.DELETE("/tenants/:id/members", tenantH.RemoveMemberAPI, seenTenant)
	api.DELETE("/tenants/:id/members/:user_id", tenantH.RemoveMemberAPI, seenTenant)
	api.GET("/users", userH.ListAPI)
	api.POST("/users", userH.CreateAPI)
	api.GET("/users/:id", userH.GetAPI)
	api.GET("/tokens", authH.ListTokensAPI)
	api.POST("/tokens", authH.CreateTokenAPI)
	api.DELETE("/tokens/:id", authH.RevokeTokenAPI)
	api.GET("/audit-events", auditH.ListAPI)
	api.GET("/me", me)
	api.GET("/deployments", deployH.ListAPI)
	api.POST("/deployments", deployH.CreateAPI)
	api.GET("/deployments/:id", deployH.GetAPI, seenDeployment)
	for _, kind := range []string{"preview", "deploy", "update", "upgrade", "refresh", "destroy"} {
		api.POST("/deployments/:id/"+kind, deployH.ActionAPI(kind), seenDeployment)
	}
	api.GET("/images", resolverH.ImagesAPI)
	api.POST("/images", resolverH.AddImageAPI)
	api.DELETE("/images/:id", resolverH.DeleteImageAPI)
	api.POST("/ipam/pools", ipamH.CreateAPI)
	api.GET("/ipam/pools", ipamH.ListAPI)
	api.GET("/ipam/pools/:id", ipamH.GetAPI, seenPool)
	api.GET("/environments/:id/resolvers", resolverH.ListAPI, seenEnvironment)
	api.GET("/environments/:id/resolvers/naming/next", resolverH.NextNameAPI, seenEnvironment)
	api.PUT("/environments/:id/resolvers/:type", resolverH.SetAPI, seenEnvironment)
	api.DELETE("/environments/:id/resolvers/:type", resolverH.ClearAPI, seenEnvironment)
	api.GET("/operations", deployH.OperationsAPI)
	api.GET("/operations/:id", deployH.OperationAPI, seenOperation)
	api.GET("/operations/:id/logs", deployH.LogsAPI, seenOperation)
	api.GET("/operations/:id/log", deployH.FullLogAPI, seenOperation)
	api.POST("/operations/:id/cancel", deployH.CancelAPI, seenOperation)
	api.POST("/operations/:id/apply", deployH.ApplyPreviewAPI, seenOperation)
	api.GET("/deployments/:id/state", deployH.StateAPI, seenDeployment)
	api.PUT("/deployments/:id/state", deployH.RestoreStateAPI, seenDeployment)
	api.GET("/environments", envH.ListAPI)
	api.POST("/environments", envH.CreateAPI)
	api.GET("/environments/:id", envH.GetAPI, seenEnvironment)
	api.POST("/environments/:id/decommission", envH.DecommissionAPI, seenEnvironment)
	api.POST("/environments/:id/retry", envH.RetryAPI, seenEnvironment)
	api.GET("/landing-zones", zoneH.ListAPI)
	api.POST("/landing-zones", zoneH.CreateAPI)
	api.GET("/landing-zones/:id", zoneH.GetAPI, seenZone)
	api.GET("/landing-zones/:id/resolvers", resolverH.ZoneListAPI, seenZone)
	api.PUT("/landing-zones/:id/resolvers/:type", resolverH.ZoneSetAPI, seenZone)
	api.POST("/landing-zones/:id/system-services", zoneH.AddSystemServiceAPI, seenZone)
	api.POST("/landing-zones/:id/templates", zoneH.AddTemplateAPI, seenZone)
	api.DELETE("/landing-zones/:id/templates/:template_id", zoneH.WithdrawTemplateAPI, seenZone)
	api.DELETE("/landing-zones/:id/system-services/:service_id", zoneH.RemoveSystemServiceAPI, seenZone)
	api.POST("/landing-zones/:id/publish", zoneH.PublishAPI, seenZone)
	api.POST("/landing-zones/:id/retire", zoneH.RetireAPI, seenZone)
	api.GET("/providers", componentH.SemanticsAPI)
	api.POST("/providers", componentH.AddProviderAPI)
	api.POST("/semantic-types", componentH.AddSemanticTypeAPI)
	api.POST("/provider-resource-types", componentH.AddResourceTypeAPI)
	api.GET("/components", componentH.ListAPI)
	api.POST("/components", componentH.CreateAPI)
	api.GET("/components/:id", componentH.GetAPI, seenComponent)
	api.PATCH("/components/:id", componentH.UpdateAPI, seenComponent)
	api.DELETE("/components/:id", componentH.DeleteAPI, seenComponent)
	api.POST("/components/:id/publish", componentH.PublishAPI, seenComponent)
	api.GET("/components/:id/versions", componentH.VersionsAPI, seenComponent)
	api.GET("/components/:id/versions/:n", componentH.VersionAPI, seenComponent)
	api.POST("/components/:id/versions/:n/archive", componentH.ArchiveVersionAPI, seenComponent)
	api.POST("/components/:id/check", componentH.CheckAPI, seenComponent)
	api.GET("/checks/:id", componentH.GetCheckAPI, seenCheck)

	// Approvals: the queue and its decisions, the policies, and the count of requests waiting
	// for the viewer in every page's navigation.
	approvalH := approval.NewHandlers(approvals, deployments)
	e.Use(web.CountApprovals(approvals.Waiting))
	signed.GET("/approvals", approvalH.QueuePage)
	signed.GET("/approvals/:id", approvalH.ShowPage, seenApproval)
	signed.POST("/approvals/:id/approve", approvalH.ApproveForm, seenApproval)
	signed.POST("/approvals/:id/reject", approvalH.RejectForm, seenApproval)
	signed.GET("/approval-policies", approvalH.PoliciesPage)
	signed.POST("/approval-policies", approvalH.CreatePolicyForm)
	signed.POST("/approval-policies/:id/delete", approvalH.DeletePolicyForm)
	api.GET("/approvals", approvalH.ListAPI)
	api.GET("/approvals/:id", approvalH.GetAPI, seenApproval)
	api.POST("/approvals/:id/approve", approvalH.ApproveAPI, seenApproval)
	api.POST("/approvals/:id/reject", approvalH.RejectAPI, seenApproval)
	api.GET("/approval-policies", approvalH.PoliciesAPI)
	api.POST("/approval-policies", approvalH.CreatePolicyAPI)
	api.DELETE("/approval-policies/:id", approvalH.DeletePolicyAPI)
	signed.GET("/", dashboard.NewHandlers(dashboard.NewService(d.Pool, approvals)).Page)

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
		if err := ui.Start(ctx); err != nil {
			return nil, fmt.Errorf("jobs UI: %w", err)
		}
		jobs := signed.Group("/admin/jobs", requireProviderAdmin)
		jobs.Any("", echo.WrapHandler(ui))
		jobs.Any("/*", echo.WrapHandler(ui))
	}

	// Cross-origin browser requests that change state are refused before any handler runs; the
	// CSRF token check above covers old browsers that send neither Sec-Fetch-Site nor Origin.
	return http.NewCrossOriginProtection().Handler(e), nil
}

// found makes a web.Finder of a service's getter.
func found[T any](get func(context.Context, access.Principal, uuid.UUID) (T, error)) web.Finder {
	return func(ctx context.Context, actor access.Principal, id uuid.UUID) error {
		_, err := get(ctx, actor, id)
		return err
	}
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
}

// Workers registers the job workers of every domain.
func Workers(pool *pgxpool.Pool, eng Engine, log *slog.Logger) func(*river.Workers) {
	return func(w *river.Workers) {
		river.AddWorker(w, component.NewCheckWorker(pool, eng.Runner, log.With("component", "checks")).PerTenant(eng.ChecksPerTenant))
		river.AddWorker(w, deploy.NewWorker(pool, eng.Runner, eng.Keys, eng.Objects, log.With("component", "operations"), eng.OperationTimeout).
			Gated(approval.NewGate(eng.ApprovalTTL)))
		river.AddWorker(w, approval.NewExpirer(pool, log.With("component", "approvals")))
		river.AddWorker(w, deploy.NewReaper(pool))
		river.AddWorker(w, environment.NewAdvancer(pool, eng.Keys))
	}
}

// Periodic lists the domains' scheduled jobs.
func Periodic() []*river.PeriodicJob {
	return []*river.PeriodicJob{deploy.ReaperSchedule(), approval.ExpirySchedule()}
}

func requireProviderAdmin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !web.Actor(c).ProviderAdmin {
			return problem.ErrForbidden
		}
		return next(c)
	}
}

// me answers GET /api/v1/me: who the token or session acts as.
func me(c echo.Context) error {
	p := web.Actor(c)
	roles := map[string]access.Role{}
	for t, r := range p.Roles {
		roles[t.String()] = r
	}
	return c.JSON(http.StatusOK, map[string]any{"id": p.UserID, "email": p.Email, "provider_admin": p.ProviderAdmin, "roles": roles})
}

func securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		if !strings.HasPrefix(c.Request().URL.Path, "/admin/jobs") {
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

func requestLog(log *slog.Logger) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			err := next(c)
			if strings.HasPrefix(c.Request().URL.Path, "/static/") {
				return err
			}
			status := c.Response().Status
			if err != nil {
				status = web.Status(err)
			}
			log.LogAttrs(c.Request().Context(), slog.LevelDebug, "request",
				slog.String("method", c.Request().Method), slog.String("path", c.Request().URL.Path),
				slog.Int("status", status), slog.Duration("took", time.Since(start)))
			return err
		}
	}
}
