package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"nimbus/app/kernel/graph"
	"nimbus/app/kernel/objstore"
	"nimbus/app/kernel/sandbox"
	"nimbus/app/orchestration/deploy"
	"nimbus/app/orchestration/poller"
	"nimbus/app/platform/pulumix"
)

// config is everything Nimbus can be told, by flag or by NIMBUS_* variable; a flag wins.
type config struct {
	Addr          string
	DataDir       string
	DatabaseURL   string
	LogFormat     string
	LogLevel      string
	AdminEmail    string
	AdminPassword string
	SessionTTL    time.Duration
	// SessionMaxAge ends a session this long after sign-in, however much it is used.
	SessionMaxAge time.Duration
	SecureCookies bool
	PulumiDir     string
	JobWorkers    int
	JobTimeout    time.Duration
	// CheckWorkers is how many component checks run at once on this node.
	CheckWorkers int
	// ChecksPerTenant is how many of one tenant's checks run at once, on all nodes together.
	ChecksPerTenant int
	// OperationsPerTenant is how many of one tenant's operations run at once, on all nodes
	// together.
	OperationsPerTenant int
	// EventWorkers, DeliveryWorkers and HousekeepingWorkers are how many events are routed,
	// deliveries sent and periodic sweeps run at once on this node, each in a queue of its own.
	EventWorkers, DeliveryWorkers, HousekeepingWorkers int
	// GraphParallel is how many deployments of one graph, such as an environment's mandatory
	// components, run at once.
	GraphParallel int
	// ChecksPerMinute is how many checks one tenant may ask for in a minute.
	ChecksPerMinute int
	// ApprovalTTL is how long an operation waits for approval before its request expires.
	ApprovalTTL time.Duration
	// PollInterval is how often the cloud_provider event sources' clouds are polled.
	PollInterval time.Duration
	// TrustedProxies are the networks of the proxies whose X-Forwarded-For is believed.
	TrustedProxies []*net.IPNet
	// MaxStateSize caps a stack state restored through the API, in bytes.
	MaxStateSize int64
	// S3 is the object storage shared by every replica; unused while S3.Endpoint is empty.
	S3 objstore.S3Config
	// Sandbox says whether engine processes must, may or must not run in Landlock.
	Sandbox sandbox.Mode
	// EngineUser is the account engine processes run as when Nimbus runs as root.
	EngineUser string
	// Languages are the program languages components may be written in; YAML always.
	Languages []string
	// WebhooksPrivate lets event subscriptions deliver to private and loopback addresses.
	WebhooksPrivate bool
	// GitPrivate lets components be linked to repositories at private and loopback addresses.
	GitPrivate bool
	// PublicURL is Nimbus's address as its users reach it, which commit statuses link under.
	PublicURL string
	// SecondFactorForAdmins requires provider admins who sign in with a password to have a
	// second factor.
	SecondFactorForAdmins bool
	// EventRetention is how long the event log keeps an event.
	EventRetention time.Duration
	// BackupInterval is how often a scheduled backup is taken; zero for never.
	BackupInterval time.Duration
	// BackupKeep is how many scheduled backups are kept, the newest.
	BackupKeep int
	// BackupDir is the directory scheduled backups go to; empty for the object store's
	// backups folder.
	BackupDir string
	// DatabaseRestartTimeout is how long a dead embedded Postgres is tried to be restarted
	// before Nimbus gives up and exits.
	DatabaseRestartTimeout time.Duration
}

// option is one setting: its flag, its variable, its default and what it does.
type option struct {
	flag, env, def, help string
	set                  func(c *config, v string) error
}

