package component

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"golang.org/x/mod/semver"

	"nimbus/app/domain/proxmox"
	"nimbus/app/kernel/lifecycle"
	"nimbus/app/kernel/outbox"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/audit"
	"nimbus/app/platform/gitremote"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// SyncStatus is what became of one commit of a linked branch, or one tag.
type SyncStatus string

// The statuses of a sync.
const (
	SyncRunning  SyncStatus = "running"
	SyncChecking SyncStatus = "checking" // a tag's program waits for the engine's check
	SyncSynced   SyncStatus = "synced"
	SyncRefused  SyncStatus = "refused"
	SyncFailed   SyncStatus = "failed"
)

// SyncMachine is a sync's life; this file alone records syncs and moves them.
var SyncMachine = lifecycle.Machine[SyncStatus]{
	Name: "repository sync", Table: "repository_syncs", Column: "status", Writer: "app/domain/component/gitsync.go", Start: SyncRunning,
	Moves: map[SyncStatus][]SyncStatus{
		SyncRunning:  {SyncChecking, SyncSynced, SyncRefused, SyncFailed},
		SyncChecking: {SyncSynced, SyncRefused, SyncFailed},
	},
}

// SyncArgs asks a worker to look at a link's repository: its branch's newest commit, and its
// tags.
type SyncArgs struct {
	LinkID uuid.UUID `json:"link_id" river:"unique"`
	// Pushed is when a webhook asked; zero for a poll or a new link. A webhook's sync is never
	// folded into one already running, which may have read the repository before the push.
	Pushed time.Time `json:"pushed,omitzero" river:"unique"`
	// Branch is another branch than the link's that a webhook said was pushed (a pull
	// request's): its newest commit is previewed on the deployments that opted in.
	Branch string `json:"branch,omitempty" river:"unique"`
}

// Kind names the job in River.
func (SyncArgs) Kind() string { return "repository_sync" }

// InsertOpts keeps one sync of a link from the poll waiting or running at a time. Two syncs of
// a link may run together (a webhook's beside the poll's): each applies what it read under
// the link's row lock, and a commit or tag is taken once.
func (SyncArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true, ByState: []rivertype.JobState{
		rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning, rivertype.JobStateRetryable, rivertype.JobStateScheduled}}}
}

// syncTimeout bounds one sync: a few bounded reads of the repository.
const syncTimeout = 10 * time.Minute

// checkWait is how long a sync whose tag waits for the engine's check snoozes before it
// looks again.
const checkWait = 2 * time.Second

// SyncWorker reads a link's repository and turns what is new into the draft and versions: the
// branch's newest commit becomes the draft, validated and checked as an edited draft is; each
// tag matching the pattern publishes exactly its commit, once the engine has passed that
// program. The repository is read outside any transaction; what it said is applied under the
// link's row lock.
type SyncWorker struct {
	river.WorkerDefaults[SyncArgs]
	svc *Service
	log *slog.Logger
}

// NewSyncWorker returns the worker; svc validates and queues the checks, and must be Linking.
func NewSyncWorker(svc *Service, log *slog.Logger) *SyncWorker {
	return &SyncWorker{svc: svc, log: log}
}

// Timeout bounds one sync.
func (w *SyncWorker) Timeout(*river.Job[SyncArgs]) time.Duration { return syncTimeout }

