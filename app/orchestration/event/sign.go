package event

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// A webhook proves it knows its source's secret in one of two ways: it sends the secret as a
// bearer token (what Alertmanager and Grafana can be told to do), or it signs the request:
// SignatureHeader holds "sha256=" and the hex HMAC-SHA256, keyed with the secret, of
// TimestampHeader's value (Unix seconds), a dot and the body. A signed request more than
// SignatureWindow away from now is refused, so a captured one cannot be replayed later.
const (
	TimestampHeader = "Nimbus-Timestamp"
	SignatureHeader = "Nimbus-Signature"
	SignatureWindow = 5 * time.Minute
)

// Sign returns the signature of body sent at t under secret, as SignatureHeader carries it.
func Sign(secret []byte, t time.Time, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(strconv.FormatInt(t.Unix(), 10)))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// verify checks that a request knows secret, by its bearer token or its signature; the error
// says why not, for the log (never the secret or the body). A signature covers the body only,
// so a signed CloudEvent must be sent whole in the body (structured mode): in binary mode its
// id, type and target are headers a replay could change.
func verify(secret []byte, h http.Header, body []byte, now time.Time) error {
	if token, ok := strings.CutPrefix(h.Get("Authorization"), "Bearer "); ok {
		if subtle.ConstantTimeCompare([]byte(strings.TrimSpace(token)), secret) == 1 {
			return nil
		}
		return errors.New("wrong bearer token")
	}
	if h.Get("Ce-Specversion") != "" {
		return errors.New("a signed CloudEvent in binary mode: sign a structured one, or send the bearer token")
	}
	sig := h.Get(SignatureHeader)
	if sig == "" {
		return errors.New("neither a bearer token nor a signature")
	}
	sec, err := strconv.ParseInt(h.Get(TimestampHeader), 10, 64)
	if err != nil {
		return errors.New("a signature without a timestamp in Unix seconds")
	}
	at := time.Unix(sec, 0)
	if d := now.Sub(at); d > SignatureWindow || d < -SignatureWindow {
		return errors.New("a signature whose timestamp is more than five minutes away")
	}
	if !hmac.Equal([]byte(sig), []byte(Sign(secret, at, body))) {
		return errors.New("wrong signature")
	}
	return nil
}
