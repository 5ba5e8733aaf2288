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
	"os"
	"path/filepath"
	"strings"
	"sync"
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

func TestLoad_OldKeysListTolerance(t *testing.T) {
	cur, old := newMaster(t), newMaster(t)
	kr, err := secrets.Load("", env(map[string]string{
		secrets.EnvKey: b64(cur),
		// The current key left in the list, a duplicate, blanks and a trailing comma.
		secrets.EnvOldKeys: " " + b64(old) + " ,," + b64(cur) + "," + b64(old) + ",",
	}))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if want := fmt.Sprintf("keyring(current=%s, old=1)", kr.CurrentKeyID()); kr.String() != want {
		t.Errorf("String = %q, want %q", kr.String(), want)
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

func TestLoad_GeneratesKeyFile0600AndReusesIt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data") // not yet created: Load makes it
	first, err := secrets.Load(dir, env(nil))
	if err != nil {
		t.Fatalf("first Load: %v", err)
	}
	path := filepath.Join(dir, secrets.KeyFileName)
	info, err := os.Stat(path)
	if err != nil {
		t.Fatalf("key file not created: %v", err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Errorf("key file mode = %04o, want 0600", perm)
	}
	if !strings.Contains(first.Source(), "generated") {
		t.Errorf("Source = %q, want it to say the key was generated", first.Source())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("data dir holds %d entries, want only the key file (no temp files left)", len(entries))
	}

	id, ct, _ := first.Seal([]byte("survives a restart"), nil)
	second, err := secrets.Load(dir, env(nil))
	if err != nil {
		t.Fatalf("second Load: %v", err)
	}
	if second.CurrentKeyID() != first.CurrentKeyID() {
		t.Fatalf("second Load key %s, want the generated key %s", second.CurrentKeyID(), first.CurrentKeyID())
	}
	if strings.Contains(second.Source(), "generated") {
		t.Errorf("second Source = %q, want no claim of generating", second.Source())
	}
	if got, err := second.Open(id, ct, nil); err != nil || string(got) != "survives a restart" {
		t.Errorf("Open after restart = %q, %v", got, err)
	}

	// The file holds the same base64 text NIMBUS_SECRET_KEY takes, so an operator can move it there.
	text, _ := os.ReadFile(path)
	fromEnv := load(t, mustDecode(t, strings.TrimSpace(string(text))))
	if fromEnv.CurrentKeyID() != first.CurrentKeyID() {
		t.Error("key file text as NIMBUS_SECRET_KEY gives a different key")
	}
}

func mustDecode(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	return b
}

func TestLoad_ConcurrentFirstStartsAgreeOnOneKey(t *testing.T) {
	dir := t.TempDir()
	const n = 16
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			kr, err := secrets.Load(dir, env(nil))
			errs[i] = err
			if err == nil {
				ids[i] = kr.CurrentKeyID()
			}
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("Load %d: %v", i, errs[i])
		}
		if ids[i] != ids[0] {
			t.Fatalf("Load %d got key %s, Load 0 got %s: concurrent starts disagree", i, ids[i], ids[0])
		}
	}
}

