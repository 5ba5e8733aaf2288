// Package gitremote reads programs from git repositories: which branches and tags a remote
// has, and the files of one folder at one commit.
//
// It runs the system's git binary rather than a library such as go-git, for the bounds a
// repository given by a user needs:
//
//   - Only what is asked for is fetched. A shallow partial clone (depth 1, no blobs) brings one
//     commit's trees; git then fetches just the blobs of the files read, so a large repository
//     costs its tree listing, not its history or its other folders. go-git fetches whole packs.
//   - Size and time are bounded from outside the process: the clone's folder is measured while
//     git runs, and git (with its remote helper, in their own process group) is killed past
//     the limit or the deadline. A library inside Nimbus could only be bounded where it
//     chooses to read.
//   - Credentials reach git in its environment, as an HTTP header set by GIT_CONFIG_*: never
//     in its arguments (which every user of the machine can list), never in a file. The
//     environment is built from nothing, so Nimbus's own (its master key) never reaches git.
//   - Nothing of the repository runs: the clone is bare (no checkout, no filters or
//     attributes applied), hooks point nowhere, no template is copied, the system's and the
//     user's settings are not read, only https (and http where allowed, for tests) may be
//     spoken, so a URL cannot name ext:: or file:: transports, and redirects are not followed,
//     so the credentials go to the host the link names alone.
//   - Only addresses the tenant may reach are spoken to (Fetcher.Reach, as for event
//     subscriptions): Nimbus resolves the host, checks every address, and holds git to them
//     (http.curloptResolve), so a second resolution cannot move a fetch inside the network.
//
// ssh remotes are not supported yet.
package gitremote

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"nimbus/app/kernel/egress"
)

// Remote is a repository and what signs in to it. User may be empty: forges take any name
// with a token as the password.
type Remote struct {
	URL   string
	User  string
	Token string
}

// Fetcher reads remotes within bounds.
type Fetcher struct {
	// MaxBytes bounds what one read may bring onto the disk.
	MaxBytes int64
	// Timeout bounds one git command.
	Timeout time.Duration
	// AllowHTTP lets remotes be spoken to over plain http: for tests only.
	AllowHTTP bool
	// Reach says which addresses a remote may be at.
	Reach egress.Policy
}

// Defaults for a Fetcher's zero fields.
const (
	DefaultMaxBytes = 64 << 20
	DefaultTimeout  = 2 * time.Minute
)

// The ways a read fails that the user can fix; anything else is trouble on this server.
var (
	ErrUnreachable = errors.New("the repository cannot be reached")
	ErrDenied      = errors.New("the repository refused the credentials")
	ErrNoRef       = errors.New("no such branch or tag")
	ErrTooLarge    = errors.New("the repository is larger than this server reads")
	ErrTimeout     = errors.New("the repository took too long to answer")
	ErrNotAllowed  = errors.New("the repository's address is not allowed")
)

// CheckURL says what is wrong with a remote's URL, or nil: it must be https (or http, where
// allowed) with a host, and carry no credentials of its own.
func (f Fetcher) CheckURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Host == "" || u.Opaque != "":
		return errors.New("must be a URL such as https://git.example.com/team/infra.git")
	case u.Scheme != "https" && !(f.AllowHTTP && u.Scheme == "http"):
		return errors.New("must be an https URL; ssh is not supported yet")
	case u.User != nil:
		return errors.New("must not carry a user or password: give the token as the credentials")
	case u.RawQuery != "" || u.Fragment != "":
		return errors.New("must not have a query or a fragment")
	}
	if err := f.Reach.CheckHost(u.Hostname()); err != nil {
		return fmt.Errorf("must not name an address this server may not reach: %w", err)
	}
	return nil
}

// pin resolves the remote's host, checks every address it has, and returns the
// http.curloptResolve entry that holds git to them.
func (f Fetcher) pin(ctx context.Context, raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80"}[u.Scheme]
		if port == "" {
			port = "443"
		}
	}
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", u.Hostname())
	if err != nil || len(addrs) == 0 {
		return "", fmt.Errorf("%w: %s has no address", ErrUnreachable, u.Hostname())
	}
	held := make([]string, len(addrs))
	for i, a := range addrs {
		a = a.Unmap()
		var refused *egress.Refused
		if err := f.Reach.Check(a); errors.As(err, &refused) {
			return "", fmt.Errorf("%w: %s", ErrNotAllowed, egress.NotAllowed(refused))
		} else if err != nil {
			return "", err
		}
		held[i] = a.String()
		if a.Is6() {
			held[i] = "[" + held[i] + "]"
		}
	}
	return u.Hostname() + ":" + port + ":" + strings.Join(held, ","), nil
}

