package secrets_test

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"nimbus/app/kernel/secrets"
)

// env is a getenv over a fixed map, so tests never see the process environment.
func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func newMaster(t testing.TB) []byte {
	t.Helper()
	b := make([]byte, secrets.KeySize)
	_, _ = rand.Read(b)
	return b
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// load builds a keyring from a current key and optional old keys, with no data directory.
func load(t testing.TB, current []byte, old ...[]byte) *secrets.Keyring {
	t.Helper()
	olds := make([]string, len(old))
	for i, k := range old {
		olds[i] = b64(k)
	}
	kr, err := secrets.Load("", env(map[string]string{
		secrets.EnvKey:     b64(current),
		secrets.EnvOldKeys: strings.Join(olds, ","),
	}))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return kr
}

func TestSealOpen_RoundTrip(t *testing.T) {
	kr := load(t, newMaster(t))
	big := make([]byte, 64<<10)
	_, _ = rand.Read(big)
	tests := []struct {
		name      string
		plaintext []byte
		ad        []byte
	}{
		{"empty secret", []byte{}, []byte("deployed_components/1/password")},
		{"text with associated data", []byte("hunter2"), []byte("deployed_components/1/password")},
		{"text without associated data", []byte("hunter2"), nil},
		{"binary 64 KiB", big, []byte("x")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, ct, err := kr.Seal(tt.plaintext, tt.ad)
			if err != nil {
				t.Fatalf("Seal: %v", err)
			}
			if id != kr.CurrentKeyID() {
				t.Errorf("Seal key id = %s, want current %s", id, kr.CurrentKeyID())
			}
			if len(tt.plaintext) > 4 && bytes.Contains(ct, tt.plaintext) {
				t.Error("ciphertext contains the plaintext")
			}
			if want := len(tt.plaintext) + 12 + 16; len(ct) != want {
				t.Errorf("ciphertext is %d bytes, want nonce+data+tag = %d", len(ct), want)
			}
			got, err := kr.Open(id, ct, tt.ad)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if !bytes.Equal(got, tt.plaintext) {
				t.Errorf("Open = %q, want %q", got, tt.plaintext)
			}
		})
	}
}

func TestSeal_SameSecretTwiceGivesDifferentCiphertexts(t *testing.T) {
	kr := load(t, newMaster(t))
	_, a, _ := kr.Seal([]byte("same"), nil)
	_, b, _ := kr.Seal([]byte("same"), nil)
	if bytes.Equal(a, b) || bytes.Equal(a[:12], b[:12]) {
		t.Error("two seals of one secret share a nonce or ciphertext")
	}
}

func TestOpen_RejectsOtherAssociatedData(t *testing.T) {
	kr := load(t, newMaster(t))
	tests := []struct {
		name         string
		sealAD, open []byte
	}{
		{"other row", []byte("deployed_components/1/password"), []byte("deployed_components/2/password")},
		{"other field", []byte("deployed_components/1/password"), []byte("deployed_components/1/token")},
		{"associated data dropped", []byte("deployed_components/1/password"), nil},
		{"associated data added", nil, []byte("deployed_components/1/password")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, ct, _ := kr.Seal([]byte("hunter2"), tt.sealAD)
			got, err := kr.Open(id, ct, tt.open)
			if !errors.Is(err, secrets.ErrDecrypt) {
				t.Fatalf("Open = %q, %v; want ErrDecrypt", got, err)
			}
			if got != nil {
				t.Errorf("Open returned %q alongside its error", got)
			}
		})
	}
}

func TestOpen_RejectsTamperedCiphertext(t *testing.T) {
	kr := load(t, newMaster(t))
	ad := []byte("row 7")
	id, ct, _ := kr.Seal([]byte("a secret worth stealing"), ad)
	flip := func(i int) []byte {
		c := bytes.Clone(ct)
		c[i] ^= 0x01
		return c
	}
	tests := []struct {
		name string
		ct   []byte
	}{
		{"nonce bit flipped", flip(0)},
		{"data bit flipped", flip(12)},
		{"tag bit flipped", flip(len(ct) - 1)},
		{"truncated tag", ct[:len(ct)-1]},
		{"byte appended", append(bytes.Clone(ct), 0)},
		{"shorter than nonce and tag", ct[:20]},
		{"empty", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, err := kr.Open(id, tt.ct, ad); !errors.Is(err, secrets.ErrDecrypt) {
				t.Fatalf("Open = %q, %v; want ErrDecrypt", got, err)
			}
		})
	}
}