// Work syncs the link. What the repository holds that is wrong is recorded on the link and its
// syncs, never a failed job; only trouble with the database makes River try again.
func (w *SyncWorker) Work(ctx context.Context, job *river.Job[SyncArgs]) error {
	s := w.svc
	q := db.Queries(s.pool)
	link, err := q.GetRepositoryLink(ctx, job.Args.LinkID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil // unlinked since
	}
	if err != nil {
		return err
	}
	remote, err := s.remoteOf(link)
	if err != nil {
		return err
	}
	refs, err := s.git.List(ctx, remote)
	if err != nil {
		return w.unread(ctx, link, err)
	}
	head, ok := refs.Branches[link.Branch]
	if !ok {
		return q.SetRepositoryPolled(ctx, dbgen.SetRepositoryPolledParams{ID: link.ID, LastError: fmt.Sprintf("the repository has no branch %q any more", link.Branch)})
	}
	if head != link.DraftCommit {
		if _, err := q.GetRepositorySync(ctx, dbgen.GetRepositorySyncParams{LinkID: link.ID, Ref: link.Branch, CommitSha: head}); errors.Is(err, pgx.ErrNoRows) {
			snap, err := s.git.Read(ctx, remote, link.Branch, false, link.Path, []string{ProgramFile})
			if err != nil {
				return w.unread(ctx, link, err)
			}
			if err := s.takeDraft(ctx, link, snap); err != nil {
				return err
			}
		} else if err != nil {
			return err
		}
	}
	if b := job.Args.Branch; b != "" && b != link.Branch {
		if err := w.branch(ctx, link, remote, refs, b); err != nil {
			return err
		}
	}
	waiting := false
	for _, name := range releaseOrder(slices.Collect(maps.Keys(refs.Tags))) {
		if ok, _ := path.Match(link.TagPattern, name); !ok {
			continue
		}
		wait, err := w.tag(ctx, link, remote, name, refs.Tags[name])
		if err != nil {
			return err
		}
		waiting = waiting || wait
	}
	if err := q.SetRepositoryPolled(ctx, dbgen.SetRepositoryPolledParams{ID: link.ID}); err != nil {
		return err
	}
	if waiting {
		return river.JobSnooze(checkWait)
	}
	return nil
}

// tag publishes a tag not yet published, refuses one moved since it was, and reports whether
// its program still waits for the engine's check.
func (w *SyncWorker) tag(ctx context.Context, link dbgen.RepositoryLink, remote gitremote.Remote, name string, tag gitremote.Tag) (bool, error) {
	s := w.svc
	q := db.Queries(s.pool)
	row, err := q.GetRepositorySync(ctx, dbgen.GetRepositorySyncParams{LinkID: link.ID, Ref: name, CommitSha: tag.Commit})
	switch {
	case err == nil && SyncMachine.Ended(SyncStatus(row.Status)):
		return false, nil
	case err != nil && !errors.Is(err, pgx.ErrNoRows):
		return false, err
	}
	snap, err := s.git.Read(ctx, remote, name, true, link.Path, []string{ProgramFile})
	if err != nil {
		return false, w.unread(ctx, link, err)
	}
	if snap.Commit != tag.Commit {
		return false, nil // moved while it was read: the next sync sees where it stands
	}
	return s.publishTag(ctx, link, name, snap)
}

// unread records on the link why its repository could not be read.
func (w *SyncWorker) unread(ctx context.Context, link dbgen.RepositoryLink, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	w.log.Warn("repository not read", "link", link.ID, "err", err)
	why := err.Error()
	if errors.Is(err, gitremote.ErrDenied) {
		why += ": give the link a token that may read it"
	}
	return db.Queries(w.svc.pool).SetRepositoryPolled(context.WithoutCancel(ctx), dbgen.SetRepositoryPolledParams{ID: link.ID, LastError: why})
}

// remoteOf is the link's repository with its token opened.
func (s *Service) remoteOf(link dbgen.RepositoryLink) (gitremote.Remote, error) {
	r := gitremote.Remote{URL: link.Url, User: link.Username}
	if link.Token != nil && link.TokenKeyID != nil {
		token, err := s.keys.Open(*link.TokenKeyID, link.Token, link.ID[:])
		if err != nil {
			return r, fmt.Errorf("open the token of repository link %s: %w", link.ID, err)
		}
		r.Token = string(token)
	}
	return r, nil
}

