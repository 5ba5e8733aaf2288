package server

import (
	"context"
	"log/slog"
	"net/http"
	"nimbus/app/domain/component"
	"nimbus/app/domain/elevation"
	"nimbus/app/domain/notification"
	"nimbus/app/domain/stack"
	"nimbus/app/domain/tenant"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/graph"
	"nimbus/app/kernel/objstore"
	"nimbus/app/kernel/problem"
	"nimbus/app/kernel/secrets"
	"nimbus/app/orchestration/approval"
	"nimbus/app/orchestration/backup"
	"nimbus/app/orchestration/deploy"
	"nimbus/app/orchestration/drift"
	"nimbus/app/orchestration/environment"
	"nimbus/app/orchestration/event"
	"nimbus/app/orchestration/instance"
	"nimbus/app/orchestration/poller"
	"nimbus/app/platform/gitremote"
	"nimbus/app/platform/pulumix"
	"nimbus/jobs"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
)

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
	// MailAttempts is how many times a notification's mail is tried before it ends failed;
	// notification.DefaultMailAttempts when zero.
	MailAttempts int
	// Toolchain says which languages and providers the engine can run, for validating and
	// checking programs taken from git; the runner's toolchain when nil.
	Toolchain component.Engine
	// Git reads the repositories components are linked to.
	Git gitremote.Fetcher
	// PublicURL is Nimbus's address as its users reach it, which commit statuses link under;
	// empty for none.
	PublicURL string
	// RepositoryPoll is how often every linked repository is looked at;
	// component.DefaultPollInterval when zero.
	RepositoryPoll time.Duration
	// Backup is what a scheduled backup takes, onto BackupShelf every BackupInterval; none when
	// nil or the interval is zero.
	Backup         *backup.Installation
	BackupShelf    backup.Shelf
	BackupInterval time.Duration
}

// Workers registers the job workers of every domain.
func Workers(pool *pgxpool.Pool, eng Engine, log *slog.Logger) func(*river.Workers) {
	return func(w *river.Workers) {
		river.AddWorker(w, component.NewCheckWorker(pool, eng.Runner, eng.Keys, log.With("component", "checks")).PerTenant(eng.ChecksPerTenant))
		river.AddWorker(w, deploy.NewWorker(pool, eng.Runner, eng.Keys, eng.Objects, log.With("component", "operations"), eng.OperationTimeout).
			Gated(approval.NewGate(eng.ApprovalTTL)).PerTenant(eng.OperationsPerTenant))
		river.AddWorker(w, approval.NewExpirer(pool, log.With("component", "approvals")))
		river.AddWorker(w, deploy.NewReaper(pool))
		if eng.Backup != nil {
			river.AddWorker(w, backup.NewScheduler(*eng.Backup, eng.BackupShelf, log.With("component", "backup")))
		}
		river.AddWorker(w, drift.NewScanner(pool))
		river.AddWorker(w, graph.NewRunner(pool, eng.GraphParallel, problem.Refusal).
			Serve(graph.ParentEnvironment, environment.NewGraph(pool, eng.Keys)).
			Serve(graph.ParentStackInstance, instance.NewParent(pool, eng.Keys)))
		river.AddWorker(w, instance.NewTimeoutWorker(pool, eng.Keys))
		router := Router(pool, eng.Keys)
		river.AddWorker(w, router)
		river.AddWorker(w, event.NewSweeper(router))
		river.AddWorker(w, event.NewDeliverer(pool, eng.Keys, eng.Deliveries, log.With("component", "deliveries")))
		river.AddWorker(w, event.NewRetainer(pool, eng.EventRetention))
		river.AddWorker(w, poller.NewWorker(pool, poller.Clouds{Simcloud: eng.Cloud, Keys: eng.Keys, Client: &http.Client{Timeout: time.Minute}},
			log.With("component", "poller")))
		river.AddWorker(w, notification.NewMailer(pool, eng.Keys, eng.MailAttempts, log.With("component", "mail")))
		river.AddWorker(w, notification.NewDigester(pool))
		river.AddWorker(w, environment.NewExpirer(pool, expiredInstances(pool, eng), log.With("component", "expiry")))
		river.AddWorker(w, elevation.NewEnder(pool))
		river.AddWorker(w, elevation.NewSweeper(pool, log.With("component", "elevations")))
		toolchain := eng.Toolchain
		if toolchain == nil {
			toolchain = pulumix.Local{}
		}
		linked := component.NewService(pool, toolchain, jobs.Running{}).Linking(eng.Keys, eng.Git)
		river.AddWorker(w, component.NewSyncWorker(linked, log.With("component", "repositories")))
		river.AddWorker(w, component.NewStatusWorker(linked, eng.PublicURL, log.With("component", "commit-statuses")))
		river.AddWorker(w, component.NewPoller(pool))
	}
}

