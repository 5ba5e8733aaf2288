package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"nimbus/app/domain/component"
	"nimbus/app/domain/system"
	"nimbus/app/domain/user"
	"nimbus/app/kernel/egress"
	"nimbus/app/kernel/sandbox"
	"nimbus/app/kernel/secrets"
	"nimbus/app/orchestration/event"
	"nimbus/app/platform/gitremote"
	"nimbus/app/platform/pulumix"
	"nimbus/app/platform/tracing"
	"nimbus/app/server"
	"nimbus/db"
	"nimbus/jobs"
)

func serve(ctx context.Context, args []string, env Env) error {
	fs := flagSet("serve [flags]", "Run the web server and the job workers until SIGINT or SIGTERM.\n\n"+
		"Traces: the standard OpenTelemetry variables are honoured. With OTEL_EXPORTER_OTLP_ENDPOINT or\n"+
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT set, each request, job, saga step and engine process is a\n"+
		"span sent over OTLP/HTTP (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER,\n"+
		"OTEL_EXPORTER_OTLP_HEADERS and OTEL_BSP_* too); without one nothing is recorded.", env)
	cfg, err := parseConfig(fs, args, env.Getenv,
		"addr", "data-dir", "database-url", "database-restart-timeout", "log-format", "log-level", "admin-email", "session-ttl", "session-max-age",
		"secure-cookies", "second-factor-for-admins", "pulumi-dir", "job-workers", "check-workers", "checks-per-tenant", "checks-per-minute", "graph-parallel",
		"operations-per-tenant", "event-workers", "delivery-workers", "housekeeping-workers",
		"job-timeout", "approval-ttl", "poll-interval", "trusted-proxies", "max-state-size",
		"s3-endpoint", "s3-bucket", "s3-access-key", "s3-secret-key-file", "s3-region", "sandbox", "engine-user", "languages",
		"backup-interval", "backup-keep", "backup-dir")
	if err != nil {
		return err
	}
	log := cfg.logger(env.Stderr)
	started := time.Now()
	traces, err := tracing.FromEnv(ctx, env.Getenv, Version)
	if err != nil {
		return err
	}
	// Deferred first, so it runs last: the spans of the jobs stopped below are sent too.
	defer func() {
		flushCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := traces.Shutdown(flushCtx); err != nil {
			log.Warn("send the last traces", "err", err)
		}
	}()
	if cfg.OperationsPerTenant >= cfg.JobWorkers {
		log.Warn("one tenant's operations can take every job worker of this node, and other tenants' then wait for them: set --operations-per-tenant below --job-workers",
			"operations_per_tenant", cfg.OperationsPerTenant, "job_workers", cfg.JobWorkers)
	}
	// Bind first: a taken port should fail before any database work.
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	defer ln.Close()
	// So should storage that cannot be reached.
	objs, err := openObjects(ctx, cfg, log)
	if err != nil {
		return err
	}

	d, err := openDatabase(ctx, cfg, log, 20)
	if err != nil {
		return err
	}
	defer func() {
		if err := d.Close(); err != nil {
			log.Error("stop database", "err", err)
		}
	}()
	// Deferred after the close, so it stops first: it would restart the Postgres that the
	// close stops.
	watched := d.supervise(cfg.DatabaseRestartTimeout, log)
	defer watched.Stop()
	if err := db.Migrate(ctx, d.Pool, log); err != nil {
		return err
	}
	if err := bootstrapAdmin(ctx, cfg, d, env); err != nil {
		return err
	}
	// The shipped components need neither language hosts nor jobs: they are validated statically.
	created, err := component.EnsureBuiltins(ctx, component.NewService(d.Pool, nil, nil))
	if err != nil {
		return fmt.Errorf("ship the built-in components: %w", err)
	}
	if len(created) > 0 {
		log.Info("built-in components published", "components", created)
	}

	cloud := filepath.Join(cfg.DataDir, "simcloud")
	runner, err := pulumix.NewRunner(cfg.PulumiDir, cfg.DataDir, map[string]string{"SIMCLOUD_DIR": cloud},
		append(objs.backend, pulumix.WithSandbox(cfg.Sandbox), pulumix.CloudDirs(cloud), pulumix.WithAccount(cfg.EngineUser),
			pulumix.WithClosedPorts(closedPorts(cfg)...), pulumix.WithLog(log))...)
	switch {
	case err != nil && cfg.Sandbox == sandbox.Required && sandbox.ABI() == 0:
		return err
	case err != nil:
		// Most often the toolchain is not installed yet; the error says what it is.
		log.Warn("the engine cannot run here: components cannot be checked nor deployed", "err", err)
		runner = nil
	case !runner.Confined():
		log.Error("engine processes are NOT confined: tenants' programs are held by the program validator alone; "+
			"run on a kernel with Landlock, or set NIMBUS_SANDBOX=required to refuse to start without it",
			"sandbox", cfg.Sandbox, "landlock_abi", sandbox.ABI())
	case !runner.ConfinesNetwork():
		log.Error("engine processes run in a Landlock sandbox, but this kernel's Landlock cannot confine TCP: they may connect to any port, Nimbus's own and its database's among them",
			"landlock_abi", sandbox.ABI(), "needs", 4)
	default:
		log.Info("engine processes run in a Landlock sandbox", "landlock_abi", sandbox.ABI(), "account", runner.Account())
	}
	keys, err := secrets.Load(cfg.DataDir, env.Getenv)
	if err != nil {
		return err
	}
	log.Info("secrets keyring loaded", "keyring", keys)
	saved, err := installation(cfg, d, objs, keys)
	if err != nil {
		return err
	}
	shelf, shelved, err := backupShelf(cfg, objs)
	if err != nil {
		return err
	}
	git := gitremote.Fetcher{Reach: egress.Policy{AllowPrivate: cfg.GitPrivate}}
	eng := server.Engine{Runner: runner, Keys: keys, Objects: objs.store, OperationTimeout: cfg.JobTimeout, ApprovalTTL: cfg.ApprovalTTL,
		ChecksPerTenant: cfg.ChecksPerTenant, OperationsPerTenant: cfg.OperationsPerTenant, GraphParallel: cfg.GraphParallel, Cloud: cloud, PollInterval: cfg.PollInterval,
		Deliveries: event.DeliveryConfig{AllowPrivate: cfg.WebhooksPrivate}, EventRetention: cfg.EventRetention,
		Toolchain: pulumix.Local{Dir: cfg.PulumiDir, Enabled: cfg.Languages}, Git: git, PublicURL: cfg.PublicURL,
		Backup: &saved, BackupShelf: shelf, BackupInterval: cfg.BackupInterval}
	riverPool, err := db.LazySessions(ctx, d.Pool)
	if err != nil {
		return err
	}
	defer riverPool.Close() // after the job client stops, below
	jobClient, err := jobs.NewClient(riverPool, log, jobs.Config{Workers: cfg.JobWorkers, CheckWorkers: cfg.CheckWorkers, EventWorkers: cfg.EventWorkers,
		DeliveryWorkers: cfg.DeliveryWorkers, HousekeepingWorkers: cfg.HousekeepingWorkers, Timeout: cfg.JobTimeout,
		Register: server.Workers(d.Pool, eng, log), Periodic: server.Periodic(ctx, d.Pool, eng),
		Tracer: traces})
	if err != nil {
		return err
	}
	// Not the signal context: River would cancel running jobs the moment a signal came, where
	// a stop should first let them finish (see below).
	if err := jobClient.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("start jobs: %w", err)
	}
	// Running jobs get a grace period on a stop; whatever is still running after it is
	// cancelled and resumes on the next start. Without a database they could not record a
	// step, so then they are cancelled at once.
	grace := 30 * time.Second
	defer func() {
		if grace == 0 {
			cancelCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := jobClient.StopAndCancel(cancelCtx); err != nil {
				log.Error("stop jobs", "err", err)
			}
			return
		}
		stopCtx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		if err := jobClient.Stop(stopCtx); err != nil {
			log.Warn("jobs still running after the grace period; cancelling them", "err", err)
			cancelCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := jobClient.StopAndCancel(cancelCtx); err != nil {
				log.Error("stop jobs", "err", err)
			}
		}
	}()

	uiCtx, stopUI := context.WithCancel(context.Background())
	defer stopUI()
	handler, err := server.New(uiCtx, server.Deps{
		Pool: d.Pool, Log: log, Tracer: traces, Jobs: jobClient, SessionTTL: cfg.SessionTTL, SessionMaxAge: cfg.SessionMaxAge, SecureCookies: cfg.SecureCookies,
		Keys: keys, Runner: runner, ChecksPerMinute: cfg.ChecksPerMinute, OperationsPerTenant: cfg.OperationsPerTenant, MaxStateSize: cfg.MaxStateSize,
		TrustedProxies: cfg.TrustedProxies, Objects: objs.store, Backup: &saved,
		DatabaseDown: watched.Down, Alive: watched.Alive, WebhooksPrivate: cfg.WebhooksPrivate, Git: git,
		Info: system.Info{
			Version: Version, Database: d.Where, PulumiDir: cfg.PulumiDir,
			State: objs.state, Objects: objs.where, Sandbox: sandboxStatus(runner, cfg.Sandbox), Languages: cfg.Languages,
			SecondFactorForAdmins: cfg.SecondFactorForAdmins, Backups: shelved,
		},
	})
	if err != nil {
		return err
	}

	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	srv.RegisterOnShutdown(stopUI) // ends the live streams, which would otherwise hold the shutdown up
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log.Info("nimbus is serving", "url", "http://"+ln.Addr().String(), "database", d.Where, "took", time.Since(started).Round(time.Millisecond))
	fmt.Fprintf(env.Stdout, "Nimbus is running: sign in at http://%s/login (Ctrl-C stops it)\n", ln.Addr())

	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case err := <-watched.GaveUp:
		// Exiting with an error lets a container runtime or systemd start Nimbus afresh.
		grace = 0
		shutdown(srv, log, 5*time.Second)
		return fmt.Errorf("embedded database: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down")
	shutdown(srv, log, 15*time.Second)
	return nil
}

