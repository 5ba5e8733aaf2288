package secrets_test

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"nimbus/app/kernel/secrets"
)

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
