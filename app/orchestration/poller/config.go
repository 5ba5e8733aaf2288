package poller

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/domain/proxmox"
	"nimbus/app/kernel/problem"
	"nimbus/app/kernel/secrets"
	"nimbus/app/orchestration/event"
	"nimbus/db/dbgen"
)

// The clouds a cloud_provider source may poll.
const (
	SimcloudProvider = "simcloud"
	ProxmoxProvider  = "proxmox"
)

// Config is a cloud_provider source's config: which cloud it polls and, for Proxmox, where.
// The simulated cloud's folder is never given: a source polls the one the server deploys to.
// A Proxmox source either names a landing zone and polls with that zone's API access, or
// gives an API address and token of its own.
type Config struct {
	Provider string `json:"provider"`
	// LandingZoneID names the Proxmox landing zone whose API access (address, token, CA) the
	// source polls with; then it gives none of its own: no url, token_id, ca_cert or secret.
	LandingZoneID string `json:"landing_zone_id,omitempty"`
	// URL is a Proxmox API's address, such as https://pve.example:8006.
	URL string `json:"url,omitempty"`
	// Node is the Proxmox node whose machines are polled.
	Node string `json:"node,omitempty"`
	// TokenID names the Proxmox API token (user@realm!name); the source's secret is its secret.
	TokenID string `json:"token_id,omitempty"`
	// CACert is the PEM of the certificate authority that signs the API's certificate, such
	// as a cluster's own (/etc/pve/pve-root-ca.pem), for an API the system's roots do not
	// trust. The certificate is still checked, against this authority alone.
	CACert string `json:"ca_cert,omitempty"`
}

