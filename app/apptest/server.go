package apptest

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"go.opentelemetry.io/otel/trace"

	"nimbus/app/domain/system"
	"nimbus/app/kernel/egress"
	"nimbus/app/kernel/objstore"
	"nimbus/app/kernel/objstore/s3test"
	"nimbus/app/kernel/sandbox"
	"nimbus/app/kernel/secrets"
	"nimbus/app/orchestration/backup"
	"nimbus/app/orchestration/event"
	"nimbus/app/platform/gitremote"
	"nimbus/app/platform/pulumix"
	"nimbus/app/server"
	"nimbus/db"
	"nimbus/jobs"
)

// Server is a Nimbus server running in the test process as production runs one: the handler
// server.New builds from server.Deps, and a job client working server.Workers and
// server.Periodic, on the test's database. Everything it started stops when the test ends.
type Server struct {
	Handler http.Handler // the server's handler, for requests that must not go over the network
	URL     string
	Cloud   string     // the simulated cloud's folder
	Data    string     // the runner's data directory: stack states, work directories
	Logs    *LogBuffer // everything the server and its workers logged
	// Runner runs the engine; nil when no toolchain was found, and then checks and operations
	// fail saying so.
	Runner  *pulumix.Runner
	objects objstore.Store
	Bucket  *objstore.S3 // where the state is, on the S3 backend; nil on the file backend
	// Jobs is the server's job client, started.
	Jobs *river.Client[pgx.Tx]
}

// PublicURL is the address a test's server says it is reached at, which commit statuses
// link under.
const PublicURL = "http://nimbus.test"

// SiteConfig is how a test's server differs from the usual one.
type SiteConfig struct {
	// Backend keeps stack state and blobs in "file" (the data directory) or "s3" (a bucket of
	// its own on the package's S3 server, which needs the package's TestMain to run
	// s3test.Around).
	Backend string
	// OperationTimeout bounds each operation; a minute when zero.
	OperationTimeout time.Duration
	// ApprovalTTL is how long an operation waits for approval; the default when zero.
	ApprovalTTL time.Duration
	// Sandbox confines the engine as NIMBUS_SANDBOX does; auto when empty.
	Sandbox sandbox.Mode
	// Probes turns on the simulated cloud's test-only probe (see e2e/simcloud).
	Probes bool
	// CheckWorkers and ChecksPerTenant bound the checks running at once, on the node and per
	// tenant; the defaults when zero.
	CheckWorkers, ChecksPerTenant int
	// JobWorkers and OperationsPerTenant bound the operations running at once, on the node and
	// per tenant; the defaults when zero.
	JobWorkers, OperationsPerTenant int
	// GraphParallel bounds the deployments of one graph running at once; the default when zero.
	GraphParallel int
	// PollInterval is how often the clouds of event sources are polled; the default when zero.
	PollInterval time.Duration
	// Toolchain is the engine's toolchain directory; NIMBUS_PULUMI_DIR when empty.
	Toolchain string
	// Deliveries is how events are sent to subscriptions.
	Deliveries event.DeliveryConfig
	// ExpiryCheck is how often environments' expiries are looked at; the default when zero.
	ExpiryCheck time.Duration
	// MailAttempts is how many times a mail is tried; the default when zero.
	MailAttempts int
	// RepositoryPoll is how often linked repositories are looked at; the default when zero.
	RepositoryPoll time.Duration
	// QuietJobs leaves the job client's and the workers' lines below warnings out of the log,
	// where they would bury the requests.
	QuietJobs bool
	// LogOnFailure writes the server's log to the test's output when the test fails.
	LogOnFailure bool
	// Tracer records the spans of requests and jobs; none when nil.
	Tracer trace.TracerProvider
}

