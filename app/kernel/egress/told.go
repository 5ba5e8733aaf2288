package egress

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"syscall"
)

// What a tenant is told of a failed request: a few plain categories, never the network's own
// words ("connection refused", "no route to host", "EOF", a TLS alert, a resolver's answer),
// which would make a delivery log a scanner of whatever a URL's name points at. Operators find
// the error itself in the server's log.
const (
	Unreachable = "the address could not be reached"
	ClosedEarly = "the connection was closed before an answer"
	TimedOut    = "timed out"
	Untrusted   = "TLS certificate not trusted"
	NoTLS       = "no TLS connection could be made"
	Failed      = "the request failed"
)

// NotAllowed is what a tenant is told of an address refused when dialled: its range, not the
// address, which a name may have resolved to inside the operator's network.
func NotAllowed(r *Refused) string { return "the address is not allowed: " + r.In.String() }

// Answered is what a tenant is told of an answer that is not a success.
func Answered(code int) string { return fmt.Sprintf("the receiver answered %d", code) }

// Told is the category a failed request's error falls in, in the words a tenant is shown.
func Told(err error) string {
	var refused *Refused
	var dns *net.DNSError
	var verify *tls.CertificateVerificationError
	var netErr net.Error
	var op *net.OpError
	switch {
	case errors.As(err, &refused):
		return NotAllowed(refused)
	case errors.As(err, &dns):
		// A name that does not resolve and one that resolves to a closed port look alike.
		return Unreachable
	case errors.As(err, &verify), errors.As(err, new(x509.UnknownAuthorityError)), errors.As(err, new(x509.HostnameError)),
		errors.As(err, new(x509.CertificateInvalidError)):
		return Untrusted
	case errors.As(err, new(tls.RecordHeaderError)), errors.As(err, new(tls.AlertError)), errors.As(err, new(*tls.ECHRejectionError)),
		errors.Is(err, http.ErrSchemeMismatch):
		return NoTLS
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return TimedOut
	case errors.As(err, &op) && op.Op == "dial", errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.ENETUNREACH):
		return Unreachable
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return ClosedEarly
	}
	return Failed
}