// programOf is c's draft with the program a commit holds, and what keeps it from being one:
// the problems the editor would show, or why the commit holds no program at all.
func (s *Service) programOf(c Component, link dbgen.RepositoryLink, snap gitremote.Snapshot) (Draft, []problem.FieldError, string) {
	d := Draft{Name: c.Name, DisplayName: c.DisplayName, Description: c.Description, Language: c.Language,
		Code: string(snap.Files[ProgramFile]), InputSchema: c.InputSchema, OutputSchema: c.OutputSchema, ResolverBindings: c.ResolverBindings}
	if _, ok := snap.Files[ProgramFile]; !ok {
		return d, nil, fmt.Sprintf("%s holds no %s at this commit", folderName(link.Path), ProgramFile)
	}
	_, _, err := Validate(&d, s.engine.LanguageHosts(), scopeOf(c))
	var v *problem.ValidationError
	if errors.As(err, &v) {
		return d, v.Fields, "the program breaks the rules the editor holds drafts to"
	}
	return d, nil, ""
}

// takeDraft makes the commit the component's draft, as saving it in the editor would, and
// queues the engine's check of it; a commit whose program the editor would refuse is refused,
// the draft left as it was.
func (s *Service) takeDraft(ctx context.Context, link dbgen.RepositoryLink, snap gitremote.Snapshot) error {
	return db.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := db.Queries(tx)
		if _, err := q.LockRepositoryLink(ctx, link.ID); errors.Is(err, pgx.ErrNoRows) {
			return nil
		} else if err != nil {
			return err
		}
		if _, err := q.LockComponent(ctx, link.ComponentID); err != nil {
			return err
		}
		c, err := s.componentOf(ctx, q, link.ComponentID)
		if err != nil {
			return err
		}
		row, err := q.StartRepositorySync(ctx, dbgen.StartRepositorySyncParams{LinkID: link.ID, Ref: link.Branch, CommitSha: snap.Commit,
			Author: snap.Author, Message: snap.Message})
		if db.IsUniqueViolation(err) {
			return nil // another sync took it
		}
		if err != nil {
			return err
		}
		d, problems, why := s.programOf(c, link, snap)
		if why != "" {
			return moveSync(ctx, q, row.ID, SyncRefused, why, problems, nil, uuid.NullUUID{})
		}
		if d.Code != c.Code {
			err = q.UpdateComponentDraft(ctx, dbgen.UpdateComponentDraftParams{ID: c.ID, DisplayName: d.DisplayName, Description: d.Description,
				Language: d.Language, Code: d.Code, InputSchema: d.InputSchema, OutputSchema: d.OutputSchema, ResolverBindings: d.ResolverBindings})
			if err != nil {
				return err
			}
		}
		if err := q.SetRepositoryDraft(ctx, dbgen.SetRepositoryDraftParams{ID: link.ID, DraftCommit: snap.Commit, DraftAuthor: snap.Author, DraftMessage: snap.Message}); err != nil {
			return err
		}
		var check uuid.NullUUID
		if c.Provider != proxmox.Provider { // a Proxmox check needs a zone a provider admin chooses
			chk, err := s.queueCheck(ctx, tx, c.ID, d.Code, d.InputSchema)
			if err != nil {
				return err
			}
			check = uuid.NullUUID{UUID: chk.ID, Valid: true}
		}
		if err := moveSync(ctx, q, row.ID, SyncSynced, "", nil, nil, check); err != nil {
			return err
		}
		return audit.Record(ctx, q, audit.System, audit.Event{Tenant: tenantOf(c), Action: "component.update", TargetType: "component",
			TargetID: c.ID.String(), Diff: map[string]any{"name": c.Name, "changed": []string{"code"}, "commit": snap.Commit, "repository": link.Url}})
	})
}