var options = []option{
	{"addr", "NIMBUS_ADDR", "127.0.0.1:8080", "address to serve HTTP on", func(c *config, v string) error { c.Addr = v; return nil }},
	{"data-dir", "NIMBUS_DATA_DIR", "./data", "directory for the embedded Postgres, keys and local state", func(c *config, v string) error { c.DataDir = v; return nil }},
	{"database-url", "NIMBUS_DATABASE_URL", "", "use this Postgres instead of starting the embedded one (postgres://user:pass@host/db)", func(c *config, v string) error { c.DatabaseURL = v; return nil }},
	{"database-restart-timeout", "NIMBUS_DATABASE_RESTART_TIMEOUT", "2m", "how long to keep restarting an embedded Postgres that died; then nimbus exits with an error, for its supervisor to start it afresh",
		durationSetter(func(c *config, d time.Duration) { c.DatabaseRestartTimeout = d })},
	{"log-format", "NIMBUS_LOG_FORMAT", "text", "log format: text or json", func(c *config, v string) error {
		if v != "text" && v != "json" {
			return fmt.Errorf("log format must be text or json, not %q", v)
		}
		c.LogFormat = v
		return nil
	}},
	{"log-level", "NIMBUS_LOG_LEVEL", "info", "log level: debug, info, warn or error", func(c *config, v string) error {
		var l slog.Level
		if err := l.UnmarshalText([]byte(v)); err != nil {
			return fmt.Errorf("log level must be debug, info, warn or error, not %q", v)
		}
		c.LogLevel = v
		return nil
	}},
	{"admin-email", "NIMBUS_ADMIN_EMAIL", "admin@nimbus.local", "email of the provider admin created on first start", func(c *config, v string) error { c.AdminEmail = v; return nil }},
	{"", "NIMBUS_ADMIN_PASSWORD", "", "password of that first admin (environment only; generated and printed once when unset)", func(c *config, v string) error { c.AdminPassword = v; return nil }},
	{"session-ttl", "NIMBUS_SESSION_TTL", "12h", "how long a session lasts without use", durationSetter(func(c *config, d time.Duration) { c.SessionTTL = d })},
	{"session-max-age", "NIMBUS_SESSION_MAX_AGE", "168h", "how long a session lasts after sign-in, however much it is used", durationSetter(func(c *config, d time.Duration) { c.SessionMaxAge = d })},
	{"secure-cookies", "NIMBUS_SECURE_COOKIES", "false", "mark cookies Secure; set when Nimbus is reached over HTTPS", func(c *config, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("secure cookies must be true or false, not %q", v)
		}
		c.SecureCookies = b
		return nil
	}},
	{"event-retention", "NIMBUS_EVENT_RETENTION", "720h", "how long the event log keeps an event", durationSetter(func(c *config, d time.Duration) { c.EventRetention = d })},
	{"webhooks-private", "NIMBUS_WEBHOOKS_PRIVATE", "false", "let event subscriptions deliver to the operator's own networks: private-use, shared, loopback, link-local and unique-local addresses (off: only public ones; documentation, reserved and other special-purpose ranges stay closed)", func(c *config, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("webhooks private must be true or false, not %q", v)
		}
		c.WebhooksPrivate = b
		return nil
	}},
	{"git-private", "NIMBUS_GIT_PRIVATE", "false", "let components be linked to git repositories in the operator's own networks (a git server inside them): the same ranges as --webhooks-private (off: only public addresses)", func(c *config, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("git private must be true or false, not %q", v)
		}
		c.GitPrivate = b
		return nil
	}},
	{"public-url", "NIMBUS_PUBLIC_URL", "", "Nimbus's address as its users reach it, such as https://nimbus.example.com: the commit statuses it reports to a forge link to the preview's page under it (empty: they link nowhere)", func(c *config, v string) error {
		v = strings.TrimRight(v, "/")
		if u, err := url.Parse(v); v != "" && (err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "") {
			return fmt.Errorf("public url must be an http or https address such as https://nimbus.example.com, not %q", v)
		}
		c.PublicURL = v
		return nil
	}},
	{"second-factor-for-admins", "NIMBUS_SECOND_FACTOR_FOR_ADMINS", "false", "require provider admins who sign in with a password to set up a second factor (TOTP) before they can do anything else; those of the identity provider are not asked", func(c *config, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("second factor for admins must be true or false, not %q", v)
		}
		c.SecondFactorForAdmins = b
		return nil
	}},
	{"backup-interval", "NIMBUS_BACKUP_INTERVAL", "off", "how often to take a scheduled backup, such as 24h; off for never", func(c *config, v string) error {
		if v == "off" {
			return nil
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Minute {
			return fmt.Errorf("backup interval must be off or a duration of a minute or more such as 24h, not %q", v)
		}
		c.BackupInterval = d
		return nil
	}},
	{"backup-keep", "NIMBUS_BACKUP_KEEP", "7", "how many scheduled backups to keep; older ones are deleted", countSetter("backup keep", 1, 1000, func(c *config, n int) { c.BackupKeep = n })},
	{"backup-dir", "NIMBUS_BACKUP_DIR", "", "directory scheduled backups go to; unset puts them in the object store, under backups/", func(c *config, v string) error { c.BackupDir = v; return nil }},
	{"pulumi-dir", "NIMBUS_PULUMI_DIR", "", "directory holding the pulumi CLI and language hosts (else PATH)", func(c *config, v string) error { c.PulumiDir = v; return nil }},
	{"job-workers", "NIMBUS_JOB_WORKERS", "10", "operations run at once on this node", func(c *config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return fmt.Errorf("job workers must be a number from 1 to 1000, not %q", v)
		}
		c.JobWorkers = n
		return nil
	}},
	{"check-workers", "NIMBUS_CHECK_WORKERS", "4", "component checks run at once on this node, apart from the job workers", countSetter("check workers", 1, 1000, func(c *config, n int) { c.CheckWorkers = n })},
	{"checks-per-tenant", "NIMBUS_CHECKS_PER_TENANT", "2", "checks of one tenant run at once on all nodes; provider-level components count as one tenant", countSetter("checks per tenant", 1, 1000, func(c *config, n int) { c.ChecksPerTenant = n })},
	{"operations-per-tenant", "NIMBUS_OPERATIONS_PER_TENANT", strconv.Itoa(deploy.DefaultOperationsPerTenant),
		"operations of one tenant run at once on all nodes; keep it below the job workers so other tenants' operations still start",
		countSetter("operations per tenant", 1, 1000, func(c *config, n int) { c.OperationsPerTenant = n })},
	{"event-workers", "NIMBUS_EVENT_WORKERS", "4", "events routed at once on this node, apart from the operations",
		countSetter("event workers", 1, 1000, func(c *config, n int) { c.EventWorkers = n })},
	{"delivery-workers", "NIMBUS_DELIVERY_WORKERS", "4", "events sent to subscriptions at once on this node, apart from the operations",
		countSetter("delivery workers", 1, 1000, func(c *config, n int) { c.DeliveryWorkers = n })},
	{"housekeeping-workers", "NIMBUS_HOUSEKEEPING_WORKERS", "2", "periodic sweeps (the operation reaper, expiries, retention, polls) run at once on this node, apart from the operations",
		countSetter("housekeeping workers", 1, 1000, func(c *config, n int) { c.HousekeepingWorkers = n })},
	{"checks-per-minute", "NIMBUS_CHECKS_PER_MINUTE", "30", "checks one tenant may ask for in a minute; more are refused with 429", countSetter("checks per minute", 1, 100000, func(c *config, n int) { c.ChecksPerMinute = n })},
	{"graph-parallel", "NIMBUS_GRAPH_PARALLEL", strconv.Itoa(graph.DefaultParallel), "deployments of one graph (an environment's mandatory components) run at once",
		countSetter("graph parallel", 1, 1000, func(c *config, n int) { c.GraphParallel = n })},
	{"job-timeout", "NIMBUS_JOB_TIMEOUT", "2h", "longest any one job may run", durationSetter(func(c *config, d time.Duration) { c.JobTimeout = d })},
	{"approval-ttl", "NIMBUS_APPROVAL_TTL", "72h", "how long an operation waits for approval before its request expires and it ends", durationSetter(func(c *config, d time.Duration) { c.ApprovalTTL = d })},
	{"poll-interval", "NIMBUS_POLL_INTERVAL", poller.DefaultInterval.String(), "how often the clouds of cloud_provider event sources are polled for machines stopped, started or deleted outside Nimbus",
		durationSetter(func(c *config, d time.Duration) { c.PollInterval = d })},
	{"max-state-size", "NIMBUS_MAX_STATE_SIZE", "256MiB", "largest stack state a provider admin may restore through the API (such as 64MiB or 1GiB)", func(c *config, v string) error {
		n, err := parseSize(v)
		if err != nil {
			return err
		}
		c.MaxStateSize = n
		return nil
	}},
	{"trusted-proxies", "NIMBUS_TRUSTED_PROXIES", "", "comma-separated CIDRs of the proxies in front of Nimbus, whose X-Forwarded-For gives the client address", func(c *config, v string) error {
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s == "" {
				continue
			}
			_, ipNet, err := net.ParseCIDR(s)
			if err != nil {
				return fmt.Errorf("%q is not a CIDR such as 10.0.0.0/8 or fd00::/8", s)
			}
			c.TrustedProxies = append(c.TrustedProxies, ipNet)
		}
		return nil
	}},
	{"s3-endpoint", "NIMBUS_S3_ENDPOINT", "", "URL of an S3-compatible server (http://127.0.0.1:8333) for Pulumi state and full logs; unset keeps both in the data dir", func(c *config, v string) error {
		if v == "" {
			return nil
		}
		if _, err := objstore.ParseEndpoint(v); err != nil {
			return err
		}
		c.S3.Endpoint = v
		return nil
	}},
	{"s3-bucket", "NIMBUS_S3_BUCKET", "", "bucket on that server, created when missing", func(c *config, v string) error { c.S3.Bucket = v; return nil }},
	{"s3-access-key", "NIMBUS_S3_ACCESS_KEY", "", "access key for that server", func(c *config, v string) error { c.S3.AccessKey = v; return nil }},
	// A flag would show the secret to every user of the machine in the process list.
	{"", "NIMBUS_S3_SECRET_KEY", "", "secret key for that server (environment only; or NIMBUS_S3_SECRET_KEY_FILE)", func(c *config, v string) error {
		if v != "" {
			c.S3.SecretKey = v
		}
		return nil
	}},
	// After NIMBUS_S3_SECRET_KEY, so that it can refuse the two at once.
	{"s3-secret-key-file", "NIMBUS_S3_SECRET_KEY_FILE", "", "file holding the secret key, such as a mounted container secret", func(c *config, v string) error {
		if v == "" {
			return nil
		}
		if c.S3.SecretKey != "" {
			return errors.New("NIMBUS_S3_SECRET_KEY is set too: set one of them")
		}
		b, err := os.ReadFile(v)
		if err != nil {
			return fmt.Errorf("read the secret key: %w", err)
		}
		if c.S3.SecretKey = strings.TrimRight(string(b), "\r\n"); c.S3.SecretKey == "" {
			return fmt.Errorf("%s is empty", v)
		}
		return nil
	}},
	{"s3-region", "NIMBUS_S3_REGION", objstore.DefaultRegion, "region to sign S3 requests for", func(c *config, v string) error { c.S3.Region = v; return nil }},
	{"sandbox", "NIMBUS_SANDBOX", "auto", "confine engine processes with Landlock: auto (where the kernel can), required (refuse to start without) or off", func(c *config, v string) error {
		m, err := sandbox.ParseMode(v)
		if err != nil {
			return fmt.Errorf("sandbox %w", err)
		}
		c.Sandbox = m
		return nil
	}},
	{"engine-user", "NIMBUS_ENGINE_USER", pulumix.DefaultAccount, "the unprivileged account engine processes run as when Nimbus runs as root; Nimbus as any other user runs them as itself", func(c *config, v string) error {
		c.EngineUser = v
		return nil
	}},
	{"languages", "NIMBUS_LANGUAGES", "yaml", "comma-separated languages components may be written in: yaml, typescript, python; programs not in YAML run unread, so only provider admins may write them", func(c *config, v string) error {
		c.Languages = []string{"yaml"}
		for _, l := range strings.Split(v, ",") {
			switch l = strings.ToLower(strings.TrimSpace(l)); l {
			case "", "yaml":
			case "typescript", "python":
				c.Languages = append(c.Languages, l)
			default:
				return fmt.Errorf("languages must be among yaml, typescript and python, not %q", l)
			}
		}
		return nil
	}},
}

