// Package proxmox holds a Proxmox landing zone's API access: the endpoint and API token a
// provider admin gives (the token's secret sealed with the master key, never shown again),
// checked against the API when saved, and the credentials each deployment's engine gets. Its
// rules for an API address, a token ID and a certificate authority are the ones every part of
// Nimbus that speaks the Proxmox VE API applies.
package proxmox

import (
	"crypto/x509"
	"errors"
	"net/url"
	"regexp"
)

// Provider is the Nimbus provider whose landing zones and components deploy on Proxmox VE.
const Provider = "proxmox"

// TokenID is the form of a Proxmox API token's ID: user@realm!name.
var TokenID = regexp.MustCompile(`^[^\s@!=]+@[^\s@!=]+![A-Za-z][A-Za-z0-9_.-]*$`)

// Wording of the rules, shared so that a refusal reads the same wherever an API is given.
const (
	EndpointRule = "must be the Proxmox API's https:// address, such as https://pve.example:8006, without a user: the API token is sent with every request"
	TokenIDRule  = "must name an API token as user@realm!name"
)

// HTTPS reports whether raw is an https:// address with a host and no user: the token's
// secret travels in every request, never in the clear.
func HTTPS(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && u.Scheme == "https" && u.Host != "" && u.User == nil
}

// Roots is the pool of the PEM certificates given.
func Roots(pem string) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(pem)) {
		return nil, errors.New("must hold the PEM of one or more CA certificates (-----BEGIN CERTIFICATE-----)")
	}
	return pool, nil
}