// shutdown stops taking requests and waits up to within for those under way.
func shutdown(srv *http.Server, log *slog.Logger, within time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Error("shutdown http", "err", err)
	}
}

// sandboxStatus says, for the system page, whether engine processes are confined.
func sandboxStatus(runner *pulumix.Runner, mode sandbox.Mode) system.Sandbox {
	switch {
	case runner == nil:
		return system.Sandbox{Text: "no engine: the Pulumi toolchain is not installed"}
	case runner.Confined() && !runner.ConfinesNetwork():
		return system.Sandbox{Text: fmt.Sprintf("Landlock ABI %d: each engine process reaches only its own stack's directories and runs only the toolchain, but this kernel cannot confine TCP (ABI 4 can): it may connect to any port, Nimbus's own and its database's among them", sandbox.ABI())}
	case runner.Confined():
		as := ""
		if a := runner.Account(); a != "" {
			as = ", as " + a
		}
		return system.Sandbox{Confined: true, Text: fmt.Sprintf("Landlock ABI %d: each engine process runs only the toolchain%s, reaches only its own stack's directories and connects only to its provider's ports", sandbox.ABI(), as)}
	case mode == sandbox.Off:
		return system.Sandbox{Text: "off (NIMBUS_SANDBOX=off): engine processes are not confined; the program validator is the only wall"}
	}
	return system.Sandbox{Text: "this kernel has no Landlock: engine processes are not confined; the program validator is the only wall"}
}

// bootstrapAdmin creates the first provider admin on an empty database and tells the operator,
// once, how to sign in.
func bootstrapAdmin(ctx context.Context, cfg *config, d *database, env Env) error {
	password, generated := cfg.AdminPassword, false
	if password == "" {
		password, generated = generatePassword(), true
	}
	created, err := user.Bootstrap(ctx, d.Pool, cfg.AdminEmail, password)
	if err != nil {
		return fmt.Errorf("create the first admin: %w", err)
	}
	if !created {
		return nil
	}
	fmt.Fprintf(env.Stdout, "\nNimbus created its first provider admin. Sign in at http://%s/login with\n", cfg.Addr)
	fmt.Fprintf(env.Stdout, "  email:    %s\n", cfg.AdminEmail)
	if generated {
		fmt.Fprintf(env.Stdout, "  password: %s\n(shown only this once; keep it somewhere safe)\n\n", password)
	} else {
		fmt.Fprintf(env.Stdout, "  password: the one in NIMBUS_ADMIN_PASSWORD\n\n")
	}
	return nil
}
