package component

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/app/kernel/secrets"
	"nimbus/app/platform/audit"
	"nimbus/app/platform/gitremote"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// ProgramFile is the file of a linked folder that holds the program.
const ProgramFile = "Pulumi.yaml"

// Link is a component's repository link as its authors see it: never the token or the
// webhook's secret.
type Link struct {
	ID          uuid.UUID `json:"id"`
	ComponentID uuid.UUID `json:"component_id"`
	URL         string    `json:"url"`
	Path        string    `json:"path"`
	Branch      string    `json:"branch"`
	TagPattern  string    `json:"tag_pattern"`
	User        string    `json:"user,omitempty"`
	HasToken    bool      `json:"has_token"`
	// Forge and StatusAPI are where a preview's result is reported as a commit status: the
	// ones set on the link, or those its URL names.
	Forge     gitremote.Forge `json:"forge"`
	StatusAPI string          `json:"status_api"`
	// WebhookPath is where the repository's push webhook posts, from the server's root.
	WebhookPath string `json:"webhook_path"`
	// Draft* say which commit the draft was taken from; empty before the first.
	DraftCommit  string     `json:"draft_commit"`
	DraftAuthor  string     `json:"draft_author"`
	DraftMessage string     `json:"draft_message"`
	LastError    string     `json:"last_error,omitempty"`
	PolledAt     *time.Time `json:"polled_at"`
	Syncs        []Sync     `json:"syncs"`
	CreatedAt    time.Time  `json:"created_at"`
}

// Linked is a link just made, with the webhook's secret: shown this once and never again.
type Linked struct {
	Link
	WebhookSecret string `json:"webhook_secret"`
}

// NewLink is what an author gives to link a component to a repository.
type NewLink struct {
	URL        string `json:"url"`
	Path       string `json:"path"`
	Branch     string `json:"branch"`
	TagPattern string `json:"tag_pattern"`
	User       string `json:"user"`
	// Token reads the repository: sealed, and never shown again. Empty for a public one.
	// It also reports the previews' results to the forge.
	Token string `json:"token"`
	// Forge is github, gitlab or gitea; empty for the one the URL's host names.
	Forge string `json:"forge"`
	// StatusAPI is the root of the forge's API; empty for the one derived from the URL.
	StatusAPI string `json:"status_api"`
}

// Linking lets the service link components to repositories: keys seal the links' tokens
// and secrets, and git reads the repositories.
func (s *Service) Linking(keys *secrets.Keyring, git gitremote.Fetcher) *Service {
	s.keys, s.git = keys, git
	return s
}