// Tag is a tag of a remote: the object its ref names (the tag object for an annotated tag)
// and the commit it leads to.
type Tag struct {
	Object, Commit string
}

// Refs are a remote's branches and tags: name → commit, name → tag.
type Refs struct {
	Branches map[string]string
	Tags     map[string]Tag
}

// List asks the remote for its branches and tags.
func (f Fetcher) List(ctx context.Context, r Remote) (Refs, error) {
	if err := f.CheckURL(r.URL); err != nil {
		return Refs{}, err
	}
	dir, err := os.MkdirTemp("", "nimbus-git-")
	if err != nil {
		return Refs{}, err
	}
	defer os.RemoveAll(dir)
	out, err := f.git(ctx, r, dir, "", "ls-remote", "--heads", "--tags", "--", r.URL)
	if err != nil {
		return Refs{}, err
	}
	refs := Refs{Branches: map[string]string{}, Tags: map[string]Tag{}}
	for line := range strings.Lines(out) {
		oid, ref, ok := strings.Cut(strings.TrimSpace(line), "\t")
		if !ok {
			continue
		}
		if name, ok := strings.CutPrefix(ref, "refs/heads/"); ok {
			refs.Branches[name] = oid
		} else if name, ok := strings.CutPrefix(ref, "refs/tags/"); ok {
			// An annotated tag is listed twice: its object, then the commit it peels to.
			if name, peeled := strings.CutSuffix(name, "^{}"); peeled {
				t := refs.Tags[name]
				t.Commit = oid
				refs.Tags[name] = t
				continue
			}
			t := refs.Tags[name]
			t.Object = oid
			if t.Commit == "" {
				t.Commit = oid
			}
			refs.Tags[name] = t
		}
	}
	return refs, nil
}

// Snapshot is what Read found: the commit, and the files asked for that exist.
type Snapshot struct {
	Commit  string
	Author  string
	Message string
	// TagMessage is the annotated tag's message, when a tag was read.
	TagMessage string
	Files      map[string][]byte
}

// Read fetches ref (a branch, or a tag with tag set) and reads the named files of folder dir
// at its commit. A file that does not exist is left out of Files.
func (f Fetcher) Read(ctx context.Context, r Remote, ref string, tag bool, dir string, files []string) (Snapshot, error) {
	if err := f.CheckURL(r.URL); err != nil {
		return Snapshot{}, err
	}
	work, err := os.MkdirTemp("", "nimbus-git-")
	if err != nil {
		return Snapshot{}, err
	}
	defer os.RemoveAll(work)
	repo := filepath.Join(work, "repo")
	if _, err := f.git(ctx, r, work, repo, "clone", "--quiet", "--bare", "--template=", "--depth=1", "--filter=blob:none",
		"--single-branch", "--no-tags", "--branch", ref, "--", r.URL, repo); err != nil {
		return Snapshot{}, err
	}
	rev := "HEAD"
	snap := Snapshot{Files: map[string][]byte{}}
	if tag {
		// --no-tags keeps the clone to the one ref; the tag itself is fetched beside it.
		if _, err := f.git(ctx, r, work, repo, "--git-dir="+repo, "fetch", "--quiet", "--depth=1", "--filter=blob:none", "origin",
			"+refs/tags/"+ref+":refs/tags/"+ref); err != nil {
			return Snapshot{}, err
		}
		rev = "refs/tags/" + ref
		if kind, err := f.git(ctx, r, work, repo, "--git-dir="+repo, "cat-file", "-t", rev); err == nil && strings.TrimSpace(kind) == "tag" {
			body, err := f.git(ctx, r, work, repo, "--git-dir="+repo, "cat-file", "tag", rev)
			if err != nil {
				return Snapshot{}, err
			}
			if _, msg, ok := strings.Cut(body, "\n\n"); ok {
				snap.TagMessage = strings.TrimSpace(msg)
			}
		}
	}
	info, err := f.git(ctx, r, work, repo, "--git-dir="+repo, "log", "-1", "--no-show-signature", "--format=%H%x00%an <%ae>%x00%B", rev+"^{commit}")
	if err != nil {
		return Snapshot{}, err
	}
	parts := strings.SplitN(info, "\x00", 3)
	if len(parts) != 3 {
		return Snapshot{}, fmt.Errorf("read commit of %s: unexpected %q", ref, info)
	}
	snap.Commit, snap.Author, snap.Message = parts[0], parts[1], strings.TrimSpace(parts[2])
	for _, name := range files {
		p := path.Join(dir, name)
		// The trees are here already; only a blob that exists is fetched.
		listed, err := f.git(ctx, r, work, repo, "--git-dir="+repo, "ls-tree", "--name-only", snap.Commit, "--", p)
		if err != nil {
			return Snapshot{}, err
		}
		if strings.TrimSpace(listed) != p {
			continue
		}
		body, err := f.git(ctx, r, work, repo, "--git-dir="+repo, "cat-file", "blob", snap.Commit+":"+p)
		if err != nil {
			return Snapshot{}, err
		}
		snap.Files[name] = []byte(body)
	}
	return snap, nil
}

