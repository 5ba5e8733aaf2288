package auth

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"

	"nimbus/app/kernel/problem"
)

// argon2id parameters as OWASP recommends for interactive sign-in (19 MiB, 2 passes).
const (
	argonMemory  = 19 * 1024
	argonTime    = 2
	argonThreads = 1
	argonKeyLen  = 32
	saltLen      = 16
)

// Password length bounds; the upper one keeps hashing cheap for hostile input.
const (
	MinPasswordLen = 12
	MaxPasswordLen = 256
)

// CheckPassword says what is wrong with a new password, naming field.
func CheckPassword(field, pw string) error {
	switch n := utf8.RuneCountInString(pw); {
	case n < MinPasswordLen:
		return problem.Invalid(field, "min_length", "must be at least %d characters", MinPasswordLen)
	case n > MaxPasswordLen:
		return problem.Invalid(field, "max_length", "must be at most %d characters", MaxPasswordLen)
	}
	return nil
}

// HashPassword returns an argon2id hash in the PHC string format.
func HashPassword(pw string) (string, error) {
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	key := argon2.IDKey([]byte(pw), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2.Version, argonMemory, argonTime, argonThreads, b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

// VerifyPassword reports whether pw matches hash, in constant time.
func VerifyPassword(hash, pw string) bool {
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false
	}
	var version int
	var memory, passes uint32
	var threads uint8
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return false
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &memory, &passes, &threads); err != nil {
		return false
	}
	b64 := base64.RawStdEncoding
	salt, err := b64.DecodeString(parts[4])
	if err != nil {
		return false
	}
	want, err := b64.DecodeString(parts[5])
	if err != nil {
		return false
	}
	got := argon2.IDKey([]byte(pw), salt, passes, memory, threads, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1
}

// dummyHash is verified against when no user has the email, so that a miss takes as long as
// a wrong password and does not reveal which emails exist.
var dummyHash = sync.OnceValue(func() string {
	h, _ := HashPassword("nimbus-timing-equaliser")
	return h
})
