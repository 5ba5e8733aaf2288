// Package system reports on Nimbus itself: liveness, readiness, metrics and the status page.
package system

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"nimbus/app/kernel/objstore"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/pulumix"
	"nimbus/app/platform/web"
	"nimbus/db"
)

// Info is what the status page says about how Nimbus runs.
type Info struct {
	Version   string
	Database  string // "embedded (dir)" or "external"
	State     string // where Pulumi state is kept
	Objects   string // where blobs (full logs, state exports) are kept
	PulumiDir string
	// Sandbox says whether engine processes are confined.
	Sandbox Sandbox
	// Languages are those components may be written in.
	Languages []string
	// SecondFactorForAdmins says provider admins who sign in with a password must have a
	// second factor (--second-factor-for-admins).
	SecondFactorForAdmins bool
	// BackupURL is where the page's button asks for a backup to download; no button when empty.
	BackupURL string
	// Backups says when scheduled backups are taken and where they go; empty when never.
	Backups string
}

// Sandbox is the engine sandbox's state, in words.
type Sandbox struct {
	Confined bool
	Text     string
}

// Handlers serves health, readiness and the status page.
type Handlers struct {
	pool    *pgxpool.Pool
	objects objstore.Store // nil when the caller has none to check
	info    Info
	log     *slog.Logger
	alive   func() error // nil: alive while it answers
}

// NewHandlers returns the handlers. objects may be nil.
func NewHandlers(pool *pgxpool.Pool, objects objstore.Store, info Info, log *slog.Logger) *Handlers {
	return &Handlers{pool: pool, objects: objects, info: info, log: log}
}

// Readyz answers 200 when the database answers, every migration is applied and the object store
// can be used, 503 otherwise. Anyone may ask, so the answer names each check's state and no
// more: why a check failed (addresses, user names, driver messages) goes to the log.
func (h *Handlers) Readyz(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 3*time.Second)
	defer cancel()
	checks := map[string]string{}
	ready := true
	failed := func(check, state string, err error) {
		checks[check] = state
		ready = false
		h.log.LogAttrs(ctx, slog.LevelWarn, "not ready", slog.String("check", check), slog.String("state", state), slog.Any("err", err))
	}
	if err := h.pool.Ping(ctx); err != nil {
		failed("database", "unreachable", err)
	} else {
		checks["database"] = "ok"
		switch n, err := db.Pending(ctx, h.pool); {
		case err != nil:
			failed("migrations", "unknown", err)
		case n > 0:
			failed("migrations", fmt.Sprintf("%d pending", n), nil)
		default:
			checks["migrations"] = "current"
		}
	}
	if h.objects != nil {
		// Operation logs and, with S3, every stack's state live there: without it no
		// deployment can run.
		if err := h.objects.Ping(ctx); err != nil {
			failed("objects", "unreachable", err)
		} else {
			checks["objects"] = "ok"
		}
	}
	status := http.StatusOK
	if !ready {
		status = http.StatusServiceUnavailable
	}
	return c.JSON(status, map[string]any{"ready": ready, "checks": checks})
}