var (
	branchName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$`)
	userName   = regexp.MustCompile(`^[A-Za-z0-9._@+-]{0,100}$`)
)

// LinkRepository links a component to the folder of a repository's branch: each new commit
// there becomes its draft, each tag matching the pattern a version. Whoever may edit the
// component may. The repository is asked before anything is kept: the branch must exist and
// the folder hold a program. The webhook's secret is returned this once.
func (s *Service) LinkRepository(ctx context.Context, actor access.Principal, id uuid.UUID, in NewLink) (Linked, error) {
	c, err := s.Get(ctx, actor, id)
	if err != nil {
		return Linked{}, err
	}
	if !can(actor, access.ComponentDefinitionUpdate, c.TenantID) {
		return Linked{}, problem.ErrForbidden
	}
	if s.keys == nil {
		return Linked{}, errors.New("link repository: no keyring to seal its token")
	}
	in, err = s.checkLink(ctx, c, in)
	if err != nil {
		return Linked{}, err
	}
	linkID := uuid.New()
	var token []byte
	var tokenKey *string
	if in.Token != "" {
		k, box, err := s.keys.Seal([]byte(in.Token), linkID[:])
		if err != nil {
			return Linked{}, fmt.Errorf("seal the link's token: %w", err)
		}
		token, tokenKey = box, &k
	}
	raw := make([]byte, 32)
	rand.Read(raw)
	secret := base64.RawURLEncoding.EncodeToString(raw)
	secretKey, sealedSecret, err := s.keys.Seal([]byte(secret), webhookSealedFor(linkID))
	if err != nil {
		return Linked{}, fmt.Errorf("seal the webhook's secret: %w", err)
	}
	err = db.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := db.Queries(tx)
		if _, err := q.LockComponent(ctx, id); errors.Is(err, pgx.ErrNoRows) {
			return problem.ErrNotFound
		} else if err != nil {
			return err
		}
		_, err := q.CreateRepositoryLink(ctx, dbgen.CreateRepositoryLinkParams{
			ID: linkID, ComponentID: id, Url: in.URL, Path: in.Path, Branch: in.Branch, TagPattern: in.TagPattern,
			Username: in.User, Token: token, TokenKeyID: tokenKey, WebhookSecret: sealedSecret, WebhookKeyID: secretKey, Forge: in.Forge, StatusApi: in.StatusAPI,
			LinkedBy: uuid.NullUUID{UUID: actor.UserID, Valid: actor.UserID != uuid.Nil},
		})
		if db.IsUniqueViolation(err) {
			return problem.Invalid("url", "unique", "this component is linked to a repository already: unlink it first")
		}
		if err != nil {
			return err
		}
		// The first sync takes the branch's commit as the draft at once.
		if _, err := s.jobs.InsertTx(ctx, tx, SyncArgs{LinkID: linkID}, nil); err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{Tenant: tenantOf(c), Action: "component.link_repository", TargetType: "component",
			TargetID: id.String(), Diff: map[string]any{"name": c.Name, "url": in.URL, "path": in.Path, "branch": in.Branch, "tag_pattern": in.TagPattern}})
	})
	if err != nil {
		return Linked{}, fmt.Errorf("link repository: %w", err)
	}
	l, err := s.Repository(ctx, actor, id)
	if err != nil {
		return Linked{}, err
	}
	return Linked{Link: *l, WebhookSecret: secret}, nil
}

// webhookSealedFor binds a link's webhook secret to the link, apart from its token.
func webhookSealedFor(link uuid.UUID) []byte { return append([]byte("webhook:"), link[:]...) }

// checkLink returns the link tidied, or what is wrong with it, each field by name: first its
// form, then what the repository says of it.
func (s *Service) checkLink(ctx context.Context, c Component, in NewLink) (NewLink, error) {
	in.URL, in.Branch, in.User = strings.TrimSpace(in.URL), strings.TrimSpace(in.Branch), strings.TrimSpace(in.User)
	in.Path = strings.Trim(strings.TrimSpace(in.Path), "/")
	if in.TagPattern = strings.TrimSpace(in.TagPattern); in.TagPattern == "" {
		in.TagPattern = "v*"
	}
	v := &problem.ValidationError{}
	if c.Language != "yaml" {
		v.Add("language", "yaml", "only YAML components can take their program from git so far")
	}
	if err := s.git.CheckURL(in.URL); err != nil {
		v.Add("url", "https", "%v", err)
	}
	if in.Path != "" && (path.Clean(in.Path) != in.Path || in.Path == ".." || strings.HasPrefix(in.Path, "../") || len(in.Path) > 400) {
		v.Add("path", "relative", "must be a folder of the repository such as infra/vm, without . or .. parts; empty for its root")
	}
	if !branchName.MatchString(in.Branch) || strings.Contains(in.Branch, "..") {
		v.Add("branch", "name", "must be a branch name such as main")
	}
	if _, err := path.Match(in.TagPattern, ""); err != nil || len(in.TagPattern) > 100 {
		v.Add("tag_pattern", "glob", "must be a pattern such as v* (* matches any characters but /)")
	}
	if !userName.MatchString(in.User) {
		v.Add("user", "pattern", "must be at most 100 letters, digits and . _ @ + -")
	}
	if len(in.Token) > 4096 || strings.ContainsAny(in.Token, "\r\n") {
		v.Add("token", "format", "must be one line of at most 4096 characters")
	}
	if in.Forge = strings.TrimSpace(in.Forge); in.Forge != "" && !slices.Contains(gitremote.Forges, gitremote.Forge(in.Forge)) {
		v.Add("forge", "oneof", "must be github, gitlab or gitea; empty for the one the URL's host names")
	}
	if in.StatusAPI = strings.TrimRight(strings.TrimSpace(in.StatusAPI), "/"); in.StatusAPI != "" {
		if err := s.git.CheckURL(in.StatusAPI); err != nil {
			v.Add("status_api", "url", "%v", err)
		}
	}
	if err := v.Err(); err != nil {
		return in, err
	}
	remote := gitremote.Remote{URL: in.URL, User: in.User, Token: in.Token}
	refs, err := s.git.List(ctx, remote)
	if err != nil {
		return in, remoteProblem(err)
	}
	if _, ok := refs.Branches[in.Branch]; !ok {
		return in, problem.Invalid("branch", "exists", "the repository has no branch %q", in.Branch)
	}
	snap, err := s.git.Read(ctx, remote, in.Branch, false, in.Path, []string{ProgramFile})
	if err != nil {
		return in, remoteProblem(err)
	}
	if _, ok := snap.Files[ProgramFile]; !ok {
		return in, problem.Invalid("path", "program", "%s holds no %s on branch %s", folderName(in.Path), ProgramFile, in.Branch)
	}
	return in, nil
}

// remoteProblem words what kept a repository from being read, on the field that can fix it.
func remoteProblem(err error) error {
	switch {
	case errors.Is(err, gitremote.ErrDenied):
		return problem.Invalid("token", "accepted", "the repository refused the credentials: check the user and the token, and that it may read the repository")
	case errors.Is(err, gitremote.ErrNoRef):
		return problem.Invalid("branch", "exists", "the repository has no such branch")
	case errors.Is(err, gitremote.ErrNotAllowed):
		return problem.Invalid("url", "allowed", "%v", err)
	case errors.Is(err, gitremote.ErrUnreachable):
		return problem.Invalid("url", "reachable", "no git repository answers at this URL")
	case errors.Is(err, gitremote.ErrTooLarge):
		return problem.Invalid("path", "size", "the folder is larger than this server reads from a repository")
	case errors.Is(err, gitremote.ErrTimeout):
		return problem.Invalid("url", "timeout", "the repository took too long to answer")
	}
	return err
}

func folderName(p string) string {
	if p == "" {
		return "the repository's root"
	}
	return p
}

// Repository returns the component's repository link with its latest syncs, or nil when it
// has none; those who may edit the component may see it.
func (s *Service) Repository(ctx context.Context, actor access.Principal, id uuid.UUID) (*Link, error) {
	c, err := s.Get(ctx, actor, id)
	if err != nil {
		return nil, err
	}
	if !can(actor, access.ComponentDefinitionUpdate, c.TenantID) {
		return nil, problem.ErrNotFound
	}
	q := db.Queries(s.pool)
	row, err := q.RepositoryLinkOf(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get repository link: %w", err)
	}
	syncs, err := q.ListRepositorySyncs(ctx, dbgen.ListRepositorySyncsParams{LinkID: row.ID, Limit: 20})
	if err != nil {
		return nil, fmt.Errorf("list syncs: %w", err)
	}
	l := &Link{ID: row.ID, ComponentID: id, URL: row.Url, Path: row.Path, Branch: row.Branch, TagPattern: row.TagPattern,
		User: row.Username, HasToken: row.Token != nil, Forge: forgeOf(row), StatusAPI: statusAPIOf(row), WebhookPath: WebhookPath(row.ID), DraftCommit: row.DraftCommit,
		DraftAuthor: row.DraftAuthor, DraftMessage: row.DraftMessage, LastError: row.LastError, PolledAt: row.PolledAt,
		CreatedAt: row.CreatedAt, Syncs: make([]Sync, len(syncs))}
	for i, r := range syncs {
		l.Syncs[i] = syncFromRow(r)
	}
	return l, nil
}

// WebhookPath is where a link's push webhook posts.
func WebhookPath(link uuid.UUID) string {
	return "/api/v1/repository-links/" + link.String() + "/webhook"
}

// UnlinkRepository removes the component's repository link; the draft stays as it is, and
// may be edited again.
func (s *Service) UnlinkRepository(ctx context.Context, actor access.Principal, id uuid.UUID) error {
	return db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		c, err := s.get(ctx, q, actor, id)
		if err != nil {
			return err
		}
		if !can(actor, access.ComponentDefinitionUpdate, c.TenantID) {
			return problem.ErrForbidden
		}
		n, err := q.DeleteRepositoryLink(ctx, id)
		if err != nil {
			return fmt.Errorf("unlink repository: %w", err)
		}
		if n == 0 {
			return problem.ErrNotFound
		}
		return audit.Record(ctx, q, actor, audit.Event{Tenant: tenantOf(c), Action: "component.unlink_repository", TargetType: "component",
			TargetID: id.String(), Diff: map[string]any{"name": c.Name}})
	})
}

// Sync is what became of one commit of a link's branch, or one tag.
type Sync struct {
	ID      uuid.UUID  `json:"id"`
	Ref     string     `json:"ref"`
	Tag     bool       `json:"tag"`
	Commit  string     `json:"commit"`
	Author  string     `json:"author"`
	Message string     `json:"message"`
	Status  SyncStatus `json:"status"`
	// Version is the version a tag published.
	Version *int `json:"version,omitempty"`
	// CheckID is the engine's check of the commit's program.
	CheckID *uuid.UUID `json:"check_id,omitempty"`
	// Reason says why a commit or tag was refused, or could not be read.
	Reason string `json:"reason,omitempty"`
	// Problems are what is wrong with the program, as the editor words them: the file's line
	// and column, the rule and the message.
	Problems   []problem.FieldError `json:"problems,omitempty"`
	CreatedAt  time.Time            `json:"created_at"`
	FinishedAt *time.Time           `json:"finished_at"`
}

func syncFromRow(r dbgen.RepositorySync) Sync {
	s := Sync{ID: r.ID, Ref: r.Ref, Tag: r.IsTag, Commit: r.CommitSha, Author: r.Author, Message: r.Message,
		Status: SyncStatus(r.Status), Reason: r.Reason, CreatedAt: r.CreatedAt, FinishedAt: r.FinishedAt}
	if r.Version.Valid {
		v := int(r.Version.Int32)
		s.Version = &v
	}
	if r.CheckID.Valid {
		s.CheckID = &r.CheckID.UUID
	}
	_ = json.Unmarshal(r.Problems, &s.Problems)
	return s
}

// notLinked refuses a change of the program of a component whose program comes from git,
// saying where to change it instead.
func notLinked(ctx context.Context, q *dbgen.Queries, id uuid.UUID) error {
	l, err := q.ComponentLinked(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	return problem.Invalid("code", "linked", "%s", whereToChange(l.Url, l.Path, l.Branch))
}

// whereToChange says where a linked component's program is changed.
func whereToChange(url, folder, branch string) string {
	return fmt.Sprintf("this program comes from git: change %s on branch %s of %s; each push there becomes the draft",
		path.Join(folder, ProgramFile), branch, url)
}
