// Package secrets holds Nimbus's master keys and everything derived from them: the encryption
// of secret parameters kept in Postgres and the passphrases of Pulumi stacks.
//
// A master key is never used directly. Each one goes through HKDF-SHA256 once (extract) and
// every purpose expands its own subkey with a distinct info string, so a flaw or a leak in one
// use (a stack passphrase shown to Pulumi, say) tells nothing about the others.
package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// The environment variables Load reads. Their names appear in error messages, so an operator
// knows what to fix.
const (
	EnvKey     = "NIMBUS_SECRET_KEY"
	EnvOldKeys = "NIMBUS_SECRET_KEYS_OLD"
)

// KeySize is the length of a master key in bytes: AES-256 strength, and the input HKDF expects.
const KeySize = 32

// The HKDF info strings. They are part of the stored data's format: changing one makes every
// secret sealed, every stack created and every key id recorded under the old string unreadable,
// so a new scheme gets a new version suffix instead.
const (
	infoSeal  = "nimbus/secrets/v1"
	infoStack = "nimbus/pulumi-stack/v1"
	infoKeyID = "nimbus/key-id/v1"
)

// keyIDLen is the number of hex digits in a key id: enough to tell a handful of loaded keys
// apart (Load refuses a collision), short enough to read in a log. It is derived through HKDF,
// so it reveals nothing useful about the key.
const keyIDLen = 8

var (
	// ErrUnknownKey is returned by Open and StackPassphraseWith for a key id that names no
	// loaded key.
	ErrUnknownKey = errors.New("unknown secret key")
	// ErrDecrypt is returned by Open when the ciphertext does not authenticate: it was changed,
	// truncated, or sealed with other associated data.
	ErrDecrypt = errors.New("secret does not decrypt")
)

// Keyring holds the current master key, which seals new data, and older keys that still open
// data sealed before a rotation. It is safe for concurrent use. It keeps only HKDF pseudorandom
// keys and ciphers, never the master keys' text, and prints as a summary without key material.
type Keyring struct {
	current *key
	old     []*key // in the order given, for the summary
	byID    map[string]*key
	source  string
}

// key is one master key, reduced to what the purposes need.
type key struct {
	id   string
	prk  []byte      // HKDF-Extract of the master key; each purpose expands its own subkey
	aead cipher.AEAD // AES-256-GCM under the sealing subkey, random nonce prepended
}

func newKey(master []byte) (*key, error) {
	if len(master) != KeySize {
		return nil, fmt.Errorf("master key has %d bytes, want %d", len(master), KeySize)
	}
	// The master key is uniformly random, so HKDF's default all-zero salt is enough (RFC 5869
	// section 3.1).
	prk, err := hkdf.Extract(sha256.New, master, nil)
	if err != nil {
		return nil, fmt.Errorf("derive from master key: %w", err)
	}
	k := &key{prk: prk}
	k.id = hex.EncodeToString(k.expand(infoKeyID))[:keyIDLen]
	block, err := aes.NewCipher(k.expand(infoSeal))
	if err != nil {
		return nil, fmt.Errorf("create AES cipher: %w", err)
	}
	// The random-nonce GCM prepends its 12-byte nonce itself; with one key per deployment and
	// the 2^32-message bound far away, random nonces need no counter state across replicas.
	if k.aead, err = cipher.NewGCMWithRandomNonce(block); err != nil {
		return nil, fmt.Errorf("create AES-GCM: %w", err)
	}
	return k, nil
}

// expand derives a 32-byte subkey for one purpose.
func (k *key) expand(info string) []byte {
	out, err := hkdf.Expand(sha256.New, k.prk, info, KeySize)
	if err != nil {
		// Expand fails only for an output longer than 255 hash blocks; 32 bytes never is.
		panic("secrets: hkdf expand: " + err.Error())
	}
	return out
}

// CurrentKeyID is the id of the key that Seal uses and StackPassphrase derives from. Store it
// next to a new Pulumi stack, so its passphrase can be derived again after a rotation.
func (r *Keyring) CurrentKeyID() string { return r.current.id }

// Knows reports whether the keyring holds the key with this id, current or old: whether what
// was sealed under it can be opened.
func (r *Keyring) Knows(keyID string) bool {
	_, ok := r.byID[keyID]
	return ok
}

// Source says where the current key came from: the environment variable or the key file (and
// whether this Load generated it, in which case the operator should back it up).
func (r *Keyring) Source() string { return r.source }

// Seal encrypts plaintext under the current key and returns the key's id, to be stored beside
// the ciphertext. associatedData is authenticated but not encrypted: pass what identifies the
// record (table, row id, field), so a ciphertext copied onto another record fails to open.
// The ciphertext is nonce (12 bytes) || encrypted data || tag (16 bytes).
func (r *Keyring) Seal(plaintext, associatedData []byte) (keyID string, ciphertext []byte, err error) {
	// The random-nonce AEAD reads crypto/rand, which never fails on supported systems; the
	// error result stays so callers need not change if sealing ever can fail.
	return r.current.id, r.current.aead.Seal(nil, nil, plaintext, associatedData), nil
}

