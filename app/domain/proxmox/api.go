package proxmox

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"nimbus/app/kernel/problem"
)

// Credentials are what reaches a Proxmox VE API: its address, an API token and, for an API
// whose certificate the system's roots do not trust, the authority that signs it.
type Credentials struct {
	Endpoint string // such as https://pve.example:8006, without a trailing slash
	TokenID  string // user@realm!name
	Secret   string
	CACert   string // PEM; "" means the system's roots
}

// Token is the token as the API and the engine's provider take it: id=secret.
func (c Credentials) Token() string { return c.TokenID + "=" + c.Secret }

// client reaches the API as c says. A redirect would carry the token elsewhere: the API never
// sends one.
func (c Credentials) client() (*http.Client, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.CACert != "" {
		pool, err := Roots(c.CACert)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	return &http.Client{Timeout: checkTimeout, Transport: &http.Transport{TLSClientConfig: cfg, Proxy: nil},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}, nil
}

// checkTimeout bounds the wait for the API.
const checkTimeout = 15 * time.Second

// Version asks the API its version with the token (/api2/json/version answers only a signed-in
// user, so an answer proves the token too). What goes wrong is a problem naming the field to
// change: the endpoint when the API cannot be reached or is not Proxmox's, the CA certificate
// when the API's certificate is not trusted, the secret when the token is refused.
func (c Credentials) Version(ctx context.Context) (string, error) {
	client, err := c.client()
	if err != nil {
		return "", problem.Invalid("ca_cert", "pem", "%s", err)
	}
	defer client.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Endpoint+"/api2/json/version", nil)
	if err != nil {
		return "", problem.Invalid("endpoint", "https", EndpointRule)
	}
	req.Header.Set("Authorization", "PVEAPIToken="+c.Token())
	resp, err := client.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		if trust := untrusted(err); trust != "" {
			return "", problem.Invalid("ca_cert", "trusted", "the Proxmox API's certificate at %s is not trusted (%s): give the certificate authority that signs it, such as the cluster's /etc/pve/pve-root-ca.pem", c.Endpoint, trust)
		}
		return "", problem.Invalid("endpoint", "reachable", "cannot reach the Proxmox API at %s: %s", c.Endpoint, err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		return "", problem.Invalid("secret", "accepted", "the Proxmox API refused the token (401): check the token ID and its secret")
	case resp.StatusCode == http.StatusForbidden:
		return "", problem.Invalid("token_id", "permitted", "the Proxmox API answered 403 to the token: give it a role on the cluster")
	case resp.StatusCode != http.StatusOK:
		return "", problem.Invalid("endpoint", "proxmox", "the API at %s answered %s to /api2/json/version: is it a Proxmox VE API?", c.Endpoint, resp.Status)
	}
	var v struct {
		Data struct {
			Version string `json:"version"`
		} `json:"data"`
	}
	if json.Unmarshal(answer, &v) != nil || v.Data.Version == "" {
		return "", problem.Invalid("endpoint", "proxmox", "the API at %s answered /api2/json/version without a version: is it a Proxmox VE API?", c.Endpoint)
	}
	return v.Data.Version, nil
}

// untrusted says why the API's certificate was refused, or "" when err is not about it.
func untrusted(err error) string {
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	switch {
	case errors.As(err, &unknown):
		return "signed by an unknown authority"
	case errors.As(err, &host):
		return host.Error()
	case errors.As(err, &invalid):
		return invalid.Error()
	case errors.As(err, &verify):
		return verify.Err.Error()
	}
	return ""
}

// Port is the TCP port of the API, the one port on which a deployment's engine reaches it.
func (c Credentials) Port() (uint16, error) {
	u, err := url.Parse(c.Endpoint)
	if err != nil {
		return 0, fmt.Errorf("the Proxmox API's address %q: %w", c.Endpoint, err)
	}
	if p := u.Port(); p != "" {
		var n uint16
		if _, err := fmt.Sscan(p, &n); err != nil {
			return 0, fmt.Errorf("the Proxmox API's address %q: port %q", c.Endpoint, p)
		}
		return n, nil
	}
	return 443, nil
}