// StatusPage shows versions and health for provider admins.
func (h *Handlers) StatusPage(c echo.Context) error {
	if !web.Actor(c).ProviderAdmin {
		return problem.ErrForbidden
	}
	ctx := c.Request().Context()
	checks := []Check{
		{Name: "Nimbus", Value: h.info.Version + " (" + runtime.Version() + ")", Status: "ok"},
	}
	var pgVersion string
	if err := h.pool.QueryRow(ctx, "SHOW server_version").Scan(&pgVersion); err != nil {
		checks = append(checks, Check{Name: "PostgreSQL", Value: "unreachable: " + err.Error(), Status: "err"})
	} else {
		checks = append(checks, Check{Name: "PostgreSQL", Value: pgVersion + ", " + h.info.Database, Status: "ok"})
	}
	if n, err := db.Pending(ctx, h.pool); err != nil || n > 0 {
		checks = append(checks, Check{Name: "Migrations", Value: fmt.Sprintf("%d pending %v", n, err), Status: "err"})
	} else {
		checks = append(checks, Check{Name: "Migrations", Value: "current", Status: "ok"})
	}
	checks = append(checks, Check{Name: "State backend", Value: h.info.State, Status: "ok"})
	if h.objects != nil {
		if err := h.objects.Ping(ctx); err != nil {
			checks = append(checks, Check{Name: "Object storage", Value: h.info.Objects + ": " + err.Error(), Status: "err"})
		} else {
			checks = append(checks, Check{Name: "Object storage", Value: h.info.Objects, Status: "ok"})
		}
	}

	tc := pulumix.Detect(ctx, h.info.PulumiDir)
	if tc.CLI == "" {
		checks = append(checks, Check{Name: "Pulumi CLI", Value: "not found: run `go tool task toolchain` or put pulumi on PATH", Status: "err"})
	} else {
		checks = append(checks, Check{Name: "Pulumi CLI", Value: tc.CLIVersion + " at " + tc.CLI, Status: "ok"})
	}
	sandboxStatus := "err"
	if h.info.Sandbox.Confined {
		sandboxStatus = "ok"
	}
	checks = append(checks, Check{Name: "Engine sandbox", Value: h.info.Sandbox.Text, Status: sandboxStatus})
	if h.info.SecondFactorForAdmins {
		checks = append(checks, Check{Name: "Second factor", Value: "required of provider admins who sign in with a password", Status: "ok"})
	} else {
		checks = append(checks, Check{Name: "Second factor", Value: "each person's choice (NIMBUS_SECOND_FACTOR_FOR_ADMINS requires it of provider admins)", Status: "off"})
	}
	for _, lang := range pulumix.Languages {
		enabled := lang == "yaml" || slices.Contains(h.info.Languages, pulumix.LanguageOf(lang))
		p, found := tc.Hosts[lang]
		switch {
		case !enabled:
			checks = append(checks, Check{Name: "Language host: " + lang, Value: "not enabled (NIMBUS_LANGUAGES)", Status: "off"})
		case found:
			checks = append(checks, Check{Name: "Language host: " + lang, Value: p, Status: "ok"})
		default:
			checks = append(checks, Check{Name: "Language host: " + lang, Value: "not found; programs in " + lang + " cannot run here", Status: "warn"})
		}
	}
	if tc.CLI != "" {
		checks = append(checks, kubernetesProvider(filepath.Dir(tc.CLI)))
	}
	checks = append(checks, backupChecks(ctx, h.pool, h.info.Backups)...)
	return web.Render(c, http.StatusOK, System(web.Page(c, "System"), checks, h.info.BackupURL))
}

// kubernetesProvider says whether the Kubernetes provider is beside the CLI, which only
// Kubernetes landing zones need, or how its build in the background is going.
func kubernetesProvider(dir string) Check {
	name := "Provider: kubernetes"
	if (pulumix.Local{Dir: dir}).HasProvider("kubernetes") {
		return Check{Name: name, Value: filepath.Join(dir, "pulumi-resource-kubernetes"), Status: "ok"}
	}
	log, err := os.ReadFile(filepath.Join(dir, "pulumi-resource-kubernetes.build.log"))
	if err != nil {
		return Check{Name: name, Value: "not built: Kubernetes landing zones cannot deploy until it is (go tool task toolchain builds it)", Status: "warn"}
	}
	lines := strings.Split(strings.TrimSpace(string(log)), "\n")
	return Check{Name: name, Value: "being built, which takes about a quarter of an hour on two cores; Kubernetes landing zones wait for it. Last said: " +
		lines[len(lines)-1], Status: "warn"}
}

// Metrics are the Prometheus collectors Nimbus exports.
type Metrics struct {
	Registry *prometheus.Registry
	latency  *prometheus.HistogramVec
}

// NewMetrics registers the HTTP latency histogram, the job queue depth, the database pool, the
// scheduled backups and the Go runtime collectors.
func NewMetrics(pool *pgxpool.Pool) *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		Registry: reg,
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "nimbus_http_request_duration_seconds",
			Help:    "Time to answer HTTP requests, by route and status class.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"method", "route", "code"}),
	}
	reg.MustRegister(m.latency, prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}),
		&poolCollector{pool: pool}, &queueCollector{pool: pool}, &backupCollector{pool: pool})
	return m
}

