package apptest

import (
	"crypto/subtle"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// GitServer is a git server for tests: the system's git http-backend, run as CGI behind basic
// auth, serving bare repositories the test makes and pushes to with the real git.
type GitServer struct {
	// URL is the server's root; a repository is at URL/<name>.git.
	URL            string
	User, Password string
	root           string
}

// StartGitServer starts a git server on a free port for the test, stopped when it ends.
func StartGitServer(t testing.TB) *GitServer {
	t.Helper()
	exe, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatalf("git is not installed: %v", err)
	}
	g := &GitServer{User: "nimbus", Password: "s3cret-" + t.Name(), root: t.TempDir()}
	backend := &cgi.Handler{
		Path: filepath.Join(strings.TrimSpace(string(exe)), "git-http-backend"),
		Env:  []string{"GIT_PROJECT_ROOT=" + g.root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "HOME=" + g.root},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, ok := r.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(user), []byte(g.User)) != 1 || subtle.ConstantTimeCompare([]byte(pass), []byte(g.Password)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "sign in", http.StatusUnauthorized)
			return
		}
		// http-backend lets a signed-in user push (receive-pack) when REMOTE_USER is set;
		// the CGI handler sets it from the request's basic auth.
		backend.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	g.URL = srv.URL
	return g
}

// GitRepo is a bare repository on a GitServer and a working copy the test commits in.
type GitRepo struct {
	// URL is the repository's address, without credentials.
	URL    string
	server *GitServer
	work   string
}

// Repo makes an empty bare repository name.git on the server, with a working copy whose
// branch is main. The server lets clients fetch only part of it (partial clone), as forges do.
func (g *GitServer) Repo(t testing.TB, name string) *GitRepo {
	t.Helper()
	bare := filepath.Join(g.root, name+".git")
	gitRun(t, g.root, "init", "--quiet", "--bare", "--initial-branch=main", bare)
	gitRun(t, bare, "config", "uploadpack.allowFilter", "true")
	gitRun(t, bare, "config", "uploadpack.allowAnySHA1InWant", "true")
	gitRun(t, bare, "config", "http.receivepack", "true")
	r := &GitRepo{URL: g.URL + "/" + name + ".git", server: g, work: t.TempDir()}
	gitRun(t, r.work, "init", "--quiet", "--initial-branch=main")
	u, _ := url.Parse(r.URL)
	u.User = url.UserPassword(g.User, g.Password)
	gitRun(t, r.work, "remote", "add", "origin", u.String())
	return r
}

// Write puts a file in the working copy, making its folders.
func (r *GitRepo) Write(t testing.TB, path, content string) {
	t.Helper()
	p := filepath.Join(r.work, filepath.FromSlash(path))
	Must(t, os.MkdirAll(filepath.Dir(p), 0o755))
	Must(t, os.WriteFile(p, []byte(content), 0o644))
}

// Commit commits everything in the working copy on the current branch as author and returns
// the commit's id.
func (r *GitRepo) Commit(t testing.TB, author, message string) string {
	t.Helper()
	gitRun(t, r.work, "add", "--all")
	gitRun(t, r.work, "-c", "user.name="+author, "-c", "user.email="+strings.ToLower(strings.ReplaceAll(author, " ", "."))+"@example.com",
		"commit", "--quiet", "--allow-empty", "-m", message)
	return strings.TrimSpace(gitRun(t, r.work, "rev-parse", "HEAD"))
}

// Tag makes (or moves, when it exists) an annotated tag with message at commit.
func (r *GitRepo) Tag(t testing.TB, name, message, commit string) {
	t.Helper()
	gitRun(t, r.work, "-c", "user.name=Release", "-c", "user.email=release@example.com", "tag", "--force", "-a", name, "-m", message, commit)
}

// Push pushes the branch main and every tag, forcing moved tags, as the server's user.
func (r *GitRepo) Push(t testing.TB) {
	t.Helper()
	// A buffer larger than any test's pack sends it with its length: the CGI handler cannot
	// pass a chunked body on to http-backend.
	gitRun(t, r.work, "-c", "http.postBuffer=268435456", "push", "--quiet", "--force", "origin", "main", "--tags")
}

// Switch makes the working copy's branch name, made at the current commit when it is new.
func (r *GitRepo) Switch(t testing.TB, name string) {
	t.Helper()
	gitRun(t, r.work, "checkout", "--quiet", "-B", name)
}

// PushBranch pushes the branch name, forced, as the server's user.
func (r *GitRepo) PushBranch(t testing.TB, name string) {
	t.Helper()
	gitRun(t, r.work, "-c", "http.postBuffer=268435456", "push", "--quiet", "--force", "origin", name)
}

// gitRun runs the real git in dir, away from the machine's and the user's settings, and
// returns what it printed.
func gitRun(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Head is the commit the working copy's branch is at.
func (r *GitRepo) Head(t testing.TB) string {
	t.Helper()
	return strings.TrimSpace(gitRun(t, r.work, "rev-parse", "HEAD"))
}