// Router routes Nimbus's events and runs the reactions across domains, against the direction
// of their imports.
func Router(pool *pgxpool.Pool, keys *secrets.Keyring) *event.Router {
	router := event.NewRouter(pool, instance.NewSignaller(pool, keys), instance.Refused).
		Reacting("deployment.cancelled", approval.Withdraw).
		Reacting("stack.destroyed", tenant.RemoveWhenDecommissioned)
	// A linked repository's pushes preview and upgrade the deployments that opted in, and the
	// previews' results go back to the forge.
	fromGit := deploy.NewService(pool, keys, jobs.Running{}, nil, nil)
	router.Reacting(component.BranchPushed, fromGit.PreviewBranch).
		Reacting(component.Published, fromGit.UpgradeOnPublish).
		Reacting(component.Previewed, component.ReportPreview)
	// Each person's inbox is filled from the events that concern them.
	for _, k := range notification.Kinds {
		router.Reacting(k.Type, notification.React)
	}
	return router
}

// deploys builds the deployments' service as every part of Nimbus uses it: the pages say how
// many of a tenant's operations run at once.
func deploys(pool *pgxpool.Pool, keys *secrets.Keyring, queue jobs.Queue, runner *pulumix.Runner, objects objstore.Store, perTenant int) *deploy.Service {
	return deploy.NewService(pool, keys, queue, runner, objects).PerTenant(perTenant)
}

// expiredInstances destroys the stack instances of expired environments through the
// instances' own service, built as Build builds it but queuing with the client of the job that
// asks: the workers are registered before the client exists.
func expiredInstances(pool *pgxpool.Pool, eng Engine) environment.DestroyInstance {
	queue := jobs.Running{}
	instances := instance.NewService(pool, deploys(pool, eng.Keys, queue, eng.Runner, eng.Objects, eng.OperationsPerTenant), eng.Keys, queue)
	return func(ctx context.Context, actor access.Principal, id uuid.UUID) error {
		_, err := instances.Destroy(ctx, actor, id)
		return err
	}
}

// Periodic lists the domains' scheduled jobs, some as often as eng says. What decides whether
// a job is due watches the database until ctx ends.
func Periodic(ctx context.Context, pool *pgxpool.Pool, eng Engine) []*river.PeriodicJob {
	waiting := event.NewWaiting(pool)
	go waiting.Watch(ctx)
	periodic := []*river.PeriodicJob{deploy.ReaperSchedule(), approval.ExpirySchedule(), drift.Schedule(), event.SweepSchedule(waiting), event.RetentionSchedule(),
		poller.Schedule(eng.PollInterval), environment.ExpirySchedule(eng.ExpiryCheck), elevation.SweepSchedule(),
		notification.DigestSchedule(), component.PollSchedule(eng.RepositoryPoll)}
	if eng.Backup != nil && eng.BackupInterval > 0 {
		periodic = append(periodic, backup.Schedule(eng.BackupInterval))
	}
	return periodic
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