// Middleware observes each request's latency under its route pattern, not its raw path, so
// IDs do not explode the label set. A request its client abandoned counts under 4xx (499), not
// as a server error.
func (m *Metrics) Middleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		route := c.Path()
		if route == "" {
			route = "unmatched"
		}
		code := c.Response().Status
		if err != nil {
			code = web.Status(c, err)
		}
		m.latency.WithLabelValues(c.Request().Method, route, fmt.Sprintf("%dxx", code/100)).Observe(time.Since(start).Seconds())
		return err
	}
}

var (
	poolDescs = map[string]*prometheus.Desc{
		"acquired": prometheus.NewDesc("nimbus_db_pool_acquired_connections", "Connections in use.", nil, nil),
		"idle":     prometheus.NewDesc("nimbus_db_pool_idle_connections", "Idle connections.", nil, nil),
		"total":    prometheus.NewDesc("nimbus_db_pool_total_connections", "Open connections.", nil, nil),
		"max":      prometheus.NewDesc("nimbus_db_pool_max_connections", "Pool size limit.", nil, nil),
		"waits":    prometheus.NewDesc("nimbus_db_pool_empty_acquire_total", "Acquires that had to wait for a connection.", nil, nil),
	}
	queueDesc = prometheus.NewDesc("nimbus_jobs", "Jobs by queue and state.", []string{"queue", "state"}, nil)
)

type poolCollector struct{ pool *pgxpool.Pool }

func (p *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range poolDescs {
		ch <- d
	}
}

func (p *poolCollector) Collect(ch chan<- prometheus.Metric) {
	s := p.pool.Stat()
	ch <- prometheus.MustNewConstMetric(poolDescs["acquired"], prometheus.GaugeValue, float64(s.AcquiredConns()))
	ch <- prometheus.MustNewConstMetric(poolDescs["idle"], prometheus.GaugeValue, float64(s.IdleConns()))
	ch <- prometheus.MustNewConstMetric(poolDescs["total"], prometheus.GaugeValue, float64(s.TotalConns()))
	ch <- prometheus.MustNewConstMetric(poolDescs["max"], prometheus.GaugeValue, float64(s.MaxConns()))
	ch <- prometheus.MustNewConstMetric(poolDescs["waits"], prometheus.CounterValue, float64(s.EmptyAcquireCount()))
}

// queueCollector counts River's jobs at scrape time; the job table is small because River
// deletes finished jobs after their retention.
type queueCollector struct{ pool *pgxpool.Pool }

func (q *queueCollector) Describe(ch chan<- *prometheus.Desc) { ch <- queueDesc }

func (q *queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	rows, err := q.pool.Query(ctx, "SELECT queue, state::text, count(*) FROM river_job GROUP BY queue, state")
	if err != nil {
		ch <- prometheus.NewInvalidMetric(queueDesc, err)
		return
	}
	defer rows.Close()
	type key struct{ queue, state string }
	counts := map[key]float64{}
	for rows.Next() {
		var k key
		var n int64
		if err := rows.Scan(&k.queue, &k.state, &n); err != nil {
			ch <- prometheus.NewInvalidMetric(queueDesc, err)
			return
		}
		counts[k] = float64(n)
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(queueDesc, prometheus.GaugeValue, n, k.queue, k.state)
	}
}

// JobsPage frames the job queue's own view, served under ui, in a Nimbus page with the way
// back; the caller keeps it to provider admins. Loaded inside its own frame (a reload in the view, which
// knows its root as the bare prefix) it sends the frame to the view instead of nesting.
func JobsPage(ui string) echo.HandlerFunc {
	return func(c echo.Context) error {
		if c.Request().Header.Get("Sec-Fetch-Dest") == "iframe" {
			return c.Redirect(http.StatusFound, ui)
		}
		return web.Render(c, http.StatusOK, Jobs(web.Page(c, "Jobs"), ui))
	}
}