func TestRotation_OldKeyStillOpensWhileNewDataUsesNewKey(t *testing.T) {
	oldMaster, newMasterKey := newMaster(t), newMaster(t)
	before := load(t, oldMaster)
	oldID, oldCT, _ := before.Seal([]byte("sealed before rotation"), []byte("ad"))

	after := load(t, newMasterKey, oldMaster)
	if after.CurrentKeyID() == oldID {
		t.Fatal("rotated keyring still reports the old key as current")
	}
	got, err := after.Open(oldID, oldCT, []byte("ad"))
	if err != nil || string(got) != "sealed before rotation" {
		t.Fatalf("Open old data after rotation = %q, %v", got, err)
	}
	newID, newCT, _ := after.Seal([]byte("sealed after rotation"), []byte("ad"))
	if newID != after.CurrentKeyID() || newID == oldID {
		t.Errorf("new data sealed with key %s, want the new key %s", newID, after.CurrentKeyID())
	}
	// The old keyring does not hold the new key, so it must not read new data.
	if _, err := before.Open(newID, newCT, []byte("ad")); !errors.Is(err, secrets.ErrUnknownKey) {
		t.Errorf("old keyring opening new data: err = %v, want ErrUnknownKey", err)
	}
	// Opening with the wrong (but loaded) key id is a decryption failure, not a silent success.
	if _, err := after.Open(newID, oldCT, []byte("ad")); !errors.Is(err, secrets.ErrDecrypt) {
		t.Errorf("old ciphertext under new key id: err = %v, want ErrDecrypt", err)
	}
}

func TestOpen_UnknownKeyIDSaysWhatToSet(t *testing.T) {
	oldMaster := newMaster(t)
	oldID, ct, _ := load(t, oldMaster).Seal([]byte("x"), nil)
	kr := load(t, newMaster(t)) // rotated, but the old key was not kept

	_, err := kr.Open(oldID, ct, nil)
	if !errors.Is(err, secrets.ErrUnknownKey) {
		t.Fatalf("err = %v, want ErrUnknownKey", err)
	}
	want := "encrypted with key " + oldID + ", which is not loaded: set NIMBUS_SECRET_KEYS_OLD"
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not contain %q", err, want)
	}

	_, err = kr.Open("not-an-id\n", ct, nil)
	if !errors.Is(err, secrets.ErrUnknownKey) || !strings.Contains(err.Error(), `"not-an-id\n"`) {
		t.Errorf("malformed id: err = %v, want ErrUnknownKey quoting the id", err)
	}
}

func TestStackPassphrase(t *testing.T) {
	keyA, keyB := newMaster(t), newMaster(t)
	a, a2, b := load(t, keyA), load(t, keyA), load(t, keyB)
	rotated := load(t, keyB, keyA)

	tests := []struct {
		name  string
		x, y  string
		equal bool
	}{
		{"same key and stack, same keyring", a.StackPassphrase("acme/net/prod"), a.StackPassphrase("acme/net/prod"), true},
		{"same key and stack, another Load", a.StackPassphrase("acme/net/prod"), a2.StackPassphrase("acme/net/prod"), true},
		{"other stack", a.StackPassphrase("acme/net/prod"), a.StackPassphrase("acme/net/dev"), false},
		{"stack id as a prefix", a.StackPassphrase("acme/net/prod"), a.StackPassphrase("acme/net/prod2"), false},
		{"other key", a.StackPassphrase("acme/net/prod"), b.StackPassphrase("acme/net/prod"), false},
		{"after rotation, new stacks use the new key", rotated.StackPassphrase("s"), b.StackPassphrase("s"), true},
		{"after rotation, old stacks keep theirs", must(rotated.StackPassphraseWith(a.CurrentKeyID(), "s")), a.StackPassphrase("s"), true},
		{"With current id equals StackPassphrase", must(a.StackPassphraseWith(a.CurrentKeyID(), "s")), a.StackPassphrase("s"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if (tt.x == tt.y) != tt.equal {
				t.Errorf("passphrases %q and %q: equal = %v, want %v", tt.x, tt.y, tt.x == tt.y, tt.equal)
			}
		})
	}

	p := a.StackPassphrase("acme/net/prod")
	if len(p) != 43 || strings.ContainsAny(p, "+/=") {
		t.Errorf("passphrase %q: want 43 characters of unpadded base64url (256 bits)", p)
	}
	if _, err := b.StackPassphraseWith(a.CurrentKeyID(), "s"); !errors.Is(err, secrets.ErrUnknownKey) ||
		!strings.Contains(err.Error(), "NIMBUS_SECRET_KEYS_OLD") {
		t.Errorf("StackPassphraseWith(unloaded key) err = %v, want ErrUnknownKey naming NIMBUS_SECRET_KEYS_OLD", err)
	}
}

func must(s string, err error) string {
	if err != nil {
		panic(err)
	}
	return s
}

