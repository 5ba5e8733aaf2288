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
	"unicode"
)

// The cluster's socket is in a directory private to the server's account, but that account may
// be the one Nimbus runs as (the container image runs both as nimbus), and then everything
// Nimbus starts — the engine's processes among them — could open the socket. So no connection
// is trusted: the superuser has a generated password, checked with scram-sha-256, kept in a file
// in the cluster's directory that only Nimbus's account reads. The password travels only in
// files of mode 0600 and on a pipe, never on a command line or in an environment, which other
// users of the machine can read.

// passwordFile holds the superuser's password, mode 0600, owned by the account Nimbus runs as.
const passwordFile = "password"

// Temporary files that hold the password for a moment; a crash may leave them behind.
const (
	passwordTemp = ".password-*"
	initdbTemp   = ".initdb-password-*"
)

// hbaConf is the whole of pg_hba.conf, written at every start so that no edit reopens trust.
const hbaConf = "# Written by Nimbus at every start of this cluster; changes here are lost.\nlocal all all scram-sha-256\n"

// loadPassword reads the cluster's password into s.password, making it first when there is
// none. Called under the start lock, so every process sharing the cluster reads the same file.
// A password made for a cluster that exists already must be set in it before its server
// starts (s.resetPassword): the file was lost, or an earlier version made the cluster.
func (s *Server) loadPassword() error {
	if err := s.removePasswordLeftovers(); err != nil {
		return err
	}
	path := filepath.Join(s.dir, passwordFile)
	b, err := os.ReadFile(path)
	if err == nil {
		p := strings.TrimSpace(string(b))
		if p == "" || strings.IndexFunc(p, unicode.IsControl) >= 0 {
			return fmt.Errorf("the database password file %s must hold one line of text: write the password back, or remove the file for Nimbus to set a new one", path)
		}
		s.password = p
		return nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("read the database password: %w", err)
	}

	_, err = os.Stat(filepath.Join(s.pgdata, "PG_VERSION"))
	exists := err == nil
	// A running server that asks for a password was started with the file that is gone; a new
	// one could only be set by stopping it. (One that still trusts, started by an earlier
	// version, is refused by every client until its next start, which sets the new password.)
	if exists && s.running() && s.hbaIsOurs() {
		return fmt.Errorf("the database password file %s is missing while its server runs: stop every Nimbus process using %s, and the next start sets a new password", path, s.dir)
	}

	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return fmt.Errorf("make the database password: %w", err)
	}
	password := base64.RawURLEncoding.EncodeToString(raw)
	// Written whole into a temporary file (CreateTemp makes it 0600), then linked into place:
	// a link, unlike a rename, never replaces a file another process made meanwhile, and no
	// process ever reads a half-written password.
	tmp, err := os.CreateTemp(s.dir, passwordTemp)
	if err != nil {
		return fmt.Errorf("write the database password: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.WriteString(password + "\n")
	if err := errors.Join(werr, tmp.Sync(), tmp.Close()); err != nil {
		return fmt.Errorf("write the database password: %w", err)
	}
	if err := os.Link(tmp.Name(), path); errors.Is(err, os.ErrExist) {
		return s.loadPassword()
	} else if err != nil {
		return fmt.Errorf("write the database password: %w", err)
	}
	s.password = password
	s.resetPassword = exists
	if exists && s.hbaIsOurs() {
		s.log.Warn("the database password file was missing; a new password is set before the server starts", "path", path)
	}
	return nil
}

// removePasswordLeftovers deletes the temporary password files a crash left behind. Every
// such file is made and removed under the start lock, so none is in use now.
func (s *Server) removePasswordLeftovers() error {
	for _, pattern := range []string{passwordTemp, initdbTemp} {
		found, err := filepath.Glob(filepath.Join(s.dir, pattern))
		if err != nil {
			return err
		}
		for _, f := range found {
			if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("remove a leftover password file: %w", err)
			}
		}
	}
	return nil
}

// hbaIsOurs reports whether pg_hba.conf is the one Nimbus writes.
func (s *Server) hbaIsOurs() bool {
	b, err := os.ReadFile(filepath.Join(s.pgdata, "pg_hba.conf"))
	return err == nil && string(b) == hbaConf
}

// closeTrust makes the stopped cluster ask every connection for the password. Unless
// pg_hba.conf is Nimbus's already and the password file was there, the superuser's password is
// set first (in single-user mode, which asks for none), then pg_hba.conf is written: a start
// that stops between the two sets the password again, so a crash never leaves a cluster that
// asks for a password it was not given.
func (s *Server) closeTrust(ctx context.Context) error {
	if s.hbaIsOurs() && !s.resetPassword {
		return nil
	}
	// The password reaches the server on its standard input, never on a command line, which
	// every user of the machine can read. Single-user mode runs each line as a statement. The
	// hash is scram-sha-256 whatever a setting says, since pg_hba.conf asks for that.
	cmd := s.command(ctx, "postgres", "--single", "-D", filepath.Base(s.pgdata), "postgres")
	cmd.Stdin = strings.NewReader("SET password_encryption = 'scram-sha-256'\nALTER ROLE " + superuser + " PASSWORD " + sqlLiteral(s.password) + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("set the database password: %v: %s", err, bytes.TrimSpace(bytes.ReplaceAll(out, []byte(s.password), []byte("…"))))
	}
	s.resetPassword = false
	hba := filepath.Join(s.pgdata, "pg_hba.conf")
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

// sqlLiteral quotes a string for SQL; standard_conforming_strings is on, so only quotes need
// doubling.
func sqlLiteral(v string) string {
	return "'" + strings.ReplaceAll(v, "'", "''") + "'"
}

// pwfile writes the password where initdb, running as the server's account, reads it once;
// remove the file after.
func (s *Server) pwfile() (string, error) {
	f, err := os.CreateTemp(s.dir, initdbTemp)
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
