package localpg

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The cluster's socket is in a directory private to the server's account, but that account may
// be the one Nimbus runs as (the container image runs both as nimbus), and then everything
// Nimbus starts — the engine's processes among them — could open the socket. So no connection
// is trusted: the superuser has a generated password, checked with scram-sha-256, kept in a file
// in the cluster's directory that only Nimbus's account reads.

// passwordFile holds the superuser's password, mode 0600.
const passwordFile = "password"

// hbaConf is the whole of pg_hba.conf, written at every start so that no edit reopens trust.
const hbaConf = "# Written by Nimbus at every start of this cluster; changes here are lost.\nlocal all all scram-sha-256\n"

// loadPassword reads the cluster's password, making it first when there is none. Called under
// the start lock: every process sharing the cluster reads the same file.
func (s *Server) loadPassword() (string, error) {
	path := filepath.Join(s.dir, passwordFile)
	if b, err := os.ReadFile(path); err == nil {
		if p := strings.TrimSpace(string(b)); p != "" {
			return p, nil
		}
		return "", fmt.Errorf("the database password file %s is empty: remove it and the cluster, or put the password back", path)
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("read the database password: %w", err)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	password := base64.RawURLEncoding.EncodeToString(raw)
	tmp, err := os.CreateTemp(s.dir, ".password-*")
	if err != nil {
		return "", fmt.Errorf("write the database password: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.WriteString(password + "\n")
	if err := errors.Join(werr, tmp.Chmod(0o600), tmp.Close()); err != nil {
		return "", fmt.Errorf("write the database password: %w", err)
	}
	// Linked, not renamed: a file another process made meanwhile is never replaced.
	if err := os.Link(tmp.Name(), path); errors.Is(err, os.ErrExist) {
		return s.loadPassword()
	} else if err != nil {
		return "", fmt.Errorf("write the database password: %w", err)
	}
	return password, nil
}

// closeTrust makes the stopped cluster ask every connection for the password: the superuser's
// password is set (in single-user mode, which asks for none) unless pg_hba.conf is Nimbus's
// already, then pg_hba.conf is written. A start that stops between the two sets it again.
func (s *Server) closeTrust(ctx context.Context) error {
	hba := filepath.Join(s.pgdata, "pg_hba.conf")
	if b, err := os.ReadFile(hba); err == nil && string(b) == hbaConf {
		return nil
	}
	// The password reaches the server on its standard input, never on a command line, which
	// every user of the machine can read.
	cmd := s.command(ctx, "postgres", "--single", "-D", filepath.Base(s.pgdata), "postgres")
	cmd.Stdin = strings.NewReader("ALTER ROLE " + superuser + " PASSWORD '" + s.password + "';\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("set the database password: %v: %s", err, bytes.TrimSpace(bytes.ReplaceAll(out, []byte(s.password), []byte("…"))))
	}
	tmp := hba + ".tmp"
	if err := os.WriteFile(tmp, []byte(hbaConf), 0o600); err != nil {
		return fmt.Errorf("write pg_hba.conf: %w", err)
	}
	if err := s.chown(tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, hba); err != nil {
		return fmt.Errorf("write pg_hba.conf: %w", err)
	}
	s.log.Info("postgres asks every connection for its password now", "dir", s.pgdata)
	return nil
}

// pwfile writes the password where initdb, running as the server's account, reads it once;
// remove the file after.
func (s *Server) pwfile() (string, error) {
	f, err := os.CreateTemp(s.dir, ".initdb-password-*")
	if err != nil {
		return "", err
	}
	_, werr := f.WriteString(s.password + "\n")
	if err := errors.Join(werr, f.Close()); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	if err := s.chown(f.Name()); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}
