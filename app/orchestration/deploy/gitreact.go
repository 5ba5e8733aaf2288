package deploy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/riverqueue/river"

	"nimbus/app/domain/component"
	"nimbus/app/kernel/lifecycle"
	"nimbus/app/kernel/outbox"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/audit"
	"nimbus/app/platform/gitremote"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// Source is the branch of a component's repository whose program a preview from git brings
// instead of a version's; the version's inputs and the deployment's parameters stay.
type Source struct {
	Ref    string `json:"ref"`
	Commit string `json:"commit"`
	Link   uuid.UUID
	code   string
}

// PreviewBranch previews a pushed branch's program on each deployment of the component that
// opted in, as the system, and reports each preview as pending on the commit: a reaction to
// component.BranchPushed. A deployment that cannot take a preview now (its environment busy,
// its parameters no longer fitting) is passed over, as the next push will find it; one
// previewed at that commit already is too, so the reaction may run twice.
func (s *Service) PreviewBranch(ctx context.Context, tx pgx.Tx, e outbox.Logged) error {
	comp, err := e.ID("component")
	if err != nil {
		return err
	}
	syncID, err := e.ID("sync")
	if err != nil {
		return err
	}
	q := db.Queries(tx)
	sync, err := q.GetRepositorySyncByID(ctx, syncID)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && sync.Code == nil {
		return nil // unlinked since
	}
	if err != nil {
		return err
	}
	src := &Source{Ref: sync.Ref, Commit: sync.CommitSha, Link: sync.LinkID, code: *sync.Code}
	ids, err := q.DeploymentsPreviewingGit(ctx, comp)
	if err != nil {
		return err
	}
	for _, id := range ids {
		op, d, err := s.previewFromGit(ctx, tx, id, src)
		if err != nil || op == uuid.Nil {
			return err
		}
		// Tried once: a pending status sent again later could land after the preview's result.
		_, err = s.jobs.InsertTx(ctx, tx, component.StatusArgs{LinkID: src.Link, Commit: src.Commit, Context: statusContext(d),
			State: gitremote.Pending, Description: "the preview is queued", Operation: op}, &river.InsertOpts{MaxAttempts: 1})
		if err != nil {
			return err
		}
	}
	return nil
}

// previewFromGit queues the preview of src on one deployment, under its environment's and its
// own lock; it queues nothing (uuid.Nil) where the deployment cannot take it or took it.
func (s *Service) previewFromGit(ctx context.Context, tx pgx.Tx, id uuid.UUID, src *Source) (uuid.UUID, dbgen.GetDeploymentRow, error) {
	q := db.Queries(tx)
	d, err := q.GetDeployment(ctx, id)
	if err != nil {
		return uuid.Nil, d, err
	}
	if status, err := q.ShareEnvironment(ctx, d.EnvironmentID); err != nil {
		return uuid.Nil, d, err
	} else if st := lifecycle.EnvironmentStatus(status); st != lifecycle.EnvironmentActive && st != lifecycle.EnvironmentFailed {
		return uuid.Nil, d, nil
	}
	if d, err = lockedDeployment(ctx, q, id); err != nil {
		return uuid.Nil, d, err
	}
	if done, err := q.CommitPreviewed(ctx, dbgen.CommitPreviewedParams{DeploymentID: id, SourceCommit: src.Commit, SourceRef: src.Ref}); err != nil || done {
		return uuid.Nil, d, err
	}
	in, err := s.fromGit(ctx, q, d, KindPreview, Change{})
	if err != nil || in == nil {
		return uuid.Nil, d, err
	}
	in.Source = src
	op, err := s.queue(ctx, tx, audit.System, d.ID, KindPreview, *in)
	if err != nil {
		return uuid.Nil, d, err
	}
	return op.ID, d, audit.Record(ctx, q, audit.System, audit.Event{Tenant: d.TenantID, Action: "deployment.preview", TargetType: "deployment",
		TargetID: d.ID.String(), Diff: map[string]any{"name": d.Name, "kind": KindPreview, "branch": src.Ref, "commit": src.Commit}})
}

// fromGit is what an operation the repository asks for brings, or nil where the deployment's
// state or parameters refuse it: a refusal is no failure of the reaction.
func (s *Service) fromGit(ctx context.Context, q *dbgen.Queries, d dbgen.GetDeploymentRow, kind Kind, c Change) (*inputs, error) {
	err := s.allowed(ctx, q, d, kind, c)
	var in inputs
	if err == nil {
		in, err = s.target(ctx, q, d, kind, c)
	}
	var refused *problem.ValidationError
	if errors.As(err, &refused) {
		return nil, nil
	}
	return &in, err
}

