package pulumix

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// Where Nimbus runs as root, the engine does not: every engine process runs as an unprivileged
// account of its own, which owns its stacks' directories and nothing else of Nimbus's. The
// Landlock sandbox already keeps it to those directories; the account also keeps it out of
// whatever the machine guards by owner, such as the embedded database's socket (its directory
// belongs to the postgres account), and puts it under the process limits root is spared.

// DefaultAccount is the account engine processes run as when Nimbus runs as root.
const DefaultAccount = "nimbus-engine"

// WithAccount names the account engine processes run as when Nimbus runs as root; "" keeps
// DefaultAccount. Running as any other user, Nimbus runs the engine as itself.
func WithAccount(name string) Option { return func(r *Runner) { r.accountName = name } }

// WithLog gives the Runner a logger for what it changes on the machine to set up.
func WithLog(l *slog.Logger) Option { return func(r *Runner) { r.log = l } }

// engineAccount is the account to run engine processes as: nil unless Nimbus runs as root.
// The account must be dedicated to the engine: a shared one such as nobody would let every
// process running as it reach the engine's stacks, and the postgres account owns the database.
func engineAccount(name string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	if name == "" {
		name = DefaultAccount
	}
	u, err := user.Lookup(name)
	if errors.As(err, new(user.UnknownUserError)) {
		return nil, fmt.Errorf("Nimbus runs as root and runs the engine as an unprivileged account, but there is no %q account: create it (useradd --system --no-create-home --shell /usr/sbin/nologin %s), name another with NIMBUS_ENGINE_USER, or run Nimbus as a normal user", name, name)
	}
	if err != nil {
		return nil, fmt.Errorf("look up the engine's account %q: %w", name, err)
	}
	switch u.Username {
	case "root", "nobody", "postgres":
		return nil, fmt.Errorf("the engine will not run as %q: give it an account of its own (useradd --system %s)", u.Username, DefaultAccount)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil || uid == 0 {
		return nil, fmt.Errorf("the engine's account %q: uid %q is not an unprivileged one", name, u.Uid)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err == nil && gid == 0 {
		err = errors.New("it is root's group")
	}
	if err != nil {
		return nil, fmt.Errorf("the engine's account %q: gid %q: %w", name, u.Gid, err)
	}
	// No supplementary groups: whatever root belongs to, the engine does not.
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}

// own hands the trees at paths to the engine's account, where it has one: what Nimbus wrote
// there for the engine (its program, settings, plans, event pipe) and what another process
// wrote into a cloud. Entries it owns already are left alone; missing paths are skipped.
func (r *Runner) own(paths ...string) error {
	a := r.cli.sandbox.Account
	if a == nil {
		return nil
	}
	for _, root := range paths {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed meanwhile, by an engine writing there
			}
			if err != nil {
				return err
			}
			info, err := d.Info()
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			} else if err != nil {
				return err
			}
			if st, ok := info.Sys().(*syscall.Stat_t); ok && st.Uid == a.Uid && st.Gid == a.Gid {
				return nil
			}
			if err := os.Lchown(p, int(a.Uid), int(a.Gid)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("hand %s to the engine's account: %w", root, err)
		}
	}
	return nil
}

// reachable lets the engine's account pass through every directory above paths (and into
// paths themselves), which a home directory often does not allow: it sets the search bit for
// others, never the right to list or read. It says which directories it changed.
func (r *Runner) reachable(paths ...string) error {
	if r.cli.sandbox.Account == nil {
		return nil
	}
	seen := map[string]bool{}
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return err
		}
		for d := abs; !seen[d]; d = filepath.Dir(d) {
			seen[d] = true
			info, err := os.Stat(d)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			} else if err != nil {
				return err
			}
			if info.IsDir() && info.Mode().Perm()&0o001 == 0 {
				if err := os.Chmod(d, info.Mode().Perm()|0o001); err != nil {
					return fmt.Errorf("let the engine's account reach %s: %w", abs, err)
				}
				r.log.Warn("made a directory searchable by all users (chmod o+x) so that the engine's account reaches what it runs and writes; to avoid this, keep the data directory and the toolchain outside home directories",
					"dir", d)
			}
			if d == filepath.Dir(d) {
				break
			}
		}
	}
	return nil
}
