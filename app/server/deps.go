package server

import (
	"log/slog"
	"net"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"go.opentelemetry.io/otel/trace"

	"nimbus/app/domain/component"
	"nimbus/app/domain/system"
	"nimbus/app/kernel/objstore"
	"nimbus/app/kernel/secrets"
	"nimbus/app/orchestration/backup"
	"nimbus/app/platform/gitremote"
	"nimbus/app/platform/pulumix"
)

// Deps is what the server needs; the caller owns their lifecycles.
type Deps struct {
	Pool *pgxpool.Pool
	// Tracer makes each request's span (see tracing); none when nil.
	Tracer     trace.TracerProvider
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
	// Toolchain says which languages and providers the engine can run, for publishing
	// components; the toolchain in Info.PulumiDir when nil.
	Toolchain component.Engine
	// Backup is the installation a provider admin may download a backup of from the system
	// page; none when nil.
	Backup *backup.Installation
	// Objects keeps blobs (full operation logs, state exports); /readyz checks it. May be nil.
	Objects objstore.Store
	// StreamRecheck is how often at the least a live stream checks that its viewer is still
	// signed in and may still see what it shows; deployweb.DefaultStreamRecheck when zero.
	StreamRecheck time.Duration
	// TrustedProxies are the networks of the proxies in front of Nimbus, whose
	// X-Forwarded-For names the client; empty when clients connect directly.
	TrustedProxies []*net.IPNet
	// MaxStateSize caps a state restored through the API, in bytes;
	// deployweb.DefaultMaxStateSize when zero.
	MaxStateSize int64
	// DatabaseDown reports that the database is known to be away, such as while the embedded
	// Postgres restarts: requests are then answered 503 without trying it. Nil when nothing
	// watches the database.
	DatabaseDown func() bool
	// Alive says whether the process can still do its work, for /healthz; nil means it can.
	Alive func() error
	// Git reads the repositories components are linked to.
	Git gitremote.Fetcher
	// WebhooksPrivate lets event subscriptions' URLs name private, loopback and link-local
	// addresses, as Engine.Deliveries.AllowPrivate lets deliveries reach them.
	WebhooksPrivate bool
}
