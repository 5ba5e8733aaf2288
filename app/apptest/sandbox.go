package apptest

import (
	"crypto/rand"
	"encoding/hex"
	"testing"
)

// RandomHex is 16 random hex digits, for names no other test run uses.
func RandomHex(t *testing.T) string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
