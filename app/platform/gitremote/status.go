package gitremote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Forge is the kind of server a repository is kept on, which says how a commit's status is
// reported to it.
type Forge string

// The forges whose status APIs Nimbus speaks.
const (
	GitHub Forge = "github"
	GitLab Forge = "gitlab"
	Gitea  Forge = "gitea"
)

// Forges lists them, for the forms.
var Forges = []Forge{GitHub, GitLab, Gitea}

// ForgeOf is the forge a repository's URL names by its host: gitlab and gitea (or codeberg,
// forgejo) by name, GitHub otherwise, as most forges answer GitHub's status API.
func ForgeOf(repoURL string) Forge {
	u, err := url.Parse(repoURL)
	if err != nil {
		return GitHub
	}
	host := strings.ToLower(u.Hostname())
	switch {
	case strings.Contains(host, "gitlab"):
		return GitLab
	case strings.Contains(host, "gitea"), strings.Contains(host, "codeberg"), strings.Contains(host, "forgejo"):
		return Gitea
	}
	return GitHub
}

// APIOf is the root of a forge's API for a repository at repoURL: api.github.com for
// github.com, and the forge's usual path on the repository's host otherwise.
func APIOf(forge Forge, repoURL string) string {
	u, err := url.Parse(repoURL)
	if err != nil {
		return ""
	}
	root := u.Scheme + "://" + u.Host
	switch {
	case forge == GitHub && strings.EqualFold(u.Hostname(), "github.com"):
		return "https://api.github.com"
	case forge == GitHub:
		return root + "/api/v3"
	case forge == GitLab:
		return root + "/api/v4"
	}
	return root + "/api/v1"
}

// State is what a commit status says.
type State string

// The states Nimbus reports: a preview queued, succeeded, or failed (or the program refused).
const (
	Pending State = "pending"
	Success State = "success"
	Failure State = "failure"
)

// Status is a commit's status as Nimbus reports it to the forge.
type Status struct {
	// Forge and API say where: API is the forge's API root (APIOf's when empty).
	Forge Forge
	API   string
	// Repo is the repository's URL, whose path names it on the forge.
	Repo   string
	Commit string
	State  State
	// Context tells Nimbus's statuses of one commit apart: one per deployment previewed.
	Context     string
	Description string
	// Target is the page that shows the result; empty for none.
	Target string
	Token  string
}

// ErrRefused is a forge's answer that trying again will not change: wrong token, no such
// repository or commit, a request it does not take.
var ErrRefused = errors.New("the forge refused the commit status")

// PostStatus reports a commit's status to its forge, held to the addresses the tenant may
// reach (Reach) as fetches are. Redirects are not followed: the token goes to the API named.
func (f Fetcher) PostStatus(ctx context.Context, s Status) error {
	if s.API == "" {
		s.API = APIOf(s.Forge, s.Repo)
	}
	endpoint, body, err := statusRequest(s)
	if err != nil {
		return err
	}
	if err := f.CheckURL(endpoint); err != nil {
		return fmt.Errorf("%w: the status API %s: %v", ErrNotAllowed, s.API, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if s.Token != "" {
		if s.Forge == GitLab {
			req.Header.Set("PRIVATE-TOKEN", s.Token)
		} else {
			req.Header.Set("Authorization", "Bearer "+s.Token)
		}
	}
	dialer := &net.Dialer{Timeout: 10 * time.Second, Control: f.Reach.Control}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: dialer.DialContext, TLSHandshakeTimeout: 10 * time.Second},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	defer resp.Body.Close()
	said, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	switch {
	case resp.StatusCode < 300:
		return nil
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests:
		return fmt.Errorf("the forge answered %s", resp.Status)
	}
	return fmt.Errorf("%w: %s: %s", ErrRefused, resp.Status, strings.TrimSpace(string(said)))
}

// statusRequest is where and what a forge's status API takes: GitHub's and Gitea's
// POST /repos/{owner}/{repo}/statuses/{sha}, GitLab's POST /projects/{path}/statuses/{sha}.
func statusRequest(s Status) (string, []byte, error) {
	u, err := url.Parse(s.Repo)
	if err != nil {
		return "", nil, err
	}
	repo := strings.TrimSuffix(strings.Trim(u.Path, "/"), ".git")
	api := strings.TrimRight(s.API, "/")
	desc := s.Description
	if r := []rune(desc); len(r) > 140 { // GitHub's limit, which the others take too
		desc = string(r[:137]) + "..."
	}
	if s.Forge == GitLab {
		state := map[State]string{Pending: "pending", Success: "success", Failure: "failed"}[s.State]
		body, err := json.Marshal(map[string]string{"state": state, "name": s.Context, "description": desc, "target_url": s.Target})
		return api + "/projects/" + url.PathEscape(repo) + "/statuses/" + s.Commit, body, err
	}
	if strings.Count(repo, "/") != 1 {
		return "", nil, fmt.Errorf("%w: %s names no owner/repository", ErrRefused, s.Repo)
	}
	body, err := json.Marshal(map[string]string{"state": string(s.State), "context": s.Context, "description": desc, "target_url": s.Target})
	return api + "/repos/" + repo + "/statuses/" + s.Commit, body, err
}
