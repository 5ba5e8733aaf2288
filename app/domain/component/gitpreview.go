package component

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"nimbus/app/kernel/outbox"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/gitremote"
	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/jobs"
)

// The events a linked repository is news of, for the deployments that opted in to react.
const (
	// BranchPushed: a branch other than the link's was pushed, and its program passed the
	// editor's rules; its data name the component, the link, the sync that keeps the
	// program, the branch and the commit.
	BranchPushed = "component.branch_pushed"
	// Published: a tag published a version; its data name the component and the version.
	Published = "component.published"
	// Previewed is the deployments' event of a preview from git that ended (it is
	// package deploy's, named here for the reaction that reports it): its data name the
	// operation, its status and error, the link, the commit and where it ran.
	Previewed = "deployment.previewed"
)

// tellPublished writes, beside a version just published, the event the deployments that
// upgrade on publish react to.
func tellPublished(ctx context.Context, q *dbgen.Queries, c Component, v dbgen.ComponentVersion) error {
	return outbox.Emit(ctx, q, outbox.Event{Type: Published, Subject: c.Name, Tenant: tenantOf(c),
		Data: map[string]any{"component": c.ID, "version": v.Version, "release": v.Release}})
}

// branch previews a pushed branch's newest commit once: its program is read, held to the
// editor's rules, and handed to the opted-in deployments (BranchPushed), or refused with a
// failure status on the commit that says what is wrong where.
func (w *SyncWorker) branch(ctx context.Context, link dbgen.RepositoryLink, remote gitremote.Remote, refs gitremote.Refs, name string) error {
	s := w.svc
	head, ok := refs.Branches[name]
	if !ok {
		return nil // deleted since it was pushed
	}
	if _, err := db.Queries(s.pool).GetRepositorySync(ctx, dbgen.GetRepositorySyncParams{LinkID: link.ID, Ref: name, CommitSha: head}); err == nil {
		return nil
	} else if !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	snap, err := s.git.Read(ctx, remote, name, false, link.Path, []string{ProgramFile})
	if err != nil {
		return w.unread(ctx, link, err)
	}
	return s.takeBranch(ctx, link, name, snap)
}

// refusal words why a commit's program was refused in the few words a commit status holds:
// the first problem, with its file, line and rule.
func refusal(folder, why string, problems []problem.FieldError) string {
	if len(problems) == 0 {
		return why
	}
	return problemIn(folder, problems[0])
}

// problemIn words one problem of a linked program as the editor does, with its file.
func problemIn(folder string, p problem.FieldError) string {
	if p.Field == "code" && p.Line > 0 {
		return fmt.Sprintf("%s line %d, column %d (%s): %s", path.Join(folder, ProgramFile), p.Line, p.Column, p.Rule, p.Message)
	}
	return Problem{Field: p.Field, Message: p.Message}.String() + " (" + p.Rule + ")"
}

// StatusArgs asks a worker to report a commit's status to the forge of a link.
type StatusArgs struct {
	LinkID      uuid.UUID       `json:"link_id"`
	Commit      string          `json:"commit"`
	Context     string          `json:"context"`
	State       gitremote.State `json:"state"`
	Description string          `json:"description"`
	// Operation is the preview the status links to; none for a refused program.
	Operation uuid.UUID `json:"operation,omitzero"`
}

// Kind names the job in River.
func (StatusArgs) Kind() string { return "commit_status" }

// InsertOpts tries a forge that does not answer again a few times.
func (StatusArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{MaxAttempts: 6} }

// StatusWorker reports commit statuses to the links' forges, as the link's token, held to
// the addresses the fetches are held to. A forge that refuses is recorded on the link.
type StatusWorker struct {
	river.WorkerDefaults[StatusArgs]
	pool *pgxpool.Pool
	svc  *Service
	// public is Nimbus's address, which a status links its preview's page under; empty for
	// none.
	public string
	log    *slog.Logger
}

// NewStatusWorker returns the worker; svc opens the tokens and speaks to the forges, and must
// be Linking.
func NewStatusWorker(svc *Service, public string, log *slog.Logger) *StatusWorker {
	return &StatusWorker{pool: svc.pool, svc: svc, public: public, log: log}
}

// Timeout bounds one report.
func (w *StatusWorker) Timeout(*river.Job[StatusArgs]) time.Duration { return time.Minute }

// Work posts the status.
func (w *StatusWorker) Work(ctx context.Context, job *river.Job[StatusArgs]) error {
	a := job.Args
	q := db.Queries(w.pool)
	link, err := q.GetRepositoryLink(ctx, a.LinkID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil // unlinked since
	}
	if err != nil {
		return err
	}
	remote, err := w.svc.remoteOf(link)
	if err != nil {
		return err
	}
	st := gitremote.Status{Forge: forgeOf(link), API: statusAPIOf(link), Repo: link.Url, Commit: a.Commit, State: a.State,
		Context: a.Context, Description: a.Description, Token: remote.Token}
	if a.Operation != uuid.Nil && w.public != "" {
		st.Target = w.public + "/operations/" + a.Operation.String()
	}
	err = w.svc.git.PostStatus(ctx, st)
	if errors.Is(err, gitremote.ErrRefused) || errors.Is(err, gitremote.ErrNotAllowed) {
		w.log.Warn("commit status refused", "link", link.ID, "commit", a.Commit, "err", err)
		return q.SetRepositoryError(ctx, dbgen.SetRepositoryErrorParams{ID: link.ID,
			LastError: fmt.Sprintf("the status of commit %.12s was not reported: %v", a.Commit, err)})
	}
	return err
}

// forgeOf is the forge a link reports to: the one set on it, else the one its URL names.
func forgeOf(link dbgen.RepositoryLink) gitremote.Forge {
	if link.Forge != "" {
		return gitremote.Forge(link.Forge)
	}
	return gitremote.ForgeOf(link.Url)
}

// statusAPIOf is the root of the API a link reports statuses to.
func statusAPIOf(link dbgen.RepositoryLink) string {
	if link.StatusApi != "" {
		return link.StatusApi
	}
	return gitremote.APIOf(forgeOf(link), link.Url)
}

// ReportPreview reports a preview from git that ended as its commit's status: a reaction to
// Previewed, whose data carry the state and the words the deployments chose.
func ReportPreview(ctx context.Context, tx pgx.Tx, e outbox.Logged) error {
	link, err := e.ID("link")
	if err != nil {
		return err
	}
	op, err := e.ID("operation")
	if err != nil {
		return err
	}
	commit, _ := e.Data["commit"].(string)
	where, _ := e.Data["context"].(string)
	state, _ := e.Data["state"].(string)
	desc, _ := e.Data["description"].(string)
	_, err = jobs.Running{}.InsertTx(ctx, tx, StatusArgs{LinkID: link, Commit: commit, Context: where, State: gitremote.State(state),
		Description: desc, Operation: op}, nil)
	return err
}