// takeBranch records a branch's commit with its program, and tells of it; a program the
// editor would refuse is refused, and the commit's status says why.
func (s *Service) takeBranch(ctx context.Context, link dbgen.RepositoryLink, name string, snap gitremote.Snapshot) error {
	return db.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := db.Queries(tx)
		if _, err := q.LockRepositoryLink(ctx, link.ID); errors.Is(err, pgx.ErrNoRows) {
			return nil
		} else if err != nil {
			return err
		}
		c, err := s.componentOf(ctx, q, link.ComponentID)
		if err != nil {
			return err
		}
		d, problems, why := s.programOf(c, link, snap)
		row, err := q.StartBranchSync(ctx, dbgen.StartBranchSyncParams{LinkID: link.ID, Ref: name, CommitSha: snap.Commit,
			Author: snap.Author, Message: snap.Message, Code: &d.Code})
		if db.IsUniqueViolation(err) {
			return nil // another sync took it
		}
		if err != nil {
			return err
		}
		if why != "" {
			if err := moveSync(ctx, q, row.ID, SyncRefused, why, problems, nil, uuid.NullUUID{}); err != nil {
				return err
			}
			_, err := s.jobs.InsertTx(ctx, tx, StatusArgs{LinkID: link.ID, Commit: snap.Commit, Context: "nimbus/" + c.Name,
				State: gitremote.Failure, Description: refusal(link.Path, why, problems)}, nil)
			return err
		}
		if err := moveSync(ctx, q, row.ID, SyncSynced, "", nil, nil, uuid.NullUUID{}); err != nil {
			return err
		}
		return outbox.Emit(ctx, q, outbox.Event{Type: BranchPushed, Subject: c.Name, Tenant: tenantOf(c),
			Data: map[string]any{"component": c.ID, "link": link.ID, "sync": row.ID, "ref": name, "commit": snap.Commit}})
	})
}

// publishTag publishes the tag's commit as the next version, named after the tag, its message
// the changelog, once the engine has passed exactly that program (as publishing a draft needs);
// until then it queues the check and reports that it waits. A tag already published at
// another commit is refused: a version is what its tag named when it was made.
func (s *Service) publishTag(ctx context.Context, link dbgen.RepositoryLink, name string, snap gitremote.Snapshot) (bool, error) {
	waiting := false
	err := db.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := db.Queries(tx)
		if _, err := q.LockRepositoryLink(ctx, link.ID); errors.Is(err, pgx.ErrNoRows) {
			return nil
		} else if err != nil {
			return err
		}
		latest, err := q.LockComponent(ctx, link.ComponentID)
		if err != nil {
			return err
		}
		c, err := s.componentOf(ctx, q, link.ComponentID)
		if err != nil {
			return err
		}
		row, err := q.GetRepositorySync(ctx, dbgen.GetRepositorySyncParams{LinkID: link.ID, Ref: name, CommitSha: snap.Commit})
		if errors.Is(err, pgx.ErrNoRows) {
			row, err = q.StartRepositorySync(ctx, dbgen.StartRepositorySyncParams{LinkID: link.ID, Ref: name, IsTag: true, CommitSha: snap.Commit,
				Author: snap.Author, Message: snap.TagMessage})
		}
		if err != nil {
			return err
		}
		if SyncMachine.Ended(SyncStatus(row.Status)) {
			return nil
		}
		refuse := func(why string, problems []problem.FieldError) error {
			return moveSync(ctx, q, row.ID, SyncRefused, why, problems, nil, row.CheckID)
		}
		if before, err := q.PublishedTag(ctx, dbgen.PublishedTagParams{LinkID: link.ID, Ref: name}); err == nil {
			return refuse(fmt.Sprintf("tag %s was published as version %d from commit %.12s and has since moved to %.12s: a published version does not change; make a new tag",
				name, before.Version.Int32, before.CommitSha, snap.Commit), nil)
		} else if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		d, problems, why := s.programOf(c, link, snap)
		if why != "" {
			return refuse(why, problems)
		}
		if err := ValidateChangelog(snap.TagMessage); err != nil {
			return refuse("the tag's message is the version's changelog: make an annotated tag (git tag -a) whose message says what changed", nil)
		}
		if s.engine.HasProvider(PackageOf(c.Provider)) {
			chk, err := q.CheckOfCode(ctx, dbgen.CheckOfCodeParams{ComponentID: c.ID, Code: d.Code, InputSchema: d.InputSchema})
			if errors.Is(err, pgx.ErrNoRows) {
				if c.Provider == proxmox.Provider {
					return refuse("a Proxmox component's program is checked with a landing zone's API access: check the draft of this commit in Nimbus first", nil)
				}
				if chk, err = s.queueCheck(ctx, tx, c.ID, d.Code, d.InputSchema); err != nil {
					return err
				}
			} else if err != nil {
				return err
			}
			switch CheckStatus(chk.Status) {
			case CheckFailed:
				return refuse("the engine's check of this commit's program failed: fix it and make a new tag", nil)
			case CheckQueued, CheckRunning:
				waiting = true
				if row.Status == string(SyncChecking) {
					return nil
				}
				return moveSync(ctx, q, row.ID, SyncChecking, "", nil, nil, uuid.NullUUID{UUID: chk.ID, Valid: true})
			}
			row.CheckID = uuid.NullUUID{UUID: chk.ID, Valid: true}
		}
		v, err := q.InsertComponentVersion(ctx, dbgen.InsertComponentVersionParams{
			ComponentID: c.ID, Version: latest + 1, Language: d.Language, Code: d.Code, InputSchema: d.InputSchema,
			OutputSchema: d.OutputSchema, ResolverBindings: d.ResolverBindings, Changelog: strings.TrimSpace(snap.TagMessage), Release: releaseOf(name),
		})
		if err != nil {
			return err
		}
		if err := q.SetLatestVersion(ctx, dbgen.SetLatestVersionParams{ID: c.ID, LatestVersion: v.Version}); err != nil {
			return err
		}
		if err := moveSync(ctx, q, row.ID, SyncSynced, "", nil, &v.Version, row.CheckID); err != nil {
			return err
		}
		if err := tellPublished(ctx, q, c, v); err != nil {
			return err
		}
		return audit.Record(ctx, q, audit.System, audit.Event{Tenant: tenantOf(c), Action: "component.publish", TargetType: "component", TargetID: c.ID.String(),
			Diff: map[string]any{"name": c.Name, "version": v.Version, "release": v.Release, "tag": name, "commit": snap.Commit, "changelog": v.Changelog}})
	})
	return waiting, err
}

