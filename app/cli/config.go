package cli

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
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
	SecureCookies bool
	PulumiDir     string
	JobWorkers    int
	JobTimeout    time.Duration
	// TrustedProxies are the networks of the proxies whose X-Forwarded-For is believed.
	TrustedProxies []*net.IPNet
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
	{"secure-cookies", "NIMBUS_SECURE_COOKIES", "false", "mark cookies Secure; set when Nimbus is reached over HTTPS", func(c *config, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("secure cookies must be true or false, not %q", v)
		}
		c.SecureCookies = b
		return nil
	}},
	{"pulumi-dir", "NIMBUS_PULUMI_DIR", "", "directory holding the pulumi CLI and language hosts (else PATH)", func(c *config, v string) error { c.PulumiDir = v; return nil }},
	{"job-workers", "NIMBUS_JOB_WORKERS", "10", "jobs run at once on this node", func(c *config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return fmt.Errorf("job workers must be a number from 1 to 1000, not %q", v)
		}
		c.JobWorkers = n
		return nil
	}},
	{"job-timeout", "NIMBUS_JOB_TIMEOUT", "2h", "longest any one job may run", durationSetter(func(c *config, d time.Duration) { c.JobTimeout = d })},
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
		fmt.Fprintf(&b, "  %-24s %s (default: %s)\n", o.env, o.help, def)
	}
	return b.String()
}

func ensureDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	return nil
}