// git runs git in dir with a clean environment, the remote's credentials and the bounds, and
// returns what it printed. watch is the folder whose size is bounded ("" for none).
func (f Fetcher) git(ctx context.Context, r Remote, dir, watch string, args ...string) (string, error) {
	timeout := f.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	limit := f.MaxBytes
	if limit <= 0 {
		limit = DefaultMaxBytes
	}
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, ErrTimeout)
	defer cancel()
	// Every command may reach the remote: a partial clone fetches a blob when it is read.
	pinned, err := f.pin(ctx, r.URL)
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = f.env(r, dir, pinned)
	// git starts its remote helper as a child; the whole group ends with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	stdout := &capped{max: limit}
	var stderr capped
	stderr.max = 8 << 10
	cmd.Stdout, cmd.Stderr = stdout, &stderr
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("start git: %w", err)
	}
	tooLarge := make(chan struct{})
	done := make(chan struct{})
	if watch != "" {
		go func() {
			t := time.NewTicker(50 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case <-t.C:
					if size(watch) > limit {
						close(tooLarge)
						cancel()
						return
					}
				}
			}
		}()
	}
	err = cmd.Wait()
	close(done)
	select {
	case <-tooLarge:
		return "", ErrTooLarge
	default:
	}
	if stdout.over {
		return "", ErrTooLarge
	}
	if err != nil {
		if errors.Is(context.Cause(ctx), ErrTimeout) {
			return "", ErrTimeout
		}
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", classify(stderr.String())
	}
	return stdout.String(), nil
}

// classify turns what git said on failing into one of the errors a user can act on.
func classify(said string) error {
	low := strings.ToLower(said)
	switch {
	case strings.Contains(low, "authentication failed"), strings.Contains(low, "401"), strings.Contains(low, "403"),
		strings.Contains(low, "could not read username"), strings.Contains(low, "could not read password"):
		return ErrDenied
	case strings.Contains(low, "not found in upstream"), strings.Contains(low, "couldn't find remote ref"),
		strings.Contains(low, "remote branch") && strings.Contains(low, "not found"):
		return ErrNoRef
	case strings.Contains(low, "could not resolve host"), strings.Contains(low, "failed to connect"), strings.Contains(low, "connection refused"),
		strings.Contains(low, "not found"), strings.Contains(low, "unable to access"), strings.Contains(low, "does not appear to be a git repository"):
		return ErrUnreachable
	}
	return fmt.Errorf("git: %s", strings.TrimSpace(said))
}

// env is git's whole environment: nothing of Nimbus's own but where programs and
// certificates are and how to reach the network.
func (f Fetcher) env(r Remote, home, pinned string) []string {
	protocols := "https"
	if f.AllowHTTP {
		protocols = "https:http"
	}
	env := []string{
		"HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0",
		"GIT_ALLOW_PROTOCOL=" + protocols, "GIT_PROTOCOL_FROM_USER=0", "GIT_NO_REPLACE_OBJECTS=1", "LC_ALL=C",
	}
	for _, name := range []string{"PATH", "SSL_CERT_FILE", "SSL_CERT_DIR", "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"} {
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		}
	}
	config := [][2]string{
		{"core.hooksPath", "/dev/null"},
		{"core.askPass", "/bin/false"},
		{"credential.helper", ""},
		{"http.followRedirects", "false"},
		{"http.lowSpeedLimit", "1024"},
		{"http.lowSpeedTime", "30"},
		{"protocol.version", "2"},
		{"fetch.recurseSubmodules", "false"},
		{"http.curloptResolve", pinned},
	}
	if r.Token != "" {
		user := r.User
		if user == "" {
			user = "nimbus"
		}
		config = append(config, [2]string{"http.extraHeader", "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+r.Token))})
	}
	env = append(env, fmt.Sprintf("GIT_CONFIG_COUNT=%d", len(config)))
	for i, kv := range config {
		env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", i, kv[0]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", i, kv[1]))
	}
	return env
}

// size is how many bytes the files under dir hold.
func size(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// capped keeps at most max bytes of what is written to it, and notes that more came.
type capped struct {
	bytes.Buffer
	max  int64
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	n := len(p)
	if room := c.max - int64(c.Len()); int64(len(p)) > room {
		c.over = true
		p = p[:max(0, room)]
	}
	c.Buffer.Write(p)
	return n, nil
}
