package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"strings"
)

// TokenPrefix starts every API token, so that scanners and people can recognise one.
const TokenPrefix = "nmb_"

var b32 = base32.StdEncoding.WithPadding(base32.NoPadding)

// newSecret returns 32 random bytes as lower-case base32 text.
func newSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand never fails on Linux; it panics rather than return short
	return strings.ToLower(b32.EncodeToString(b))
}

// hashSecret is what the database keeps of a session or token secret. The secret has 256 bits
// of entropy, so a plain SHA-256 is enough; no slow hash is needed.
func hashSecret(s string) []byte {
	sum := sha256.Sum256([]byte(s))
	return sum[:]
}