func TestLoad_KeyFilePermissions(t *testing.T) {
	tests := []struct {
		mode    os.FileMode
		refused bool
	}{
		{0o600, false},
		{0o400, false},
		{0o644, true},
		{0o640, true},
		{0o604, true},
		{0o660, true},
		{0o606, true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%04o", tt.mode), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, secrets.KeyFileName)
			if err := os.WriteFile(path, []byte(b64(newMaster(t))+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, tt.mode); err != nil { // Chmod, unlike WriteFile, ignores the umask
				t.Fatal(err)
			}
			_, err := secrets.Load(dir, env(nil))
			if !tt.refused {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Load accepted a key file others can access")
			}
			for _, want := range []string{path, fmt.Sprintf("%04o", tt.mode), "chmod 600"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}

func TestLoad_EnvKeyTakesPrecedenceAndWritesNoFile(t *testing.T) {
	dir := t.TempDir()
	master := newMaster(t)
	kr, err := secrets.Load(dir, env(map[string]string{secrets.EnvKey: b64(master)}))
	if err != nil {
		t.Fatal(err)
	}
	if kr.CurrentKeyID() != load(t, master).CurrentKeyID() || kr.Source() != secrets.EnvKey {
		t.Errorf("key from %q, want the environment key", kr.Source())
	}
	if _, err := os.Stat(filepath.Join(dir, secrets.KeyFileName)); !os.IsNotExist(err) {
		t.Errorf("a key file was written although %s is set (stat err %v)", secrets.EnvKey, err)
	}
}

func TestLoad_AcceptsCommonBase64Forms(t *testing.T) {
	master := newMaster(t)
	want := load(t, master).CurrentKeyID()
	for name, text := range map[string]string{
		"padded std":        base64.StdEncoding.EncodeToString(master),
		"raw std":           base64.RawStdEncoding.EncodeToString(master),
		"url":               base64.URLEncoding.EncodeToString(master),
		"raw url":           base64.RawURLEncoding.EncodeToString(master),
		"surrounding space": "  " + base64.StdEncoding.EncodeToString(master) + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			kr, err := secrets.Load("", env(map[string]string{secrets.EnvKey: text}))
			if err != nil {
				t.Fatal(err)
			}
			if kr.CurrentKeyID() != want {
				t.Errorf("key id %s, want %s", kr.CurrentKeyID(), want)
			}
		})
	}
}

func TestLoad_RejectsMalformedKeys(t *testing.T) {
	good := b64(newMaster(t))
	short := b64(newMaster(t)[:16])
	long := b64(append(newMaster(t), 1))
	tests := []struct {
		name    string
		vars    map[string]string
		wantAll []string
	}{
		{"key not base64", map[string]string{secrets.EnvKey: "not base64 at all!"},
			[]string{"NIMBUS_SECRET_KEY", "32", "not base64"}},
		{"key too short", map[string]string{secrets.EnvKey: short},
			[]string{"NIMBUS_SECRET_KEY", "32", "got 16 bytes"}},
		{"key too long", map[string]string{secrets.EnvKey: long},
			[]string{"NIMBUS_SECRET_KEY", "32", "got 33 bytes"}},
		{"old key not base64", map[string]string{secrets.EnvKey: good, secrets.EnvOldKeys: good + ",%%%"},
			[]string{"NIMBUS_SECRET_KEYS_OLD", "entry 2", "32", "not base64"}},
		{"old key too short", map[string]string{secrets.EnvKey: good, secrets.EnvOldKeys: short},
			[]string{"NIMBUS_SECRET_KEYS_OLD", "entry 1", "32", "got 16 bytes"}},
		{"no key and no data dir", map[string]string{},
			[]string{"NIMBUS_SECRET_KEY", "data directory"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := secrets.Load("", env(tt.vars))
			if err == nil {
				t.Fatal("Load accepted a malformed key")
			}
			for _, want := range tt.wantAll {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
			// The value, even a wrong one, may be a secret: never echo it.
			for _, v := range tt.vars {
				for part := range strings.SplitSeq(v, ",") {
					if len(part) > 3 && strings.Contains(err.Error(), part) {
						t.Errorf("error %q repeats the configured value", err)
					}
				}
			}
		})
	}
}

func TestLoad_RejectsCorruptKeyFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, secrets.KeyFileName)
	if err := os.WriteFile(path, []byte("truncated\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := secrets.Load(dir, env(nil))
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "32") {
		t.Fatalf("err = %v, want it to name the file and the rule", err)
	}
	// A corrupt key file must never be replaced: the data sealed under it would be lost.
	if b, _ := os.ReadFile(path); string(b) != "truncated\n" {
		t.Error("Load replaced a corrupt key file")
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
