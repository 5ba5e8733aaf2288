package component

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"

	"nimbus/app/kernel/problem"
	"nimbus/db"
)

// Webhook headers: the body's HMAC-SHA256 under the link's webhook secret, as "sha256=" and
// hex. GitHub signs its push events so in X-Hub-Signature-256; anything else may send
// SignatureHeader. Gitea and Forgejo send the bare hex in a header of their own; GitLab signs
// nothing, and sends the secret itself in X-Gitlab-Token (over TLS, as GitLab does).
const (
	SignatureHeader       = "X-Nimbus-Signature-256"
	githubSignatureHeader = "X-Hub-Signature-256"
	maxWebhookBody        = 1 << 20
)

// bareSignatureHeaders carry the body's HMAC-SHA256 as bare hex.
var bareSignatureHeaders = []string{"X-Gitea-Signature", "X-Forgejo-Signature"}

// signed reports whether the request carries the link's secret in one of the forms forges
// send it: a signature of the body, or GitLab's token.
func signed(h http.Header, secret, body []byte) bool {
	want := SignWebhook(secret, body)
	for _, name := range []string{SignatureHeader, githubSignatureHeader} {
		if sig := h.Get(name); sig != "" {
			return hmac.Equal([]byte(sig), []byte(want))
		}
	}
	for _, name := range bareSignatureHeaders {
		if sig := h.Get(name); sig != "" {
			return hmac.Equal([]byte("sha256="+sig), []byte(want))
		}
	}
	if token := h.Get("X-Gitlab-Token"); token != "" {
		return hmac.Equal([]byte(token), secret)
	}
	return false
}

// SignWebhook is the signature of body under secret, as SignatureHeader carries it.
func SignWebhook(secret, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// ReceiveWebhook answers POST /api/v1/repository-links/{id}/webhook, outside sign-in: a push
// signed with the link's secret queues a sync of the link. The body says which branch was
// pushed (or is a pull request's head), for its preview; what that branch holds, and what
// changed anywhere else, the sync asks the repository. A wrong signature is 401 and changes
// nothing.
func (h *Handlers) ReceiveWebhook(c echo.Context) error {
	s := h.svc
	ctx := c.Request().Context()
	id, err := uuid.Parse(c.Param("id"))
	if err != nil {
		return problem.ErrNotFound
	}
	link, err := db.Queries(s.pool).GetRepositoryLink(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return problem.ErrNotFound
	}
	if err != nil {
		return err
	}
	body, err := io.ReadAll(http.MaxBytesReader(c.Response(), c.Request().Body, maxWebhookBody))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return echo.NewHTTPError(http.StatusRequestEntityTooLarge, fmt.Sprintf("a webhook carries at most %d bytes", maxWebhookBody))
	case err != nil:
		return problem.Invalid("body", "read", "the body could not be read")
	}
	secret, err := s.keys.Open(link.WebhookKeyID, link.WebhookSecret, webhookSealedFor(link.ID))
	if err != nil {
		return fmt.Errorf("open the webhook secret of repository link %s: %w", link.ID, err)
	}
	if !signed(c.Request().Header, secret, body) {
		return echo.NewHTTPError(http.StatusUnauthorized, "the request's signature does not match this link's webhook secret")
	}
	if c.Request().Header.Get("X-GitHub-Event") == "ping" {
		return c.NoContent(http.StatusNoContent)
	}
	err = db.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		args := SyncArgs{LinkID: link.ID, Pushed: time.Now().UTC()}
		if b := pushedBranch(body); b != link.Branch {
			args.Branch = b
		}
		_, err := s.jobs.InsertTx(ctx, tx, args, nil)
		return err
	})
	if err != nil {
		return fmt.Errorf("queue the sync of repository link %s: %w", link.ID, err)
	}
	return c.NoContent(http.StatusAccepted)
}

// pushedBranch is the branch a webhook's body says was pushed, or the head branch of a pull
// request opened or pushed to; empty for anything else (a tag, a closed pull request, a body
// that names no branch). GitHub's, Gitea's and GitLab's push events and the plain format
// share ref; GitHub's and Gitea's pull requests their head, GitLab's merge requests their
// source branch.
func pushedBranch(body []byte) string {
	var b struct {
		Ref         string `json:"ref"`
		Action      string `json:"action"`
		PullRequest *struct {
			Head struct {
				Ref string `json:"ref"`
			} `json:"head"`
		} `json:"pull_request"`
		ObjectKind string `json:"object_kind"`
		Merge      struct {
			Source string `json:"source_branch"`
			Action string `json:"action"`
		} `json:"object_attributes"`
	}
	if json.Unmarshal(body, &b) != nil {
		return ""
	}
	name := ""
	switch {
	case b.PullRequest != nil:
		switch b.Action {
		case "opened", "reopened", "synchronize", "synchronized": // Gitea says synchronized
			name = b.PullRequest.Head.Ref
		}
	case b.ObjectKind == "merge_request":
		switch b.Merge.Action {
		case "open", "reopen", "update":
			name = b.Merge.Source
		}
	default:
		name, _ = strings.CutPrefix(b.Ref, "refs/heads/")
		if name == b.Ref {
			name = ""
		}
	}
	if !branchName.MatchString(name) || strings.Contains(name, "..") {
		return ""
	}
	return name
}