// checkS3 refuses object storage that is only partly configured, naming what is missing: a
// server without a bucket or keys would otherwise fail at the first deployment.
func (c *config) checkS3() error {
	set := map[string]bool{
		"NIMBUS_S3_ENDPOINT":   c.S3.Endpoint != "",
		"NIMBUS_S3_BUCKET":     c.S3.Bucket != "",
		"NIMBUS_S3_ACCESS_KEY": c.S3.AccessKey != "",
		"NIMBUS_S3_SECRET_KEY": c.S3.SecretKey != "",
	}
	var given, missing []string
	for _, name := range []string{"NIMBUS_S3_ENDPOINT", "NIMBUS_S3_BUCKET", "NIMBUS_S3_ACCESS_KEY", "NIMBUS_S3_SECRET_KEY"} {
		if set[name] {
			given = append(given, name)
		} else {
			missing = append(missing, name)
		}
	}
	if len(given) == 0 || len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("object storage is partly configured: %s set, but %s not (set all four, or none to keep everything in the data dir)",
		strings.Join(given, ", "), strings.Join(missing, ", "))
}

// sizeUnits are the units parseSize takes, in bytes.
var sizeUnits = map[string]int64{"": 1, "b": 1, "kb": 1000, "kib": 1 << 10, "mb": 1000 * 1000, "mib": 1 << 20,
	"gb": 1000 * 1000 * 1000, "gib": 1 << 30}

