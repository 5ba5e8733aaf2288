package secrets

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// KeyFileName is the key file Load generates in the data directory when NIMBUS_SECRET_KEY is
// not set.
const KeyFileName = "secret.key"

// keyRule is the rule every key source must follow, stated in each error about one.
const keyRule = `the base64 encoding of exactly 32 random bytes (make one with "openssl rand -base64 32")`

// Load builds the keyring. The current key is NIMBUS_SECRET_KEY when set; otherwise it is the
// key file <dataDir>/secret.key, generated with mode 0600 on first use and refused when group
// or others may read it. NIMBUS_SECRET_KEYS_OLD, a comma-separated list of earlier keys, keeps
// data sealed before a rotation readable. getenv is os.Getenv outside tests.
func Load(dataDir string, getenv func(string) string) (*Keyring, error) {
	r := &Keyring{byID: map[string]*key{}}

	master, source, err := currentKey(dataDir, getenv)
	if err != nil {
		return nil, err
	}
	if r.current, err = newKey(master); err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	r.source = source
	r.byID[r.current.id] = r.current

	for i, text := range splitKeys(getenv(EnvOldKeys)) {
		b, err := decodeKey(text)
		if err != nil {
			return nil, fmt.Errorf("%s entry %d is not valid: each comma-separated entry must be %s; %v",
				EnvOldKeys, i+1, keyRule, err)
		}
		k, err := newKey(b)
		if err != nil {
			return nil, fmt.Errorf("%s entry %d: %w", EnvOldKeys, i+1, err)
		}
		if seen, ok := r.byID[k.id]; ok {
			if string(seen.prk) == string(k.prk) {
				// Leaving the current key in the old list during a rotation is harmless.
				continue
			}
			// Two different keys with one 32-bit id: vanishingly rare, but stored ids would
			// then be ambiguous, so refuse rather than guess.
			return nil, fmt.Errorf("%s entry %d has key id %s, the same as another loaded key: "+
				"generate a new key instead", EnvOldKeys, i+1, k.id)
		}
		r.byID[k.id] = k
		r.old = append(r.old, k)
	}
	return r, nil
}

// currentKey returns the current master key and a description of where it came from.
func currentKey(dataDir string, getenv func(string) string) ([]byte, string, error) {
	if text := strings.TrimSpace(getenv(EnvKey)); text != "" {
		b, err := decodeKey(text)
		if err != nil {
			return nil, "", fmt.Errorf("%s is not valid: it must be %s; %v", EnvKey, keyRule, err)
		}
		return b, EnvKey, nil
	}
	if dataDir == "" {
		return nil, "", fmt.Errorf("no master key: set %s to %s, or give a data directory to keep a generated key file in",
			EnvKey, keyRule)
	}
	path := filepath.Join(dataDir, KeyFileName)
	b, err := readKeyFile(path)
	if err == nil {
		return b, path, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, "", err
	}
	if err := createKeyFile(path); err != nil {
		return nil, "", err
	}
	// Read back rather than use the bytes just written: another server starting at the same
	// moment may have created the file first, and its key is the one that counts.
	if b, err = readKeyFile(path); err != nil {
		return nil, "", err
	}
	return b, path + " (generated: back it up, since secrets sealed under it are lost without it)", nil
}

// splitKeys splits a comma-separated key list, ignoring blanks so a trailing comma is harmless.
func splitKeys(s string) []string {
	var out []string
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// decodeKey accepts standard or URL-safe base64, padded or not, since operators paste keys
// from different tools. Its errors never repeat the input: it is, or was meant to be, a secret.
func decodeKey(text string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{
		base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding,
	} {
		b, err := enc.DecodeString(text)
		if err != nil {
			continue
		}
		if len(b) != KeySize {
			return nil, fmt.Errorf("got %d bytes", len(b))
		}
		return b, nil
	}
	return nil, errors.New("got text that is not base64")
}

// maxKeyFileSize bounds what readKeyFile reads; a valid key file is 45 bytes.
const maxKeyFileSize = 4096

// readKeyFile reads a key file, refusing one that group or others may access.
func readKeyFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open key file: %w", err)
	}
	defer f.Close()
	// Stat the open file, not the path, so the mode checked is the mode of what is read.
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat key file: %w", err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("key file %s is not a regular file", path)
	}
	// Windows has no Unix permission bits to check; access there is governed by ACLs.
	if perm := info.Mode().Perm(); perm&0o077 != 0 && runtime.GOOS != "windows" {
		return nil, fmt.Errorf("key file %s has mode %04o, which lets group or others read it: "+
			"run \"chmod 600 %s\" and start again", path, perm, path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxKeyFileSize))
	if err != nil {
		return nil, fmt.Errorf("read key file %s: %w", path, err)
	}
	b, err := decodeKey(strings.TrimSpace(string(data)))
	if err != nil {
		return nil, fmt.Errorf("key file %s is not valid: it must hold %s; %v. Restore it from a backup: "+
			"secrets sealed under the lost key cannot be read without it", path, keyRule, err)
	}
	return b, nil
}

// createKeyFile generates a new master key at path. The key is written to a temporary file
// (created with O_EXCL and mode 0600, so it is never readable by others, even briefly) and then
// hard-linked into place. A link, unlike a rename, fails when path already exists: two servers
// starting together cannot overwrite each other's key after one has begun sealing with it. When
// the link fails because the file exists, that file wins and createKeyFile returns nil.
func createKeyFile(path string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create data directory for the key file: %w", err)
	}
	master := make([]byte, KeySize)
	_, _ = rand.Read(master) // crypto/rand never returns an error; it crashes the program instead

	tmp, err := os.CreateTemp(dir, "."+KeyFileName+".tmp-*") // O_EXCL, mode 0600
	if err != nil {
		return fmt.Errorf("create key file: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the link the key lives on under path
	_, err = tmp.WriteString(base64.StdEncoding.EncodeToString(master) + "\n")
	if err == nil {
		// The key must be on disk before anything is sealed with it.
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write key file: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil
		}
		return fmt.Errorf("create key file %s: %w (or set %s instead)", path, err, EnvKey)
	}
	// Persist the new directory entry too, or a crash could lose the key that data is sealed with.
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}