// Start starts a server on pool as cfg says; configure, if given, changes its dependencies
// before the handler is built. The database is the caller's: Start adds nobody to it.
func Start(t testing.TB, pool *pgxpool.Pool, cfg SiteConfig, configure ...func(*server.Deps)) *Server {
	t.Helper()
	if cfg.OperationTimeout == 0 {
		cfg.OperationTimeout = time.Minute
	}
	// Cancelled last (cleanups run in reverse), after the HTTP server and the job client stop.
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	keys := testKeys(t)
	cloud, data, logs := t.TempDir(), t.TempDir(), &LogBuffer{}
	if cfg.LogOnFailure {
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("server log:\n%s", logs)
			}
		})
	}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	jobsLog := log
	if cfg.QuietJobs {
		jobsLog = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	var (
		objects objstore.Store
		bucket  *objstore.S3
		opts    []pulumix.Option
		err     error
	)
	switch cfg.Backend {
	case "file":
		objects, err = objstore.NewDir(filepath.Join(data, "objects"))
	case "s3":
		if bucket, err = objstore.NewS3(ctx, s3test.Shared(t)); err == nil {
			objects, opts = bucket, []pulumix.Option{pulumix.WithSharedState(bucket)}
		}
	default:
		t.Fatalf("no backend %q", cfg.Backend)
	}
	if err != nil {
		t.Fatal(err)
	}
	opts = append(opts, pulumix.CloudDirs(cloud))
	if cfg.Sandbox != "" {
		opts = append(opts, pulumix.WithSandbox(cfg.Sandbox))
	}
	if cfg.Toolchain == "" {
		cfg.Toolchain = os.Getenv("NIMBUS_PULUMI_DIR")
	}
	engineEnv := map[string]string{"SIMCLOUD_DIR": cloud}
	if cfg.Probes {
		engineEnv["SIMCLOUD_PROBES"] = "1"
	}
	// Checks and operations run for real when the toolchain is here; without it they fail
	// saying so.
	runner, err := pulumix.NewRunner(cfg.Toolchain, data, engineEnv, opts...)
	if err != nil {
		runner = nil
	}
	eng := server.Engine{Runner: runner, Keys: keys, Objects: objects, OperationTimeout: cfg.OperationTimeout, ApprovalTTL: cfg.ApprovalTTL,
		ChecksPerTenant: cfg.ChecksPerTenant, OperationsPerTenant: cfg.OperationsPerTenant, GraphParallel: cfg.GraphParallel, Cloud: cloud, PollInterval: cfg.PollInterval, Deliveries: cfg.Deliveries,
		ExpiryCheck: cfg.ExpiryCheck, MailAttempts: cfg.MailAttempts, Toolchain: pulumix.Local{Dir: cfg.Toolchain},
		Git: gitremote.Fetcher{AllowHTTP: true, Reach: egress.Policy{AllowPrivate: true}}, RepositoryPoll: cfg.RepositoryPoll, PublicURL: PublicURL}
	riverPool, err := db.LazySessions(ctx, pool) // as the server runs River
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(riverPool.Close) // after the job client stops
	client, err := jobs.NewClient(riverPool, jobsLog, jobs.Config{Workers: cfg.JobWorkers, CheckWorkers: cfg.CheckWorkers, Register: server.Workers(pool, eng, jobsLog), Periodic: server.Periodic(ctx, pool, eng),
		Tracer: cfg.Tracer})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Stop(context.Background()) })
	deps := server.Deps{Pool: pool, Log: log, Tracer: cfg.Tracer, Jobs: client, SessionTTL: time.Hour, Keys: keys, Runner: runner, Objects: objects,
		Info: system.Info{Version: "test", PulumiDir: cfg.Toolchain}, WebhooksPrivate: cfg.Deliveries.AllowPrivate, OperationsPerTenant: cfg.OperationsPerTenant,
		Git: gitremote.Fetcher{AllowHTTP: true, Reach: egress.Policy{AllowPrivate: true}}}
	// Backups as serve wires them: the states in the bucket, or in the runner's data directory.
	saved := backup.Installation{Pool: pool, DatabaseURL: pool.Config().ConnString(), Objects: objects.(backup.Blobs),
		StateBackend: cfg.Backend, Keys: keys, Version: "test"}
	if bucket != nil {
		saved.State = bucket
	} else if saved.State, err = objstore.NewDir(filepath.Join(data, "state")); err != nil {
		t.Fatal(err)
	}
	deps.Backup = &saved
	for _, f := range configure {
		f(&deps)
	}
	h, err := server.New(ctx, deps)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &Server{Handler: h, URL: srv.URL, Cloud: cloud, Data: data, Logs: logs, Runner: runner, objects: objects, Bucket: bucket, Jobs: client}
}

// LogBuffer is what a server logged: a bytes.Buffer many goroutines may write.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is everything logged so far.
func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// testKeys is a keyring with a key of its own, in a file under the test's temp dir.
func testKeys(t testing.TB) *secrets.Keyring {
	t.Helper()
	keys, err := secrets.Load(t.TempDir(), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

func discardLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