// parseSize reads a positive size such as 256MiB, 1GiB, 500MB or 1048576 (bytes).
func parseSize(v string) (int64, error) {
	v = strings.TrimSpace(v)
	i := strings.IndexFunc(v, func(r rune) bool { return r < '0' || r > '9' })
	if i < 0 {
		i = len(v)
	}
	n, err := strconv.ParseInt(v[:i], 10, 64)
	unit, ok := sizeUnits[strings.ToLower(strings.TrimSpace(v[i:]))]
	if err != nil || !ok || n < 1 || n > (1<<62)/unit {
		return 0, fmt.Errorf("%q is not a positive size such as 64MiB, 1GiB or 1048576 (bytes)", v)
	}
	return n * unit, nil
}

// countSetter reads a whole number from lo to hi.
func countSetter(what string, lo, hi int, set func(*config, int)) func(*config, string) error {
	return func(c *config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("%s must be a number from %d to %d, not %q", what, lo, hi, v)
		}
		set(c, n)
		return nil
	}
}

func durationSetter(set func(*config, time.Duration)) func(*config, string) error {
	return func(c *config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("%q is not a positive duration such as 30m or 12h", v)
		}
		set(c, d)
		return nil
	}
}

// parseConfig reads the named options from flags, then environment, then defaults.
func parseConfig(fs *flag.FlagSet, args []string, getenv func(string) string, names ...string) (*config, error) {
	c := &config{}
	values := map[string]*string{}
	use := map[string]bool{}
	for _, n := range names {
		use[n] = true
	}
	for _, o := range options {
		if o.flag != "" && use[o.flag] {
			values[o.flag] = fs.String(o.flag, "", fmt.Sprintf("%s (env %s, default %q)", o.help, o.env, o.def))
		}
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	for _, o := range options {
		v := o.def
		if e := getenv(o.env); e != "" {
			v = e
		}
		if p, ok := values[o.flag]; ok && *p != "" {
			v = *p
		}
		if err := o.set(c, v); err != nil {
			name := o.env
			if o.flag != "" {
				name = "--" + o.flag + " / " + o.env
			}
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	abs, err := filepath.Abs(c.DataDir)
	if err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	c.DataDir = abs
	return c, nil
}

func (c *config) logger(w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	if c.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// envHelp lists every variable for --help.
func envHelp() string {
	var b strings.Builder
	b.WriteString("\nEnvironment:\n")
	for _, o := range options {
		def := o.def
		if def == "" {
			def = "unset"
		}
		fmt.Fprintf(&b, "  %-26s %s (default: %s)\n", o.env, o.help, def)
	}
	return b.String()
}

func ensureDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	return nil
}