// Open decrypts a ciphertext from Seal with the key named by keyID, current or old, and checks
// that associatedData is what it was sealed with. It fails with ErrUnknownKey when that key is
// not loaded and with ErrDecrypt when anything was altered.
func (r *Keyring) Open(keyID string, ciphertext, associatedData []byte) ([]byte, error) {
	k, err := r.lookup(keyID)
	if err != nil {
		return nil, err
	}
	if len(ciphertext) < k.aead.Overhead() {
		return nil, fmt.Errorf("%w: ciphertext is %d bytes, shorter than the %d-byte nonce and tag",
			ErrDecrypt, len(ciphertext), k.aead.Overhead())
	}
	plaintext, err := k.aead.Open(nil, nil, ciphertext, associatedData)
	if err != nil {
		return nil, fmt.Errorf("%w with key %s: the ciphertext was altered or belongs to another record", ErrDecrypt, keyID)
	}
	return plaintext, nil
}

func (r *Keyring) lookup(keyID string) (*key, error) {
	if k, ok := r.byID[keyID]; ok {
		return k, nil
	}
	if !isKeyID(keyID) {
		return nil, fmt.Errorf("%w: %q is not a key id (%d hex digits)", ErrUnknownKey, keyID, keyIDLen)
	}
	return nil, fmt.Errorf("%w: encrypted with key %s, which is not loaded: set %s to the key it was "+
		"encrypted with (the current key is %s)", ErrUnknownKey, keyID, EnvOldKeys, r.current.id)
}

func isKeyID(s string) bool {
	if len(s) != keyIDLen {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

// StackPassphrase is the Pulumi config passphrase for a new stack, derived from the current
// key: the same key and stackID always give the same passphrase, and no two stacks share one.
// stackID must be the stack's stable, unique identity (such as its fully qualified name or the
// deployment's UUID); renaming it changes the passphrase. Hand the result to Pulumi through
// PULUMI_CONFIG_PASSPHRASE in the environment, never in process arguments.
//
// Rotation: Pulumi encrypts a stack's secrets under the passphrase it was created with, so a
// stack must keep the key it started with. Record CurrentKeyID when creating the stack and use
// StackPassphraseWith(thatID, stackID) afterwards; keep the old key in NIMBUS_SECRET_KEYS_OLD
// until every such stack has been moved to the new key (pulumi stack change-secrets-provider)
// and its recorded id updated.
func (r *Keyring) StackPassphrase(stackID string) string {
	return r.current.stackPassphrase(stackID)
}

// StackPassphraseWith derives the passphrase of a stack created under the key keyID, current
// or old. It fails with ErrUnknownKey when that key is not loaded.
func (r *Keyring) StackPassphraseWith(keyID, stackID string) (string, error) {
	k, err := r.lookup(keyID)
	if err != nil {
		return "", fmt.Errorf("stack %s passphrase: %w", stackID, err)
	}
	return k.stackPassphrase(stackID), nil
}

func (k *key) stackPassphrase(stackID string) string {
	// The stack id goes into HKDF's info, the context-binding input (RFC 5869 section 3.2),
	// after a NUL so the fixed prefix and the id can never run together.
	return base64.RawURLEncoding.EncodeToString(k.expand(infoStack + "\x00" + stackID))
}

// String summarises the keyring by key ids, never key material: a Keyring that reaches a log
// line or an error message by accident must not leak. The printing methods have value
// receivers so that a dereferenced Keyring prints the same way.
func (r Keyring) String() string {
	if r.current == nil {
		return "keyring(empty)"
	}
	return fmt.Sprintf("keyring(current=%s, old=%d)", r.current.id, len(r.old))
}

// GoString serves %#v, which would otherwise print the struct's fields.
func (r Keyring) GoString() string { return "secrets.Keyring{" + r.String() + "}" }

// Format covers every verb: without it, %d or %x on a Keyring value would walk its fields.
func (r Keyring) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		_, _ = io.WriteString(f, r.GoString())
		return
	}
	_, _ = fmt.Fprintf(f, fmt.FormatString(f, verb), r.String())
}

// LogValue logs the keyring as its key ids, so slog never reflects over its fields.
func (r Keyring) LogValue() slog.Value {
	if r.current == nil {
		return slog.StringValue("keyring(empty)")
	}
	oldIDs := make([]string, len(r.old))
	for i, k := range r.old {
		oldIDs[i] = k.id
	}
	return slog.GroupValue(
		slog.String("current", r.current.id),
		slog.Int("old", len(r.old)),
		slog.String("old_ids", strings.Join(oldIDs, ",")),
	)
}

// The value-receiver methods also serve *Keyring, the form callers hold.
var (
	_ fmt.Formatter  = Keyring{}
	_ fmt.GoStringer = Keyring{}
	_ slog.LogValuer = Keyring{}
)