// TestDerivations_AreStable pins the derivation scheme. Stored key ids, stored ciphertexts and
// the passphrases of existing Pulumi stacks all depend on it: if this test fails, the change
// breaks every installation's data and needs a new versioned info string instead.
func TestDerivations_AreStable(t *testing.T) {
	master := bytes.Repeat([]byte{0x42}, secrets.KeySize)
	kr := load(t, master)

	if got, want := kr.CurrentKeyID(), goldenKeyID; got != want {
		t.Errorf("key id = %s, want %s", got, want)
	}
	if got, want := kr.StackPassphrase("acme/network/prod"), goldenPassphrase; got != want {
		t.Errorf("stack passphrase = %s, want %s", got, want)
	}
	ct, _ := hex.DecodeString(goldenCiphertext)
	if got, err := kr.Open(goldenKeyID, ct, []byte("golden-ad")); err != nil || string(got) != "golden secret" {
		t.Errorf("Open golden ciphertext = %q, %v", got, err)
	}

	// The sealing key is the HKDF-SHA256 subkey with info nimbus/secrets/v1, not the master key.
	_, fresh, _ := kr.Seal([]byte("which key?"), []byte("ad"))
	openWith := func(k []byte) error {
		block, _ := aes.NewCipher(k)
		gcm, _ := cipher.NewGCM(block)
		_, err := gcm.Open(nil, fresh[:12], fresh[12:], []byte("ad"))
		return err
	}
	sub, _ := hkdf.Key(sha256.New, master, nil, "nimbus/secrets/v1", 32)
	if err := openWith(sub); err != nil {
		t.Errorf("ciphertext does not open with the HKDF subkey: %v", err)
	}
	if err := openWith(master); err == nil {
		t.Error("ciphertext opens with the master key itself")
	}
	pass, _ := hkdf.Key(sha256.New, master, nil, "nimbus/pulumi-stack/v1\x00acme/network/prod", 32)
	if want := base64.RawURLEncoding.EncodeToString(pass); kr.StackPassphrase("acme/network/prod") != want {
		t.Error("stack passphrase is not HKDF-SHA256 with info nimbus/pulumi-stack/v1 + NUL + stack id")
	}
}

// Golden values for the all-0x42 master key, cross-checked against an independent HKDF and
// AES-GCM implementation (Python's hmac and cryptography packages) when they were recorded.
const (
	goldenKeyID      = "c7ba68ac"
	goldenPassphrase = "2a3dh1oeDnhjD2Se_WT7lCciM1SQ_J8Q0XJNU-qW6t0"
	goldenCiphertext = "da4ad121f7d879f3bf726adca724fead20ea12bef7656355df19f9ff7f66ca3b1a3aa78bc66dc05515"
)

func TestKeyring_NeverPrintsKeyMaterial(t *testing.T) {
	cur, old := newMaster(t), newMaster(t)
	kr := load(t, cur, old)

	var forbidden []string
	for _, k := range [][]byte{cur, old} {
		sub, _ := hkdf.Key(sha256.New, k, nil, "nimbus/secrets/v1", 32)
		prk, _ := hkdf.Extract(sha256.New, k, nil)
		for _, b := range [][]byte{k, sub, prk} {
			forbidden = append(forbidden,
				base64.StdEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b),
				hex.EncodeToString(b), strings.ToUpper(hex.EncodeToString(b)),
				// A decimal byte run, as %v or %d of a []byte would print it.
				strings.Trim(fmt.Sprint(b[:6]), "[]"))
		}
	}

	var text, js bytes.Buffer
	slog.New(slog.NewTextHandler(&text, nil)).Info("loaded", "keyring", kr, "value", *kr)
	slog.New(slog.NewJSONHandler(&js, nil)).Info("loaded", "keyring", kr, "value", *kr)
	outputs := map[string]string{
		"%v %+v %#v (pointer)": fmt.Sprintf("%v %+v %#v", kr, kr, kr),
		"%v %+v %#v (value)":   fmt.Sprintf("%v %+v %#v", *kr, *kr, *kr),
		"%s %q %x %X %d":       fmt.Sprintf("%s %q %x %X %d", *kr, *kr, *kr, *kr, *kr),
		"inside a struct":      fmt.Sprintf("%+v %#v", struct{ K *secrets.Keyring }{kr}, struct{ K secrets.Keyring }{*kr}),
		"slog text":            text.String(),
		"slog json":            js.String(),
	}
	for name, out := range outputs {
		t.Run(name, func(t *testing.T) {
			for _, f := range forbidden {
				if strings.Contains(out, f) {
					t.Fatalf("output %q contains key material %q", out, f)
				}
			}
			if !strings.Contains(out, kr.CurrentKeyID()) {
				t.Errorf("output %q does not name the current key id", out)
			}
		})
	}
	if want := fmt.Sprintf("keyring(current=%s, old=1)", kr.CurrentKeyID()); fmt.Sprint(kr) != want {
		t.Errorf("fmt.Sprint = %q, want %q", fmt.Sprint(kr), want)
	}
	t.Logf("%v | %#v | %s", kr, kr, strings.TrimSpace(text.String()))
}

func benchmarkKeyring(b *testing.B) (*secrets.Keyring, []byte, []byte) {
	kr := load(b, newMaster(b))
	secret := make([]byte, 1024)
	_, _ = rand.Read(secret)
	return kr, secret, []byte("deployed_components/0190a1b2-c3d4/parameters/db_password")
}

func BenchmarkSeal(b *testing.B) {
	kr, secret, ad := benchmarkKeyring(b)
	b.SetBytes(int64(len(secret)))
	for b.Loop() {
		if _, _, err := kr.Seal(secret, ad); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOpen(b *testing.B) {
	kr, secret, ad := benchmarkKeyring(b)
	id, ct, _ := kr.Seal(secret, ad)
	b.SetBytes(int64(len(secret)))
	for b.Loop() {
		if _, err := kr.Open(id, ct, ad); err != nil {
			b.Fatal(err)
		}
	}
}