// UpgradeOnPublish upgrades each deployment of the component that opted in to the version just
// published, as the system, through the usual path: its environment's approvals and plan
// policies apply as the worker runs it. A reaction to component.Published; an upgrade to that
// version asked for already is not asked again.
func (s *Service) UpgradeOnPublish(ctx context.Context, tx pgx.Tx, e outbox.Logged) error {
	comp, err := e.ID("component")
	if err != nil {
		return err
	}
	n, ok := e.Data["version"].(float64)
	if !ok {
		return fmt.Errorf("event %s holds no version", e.Type)
	}
	version := int32(n)
	q := db.Queries(tx)
	ids, err := q.DeploymentsUpgradingOnPublish(ctx, dbgen.DeploymentsUpgradingOnPublishParams{ComponentID: comp, Version: version})
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := s.upgradeFromGit(ctx, tx, id, version); err != nil {
			return err
		}
	}
	return nil
}

// upgradeFromGit queues the upgrade of one deployment to version, where it can take it.
func (s *Service) upgradeFromGit(ctx context.Context, tx pgx.Tx, id uuid.UUID, version int32) error {
	q := db.Queries(tx)
	d, err := q.GetDeployment(ctx, id)
	if err != nil {
		return err
	}
	if status, err := q.ShareEnvironment(ctx, d.EnvironmentID); err != nil {
		return err
	} else if st := lifecycle.EnvironmentStatus(status); st != lifecycle.EnvironmentActive && st != lifecycle.EnvironmentFailed {
		return nil
	}
	if d, err = lockedDeployment(ctx, q, id); err != nil {
		return err
	}
	if asked, err := q.UpgradeAsked(ctx, dbgen.UpgradeAskedParams{DeploymentID: id, TargetVersion: pgtype.Int4{Int32: version, Valid: true}}); err != nil || asked {
		return err
	}
	c := Change{Version: int(version)}
	in, err := s.fromGit(ctx, q, d, KindUpgrade, c)
	if err != nil || in == nil {
		return err
	}
	if _, err := s.queue(ctx, tx, audit.System, d.ID, KindUpgrade, *in); err != nil {
		return err
	}
	return audit.Record(ctx, q, audit.System, audit.Event{Tenant: d.TenantID, Action: "deployment.upgrade", TargetType: "deployment",
		TargetID: d.ID.String(), Diff: map[string]any{"name": d.Name, "kind": KindUpgrade, "version": version, "on_publish": true}})
}

// statusContext tells a deployment's statuses on a commit apart from another's.
func statusContext(d dbgen.GetDeploymentRow) string {
	return "nimbus/" + d.EnvironmentName + "/" + d.Name
}

// tellPreviewed writes, beside the end of a preview from git, the event its commit's status is
// reported from (component.Previewed).
func tellPreviewed(ctx context.Context, q *dbgen.Queries, op dbgen.Operation, status Status, message string, changes map[string]int) error {
	if Kind(op.Kind) != KindPreview || op.SourceCommit == "" || !op.SourceLink.Valid {
		return nil
	}
	d, err := q.GetDeployment(ctx, op.DeploymentID)
	if err != nil {
		return err
	}
	return outbox.Emit(ctx, q, outbox.Event{Type: component.Previewed, Subject: d.Name, Tenant: d.TenantID, Environment: d.EnvironmentID, Deployment: d.ID,
		Data: map[string]any{"operation": op.ID, "status": status, "link": op.SourceLink.UUID, "ref": op.SourceRef, "commit": op.SourceCommit,
			"context": statusContext(d), "state": stateOf(status), "description": previewWords(status, message, changes)}})
}

// stateOf is the commit status a preview's end is.
func stateOf(status Status) gitremote.State {
	if status == Succeeded {
		return gitremote.Success
	}
	return gitremote.Failure
}

// previewWords says how a preview ended in the few words of a commit status.
func previewWords(status Status, message string, changes map[string]int) string {
	switch {
	case status == Succeeded:
		return "the preview succeeded: " + changeWords(changes)
	case status == Cancelled:
		return "the preview was cancelled"
	case message != "":
		return "the preview failed: " + message
	}
	return "the preview failed"
}

// changeWords says what a preview would change in a few words: "1 to create, 2 to update".
func changeWords(changes map[string]int) string {
	var words []string
	for _, op := range slices.Sorted(maps.Keys(changes)) {
		if n := changes[op]; n > 0 && op != "same" {
			words = append(words, fmt.Sprintf("%d to %s", n, op))
		}
	}
	if len(words) == 0 {
		return "no changes"
	}
	return strings.Join(words, ", ")
}