var proxmoxNode = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.-]{0,62}$`)

// Check adds to v what is wrong with a cloud_provider source's config and secret; it is the
// event service's event.ConfigCheck.
func Check(in event.NewSource, v *problem.ValidationError) {
	c, err := parse(in.Config)
	if err != nil {
		v.Add("config", "fields", "%s", err)
		return
	}
	check(c, in.Secret != "", v)
}

// check adds to v what is wrong with a parsed config, for a source with or without a secret.
func check(c Config, secret bool, v *problem.ValidationError) {
	switch c.Provider {
	case SimcloudProvider:
		if c.URL != "" || c.Node != "" || c.TokenID != "" || c.CACert != "" || c.LandingZoneID != "" {
			v.Add("config", "fields", "a simcloud source takes only provider: it polls the simulated cloud the server deploys to")
		}
		if secret {
			v.Add("secret", "forbidden", "a simcloud source takes no secret")
		}
	case ProxmoxProvider:
		if !proxmoxNode.MatchString(c.Node) {
			v.Add("config.node", "pattern", "must be the name of a Proxmox node: letters, digits, . and -")
		}
		if c.LandingZoneID != "" {
			checkZone(c, secret, v)
			return
		}
		if !proxmox.HTTPS(c.URL) {
			v.Add("config.url", "https", proxmox.EndpointRule)
		}
		if c.CACert != "" {
			if _, err := roots(c.CACert); err != nil {
				v.Add("config.ca_cert", "pem", "%s", err)
			}
		}
		if !proxmox.TokenID.MatchString(c.TokenID) {
			v.Add("config.token_id", "pattern", proxmox.TokenIDRule)
		}
		if !secret {
			v.Add("secret", "required", "a proxmox source needs its API token's secret")
		}
	default:
		v.Add("config.provider", "enum", "must be one of simcloud, proxmox")
	}
}

// checkZone adds to v what is wrong with a Proxmox source that names a landing zone: it polls
// with the zone's API access alone, so it gives none of its own.
func checkZone(c Config, secret bool, v *problem.ValidationError) {
	if _, err := uuid.Parse(c.LandingZoneID); err != nil {
		v.Add("config.landing_zone_id", "uuid", "must be the ID of a Proxmox landing zone")
	}
	if c.URL != "" || c.TokenID != "" || c.CACert != "" {
		v.Add("config", "fields", "a proxmox source that names a landing zone polls with the zone's API access: it takes no url, token_id or ca_cert of its own")
	}
	if secret {
		v.Add("secret", "forbidden", "a proxmox source that names a landing zone polls with the zone's API token: it takes no secret of its own")
	}
}

// parse reads a config, refusing fields it does not know.
func parse(raw []byte) (Config, error) {
	var c Config
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Config{}, fmt.Errorf("must hold provider and, for proxmox, node and either landing_zone_id or url, token_id and, if its certificate needs it, ca_cert: %v", err)
	}
	return c, nil
}

// roots is the pool of the PEM certificates given.
func roots(pem string) (*x509.CertPool, error) { return proxmox.Roots(pem) }

// Clouds is what the server lends its pollers.
type Clouds struct {
	// Simcloud is the folder of the simulated cloud the server's engine deploys to; empty
	// when it has none.
	Simcloud string
	// Keys opens the sources' secrets and the landing zones' Proxmox API tokens.
	Keys *secrets.Keyring
	// Client calls clouds' APIs.
	Client *http.Client
}

// errMisconfigured marks a source whose config the poller cannot use.
var errMisconfigured = errors.New("misconfigured")

// open returns the cloud a source polls and the cloud's provider name.
func (c Clouds) open(ctx context.Context, q *dbgen.Queries, src dbgen.EventSource) (Cloud, string, error) {
	cfg, err := parse(src.Config)
	if err != nil {
		return nil, "", fmt.Errorf("%w: config %v", errMisconfigured, err)
	}
	// Sources are checked when made; this catches one made before a check it now fails.
	v := &problem.ValidationError{}
	check(cfg, len(src.Secret) > 0, v)
	if err := v.Err(); err != nil {
		return nil, "", fmt.Errorf("%w: %v", errMisconfigured, err)
	}
	switch cfg.Provider {
	case SimcloudProvider:
		if c.Simcloud == "" {
			return nil, "", fmt.Errorf("%w: this server has no simulated cloud", errMisconfigured)
		}
		return Simcloud{Dir: c.Simcloud}, cfg.Provider, nil
	}
	creds, err := c.proxmoxAccess(ctx, q, src, cfg)
	if err != nil {
		return nil, "", err
	}
	client := c.Client
	if creds.CACert != "" {
		pool, err := roots(creds.CACert)
		if err != nil {
			return nil, "", fmt.Errorf("%w: ca_cert %v", errMisconfigured, err)
		}
		client = trusting(c.Client, pool)
	}
	return Proxmox{URL: creds.Endpoint, Node: cfg.Node, TokenID: creds.TokenID, Secret: creds.Secret, Client: client}, cfg.Provider, nil
}

// proxmoxAccess is the API access a Proxmox source polls with: its landing zone's, read now so
// that a token the zone was given since is the one used, or its own.
func (c Clouds) proxmoxAccess(ctx context.Context, q *dbgen.Queries, src dbgen.EventSource, cfg Config) (proxmox.Credentials, error) {
	if cfg.LandingZoneID == "" {
		secret, err := c.Keys.Open(*src.SecretKeyID, src.Secret, src.ID[:])
		if err != nil {
			return proxmox.Credentials{}, fmt.Errorf("open the source's secret: %w", err)
		}
		return proxmox.Credentials{Endpoint: cfg.URL, TokenID: cfg.TokenID, Secret: string(secret), CACert: cfg.CACert}, nil
	}
	zone := uuid.MustParse(cfg.LandingZoneID) // checked above
	creds, err := proxmox.Open(ctx, q, c.Keys, zone)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return creds, fmt.Errorf("%w: config.landing_zone_id: no landing zone %s", errMisconfigured, zone)
	case errors.Is(err, proxmox.ErrNoAccess):
		return creds, fmt.Errorf("%w: config.landing_zone_id: %v", errMisconfigured, err)
	}
	return creds, err
}

// trusting is a client like base (http.DefaultClient when nil) that trusts only the
// authorities in pool. It keeps no connection between polls: each poll makes its own.
func trusting(base *http.Client, pool *x509.CertPool) *http.Client {
	if base == nil {
		base = http.DefaultClient
	}
	transport, ok := base.Transport.(*http.Transport)
	if !ok || transport == nil {
		transport = http.DefaultTransport.(*http.Transport)
	}
	transport = transport.Clone()
	if transport.TLSClientConfig == nil {
		transport.TLSClientConfig = &tls.Config{}
	}
	transport.TLSClientConfig.RootCAs = pool
	transport.DisableKeepAlives = true
	client := *base
	client.Transport = transport
	return &client
}