// releaseOrder sorts tags as their versions follow each other (v1.9.0 before v1.10.0), so
// that tags found together are published in that order; tags that are no semantic version
// follow by name.
func releaseOrder(tags []string) []string {
	slices.SortFunc(tags, func(a, b string) int {
		if c := semver.Compare(a, b); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	return tags
}

// releaseOf is the version's name a tag gives: v1.2.0 names 1.2.0, any other tag itself.
func releaseOf(tag string) string {
	if rest, ok := strings.CutPrefix(tag, "v"); ok && rest != "" && rest[0] >= '0' && rest[0] <= '9' {
		return rest
	}
	return tag
}

// componentOf reads a component for a sync, which acts for no one.
func (s *Service) componentOf(ctx context.Context, q *dbgen.Queries, id uuid.UUID) (Component, error) {
	row, err := q.GetComponent(ctx, id)
	if err != nil {
		return Component{}, fmt.Errorf("get component %s: %w", id, err)
	}
	return fromRow(row), nil
}

// moveSync moves a sync to status where the machine allows, recording why and what.
func moveSync(ctx context.Context, q *dbgen.Queries, id uuid.UUID, status SyncStatus, reason string, problems []problem.FieldError, version *int32, check uuid.NullUUID) error {
	if problems == nil {
		problems = []problem.FieldError{}
	}
	raw, err := json.Marshal(problems)
	if err != nil {
		return err
	}
	var v pgtype.Int4
	if version != nil {
		v = pgtype.Int4{Int32: *version, Valid: true}
	}
	return q.MoveRepositorySync(ctx, dbgen.MoveRepositorySyncParams{ID: id, Status: string(status), Reason: reason, Problems: raw,
		Version: v, CheckID: check, Sources: SyncMachine.SourceNames(status)})
}
