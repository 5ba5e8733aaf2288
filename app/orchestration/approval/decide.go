package approval

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/outbox"
	"nimbus/app/kernel/problem"
	"nimbus/app/orchestration/deploy"
	"nimbus/app/platform/audit"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// maxComment bounds a decision's comment.
const maxComment = 2000

// Approve records the actor's approval of a pending request. The last approval it needs sends
// the operation on from where it stopped, in the same transaction; when the deployment changed
// after the preview the request showed, the request is void instead and the operation previews
// again and asks anew.
func (s *Service) Approve(ctx context.Context, actor access.Principal, id uuid.UUID, comment string) (Detail, error) {
	return s.decide(ctx, actor, id, "approve", comment)
}

// Reject records the actor's rejection of a pending request: its operation ends rejected,
// naming who rejected it and why. A rejection needs a comment.
func (s *Service) Reject(ctx context.Context, actor access.Principal, id uuid.UUID, comment string) (Detail, error) {
	return s.decide(ctx, actor, id, "reject", comment)
}

// decide records one decision in one transaction that holds the request. Some refusals (a
// request found expired, or void) keep what the transaction did and are reported after it.
func (s *Service) decide(ctx context.Context, actor access.Principal, id uuid.UUID, decision, comment string) (Detail, error) {
	comment = strings.TrimSpace(comment)
	if utf8.RuneCountInString(comment) > maxComment {
		return Detail{}, problem.Invalid("comment", "max_length", "must be at most %d characters", maxComment)
	}
	var refused error
	err := db.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		q := db.Queries(tx)
		r, err := q.LockApprovalRequest(ctx, id)
		if err == nil && !actor.Can(access.ApprovalRead, r.TenantID) {
			err = pgx.ErrNoRows
		}
		if err != nil {
			return notFound(err)
		}
		if err := mayDecide(actor, r.TenantID, r.RequestedBy, access.Role(r.ApproverRole), r.RequesterMayApprove); err != nil {
			return err
		}
		if earlier, err := q.DecisionOf(ctx, dbgen.DecisionOfParams{RequestID: id, UserID: actor.UserID}); err == nil {
			return problem.Invalid("request", "once", "you already %s this", past(earlier))
		} else if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		switch {
		case Status(r.Status) == Pending && r.Lapsed:
			if err := s.expire(ctx, tx, r); err != nil {
				return err
			}
			refused = expired(r)
			return nil
		case Status(r.Status) == Expired:
			return expired(r)
		case Status(r.Status) != Pending:
			return problem.Invalid("request", "state", "this request is %s already and takes no more decisions", r.Status)
		}
		waiting, err := q.WaitingOnApprovalRequest(ctx, r.ID)
		if err != nil {
			return err
		}
		switch {
		case len(waiting) == 0:
			// Cancelled a moment ago: the reaction that withdraws the request has not run yet.
			if err := closeAs(ctx, q, r.ID, Cancelled); err != nil {
				return err
			}
			if r.RunID.Valid {
				refused = problem.Invalid("request", "state", "no operation of its stack run waits any more: this request takes no more decisions")
			} else {
				refused = problem.Invalid("request", "state", "its operation is %s and no longer waits: this request takes no more decisions", r.OperationStatus)
			}
			return nil
		case decision == "reject" && comment == "":
			// The requester and the other approvers read why in the operation's error.
			return problem.Invalid("comment", "required", "a rejection needs a comment: say why, for the requester")
		case decision == "reject":
			return s.reject(ctx, tx, actor, r, waiting, comment)
		}
		var stale bool
		if r.RunID.Valid {
			// Each operation of the run waiting on it previewed on its own.
			stale, err = q.ChangedSincePreviews(ctx, waiting)
		} else {
			stale, err = q.ChangedSince(ctx, dbgen.ChangedSinceParams{DeploymentID: r.DeploymentID, Since: r.PreviewedAt})
		}
		if err != nil {
			return err
		}
		if stale {
			what := r.DeploymentName
			if r.RunID.Valid {
				what = "a slot of the stack run"
			}
			refused = problem.Invalid("request", "stale", "%s changed after the preview this request shows, so the request is void: "+
				"the operation previews again and asks for approval anew", what)
			return s.void(ctx, tx, actor, r, waiting)
		}
		return s.approve(ctx, tx, actor, r, waiting, comment)
	})
	if err != nil {
		return Detail{}, fmt.Errorf("%s approval request: %w", decision, err)
	}
	if refused != nil {
		return Detail{}, refused
	}
	return s.Get(ctx, actor, id)
}

// past is a decision as a sentence tells of it: "you already rejected this".
func past(decision string) string {
	if decision == "reject" {
		return "rejected"
	}
	return "approved"
}

func expired(r dbgen.LockApprovalRequestRow) error {
	return problem.Invalid("request", "expired", "this request expired at %s without enough approvals: the operation has ended; ask for it again",
		r.ExpiresAt.UTC().Format("2006-01-02 15:04 UTC"))
}

// approve records an approval; the last one needed sends the operation on.
func (s *Service) approve(ctx context.Context, tx pgx.Tx, actor access.Principal, r dbgen.LockApprovalRequestRow, waiting []uuid.UUID, comment string) error {
	q := db.Queries(tx)
	if err := decide(ctx, q, dbgen.RecordApprovalDecisionParams{RequestID: r.ID, UserID: actor.UserID, Decision: "approve", Comment: comment}); err != nil {
		return err
	}
	n, err := q.CountApprovalsGiven(ctx, r.ID)
	if err != nil {
		return err
	}
	enough := n >= int64(r.ApprovalsRequired)
	if enough {
		if err := s.resume(ctx, tx, r, waiting); err != nil {
			return err
		}
	}
	return record(ctx, q, actor, r, "approval.approve", map[string]any{"comment": comment, "approvals": n,
		"approvals_required": r.ApprovalsRequired, "approved": enough})
}

// void sends the operations whose request showed a plan that no longer holds back to their
// previews, which ask for approval again.
func (s *Service) void(ctx context.Context, tx pgx.Tx, actor access.Principal, r dbgen.LockApprovalRequestRow, waiting []uuid.UUID) error {
	q := db.Queries(tx)
	if err := closeAs(ctx, q, r.ID, Void); err != nil {
		return err
	}
	for _, op := range waiting {
		if err := deploy.Rewind(ctx, tx, s.jobs, op, deploy.StepPreview); err != nil {
			return err
		}
	}
	return record(ctx, q, actor, r, "approval.void", map[string]any{"reason": "the deployment changed after the preview"})
}

// resume closes the request as approved and sends on every operation waiting on it.
func (s *Service) resume(ctx context.Context, tx pgx.Tx, r dbgen.LockApprovalRequestRow, waiting []uuid.UUID) error {
	q := db.Queries(tx)
	if err := closeAs(ctx, q, r.ID, Approved); err != nil {
		return err
	}
	if err := decided(ctx, q, r, Approved, ""); err != nil {
		return err
	}
	for _, op := range waiting {
		if err := deploy.Resume(ctx, tx, s.jobs, op); err != nil {
			return err
		}
	}
	return nil
}

// reject records a rejection and ends every operation waiting on the request.
func (s *Service) reject(ctx context.Context, tx pgx.Tx, actor access.Principal, r dbgen.LockApprovalRequestRow, waiting []uuid.UUID, comment string) error {
	q := db.Queries(tx)
	if err := decide(ctx, q, dbgen.RecordApprovalDecisionParams{RequestID: r.ID, UserID: actor.UserID, Decision: "reject", Comment: comment}); err != nil {
		return err
	}
	if err := closeAs(ctx, q, r.ID, Rejected); err != nil {
		return err
	}
	reason := rejectedReason(actor.Email, comment)
	if err := decided(ctx, q, r, Rejected, comment); err != nil {
		return err
	}
	for _, op := range waiting {
		if err := deploy.EndWaiting(ctx, tx, s.jobs, op, deploy.Rejected, reason); err != nil {
			return err
		}
	}
	return record(ctx, q, actor, r, "approval.reject", map[string]any{"comment": comment})
}

// expire ends a request that ran out of time, and its operation. The operation ends rejected
// rather than cancelled: nobody asked to stop it, it lacked the approval it needed, and clients
// that wait for it treat both ends alike while cancelled keeps meaning someone's stop.
func (s *Service) expire(ctx context.Context, tx pgx.Tx, r dbgen.LockApprovalRequestRow) error {
	q := db.Queries(tx)
	if err := closeAs(ctx, q, r.ID, Expired); err != nil {
		return err
	}
	reason := expiredReason(r.ExpiresAt)
	if err := decided(ctx, q, r, Expired, ""); err != nil {
		return err
	}
	waiting, err := q.WaitingOnApprovalRequest(ctx, r.ID)
	if err != nil {
		return err
	}
	for _, op := range waiting {
		err := deploy.EndWaiting(ctx, tx, s.jobs, op, deploy.Rejected, reason)
		if err != nil && !errors.Is(err, deploy.ErrNotWaiting) { // an operation that moved on keeps its own end
			return err
		}
	}
	return record(ctx, q, audit.System, r, "approval.expire", map[string]any{"expires_at": r.ExpiresAt})
}

// rejectedReason is the error an operation turned down by a rejection keeps.
func rejectedReason(email, comment string) string {
	return "rejected by " + email + ": " + comment
}

// expiredReason is the error an operation whose approval request ran out of time keeps.
func expiredReason(at time.Time) string {
	return fmt.Sprintf("not approved in time: its approval request expired at %s", at.UTC().Format("2006-01-02 15:04 UTC"))
}

// decided tells subscribers how a request ended.
func decided(ctx context.Context, q *dbgen.Queries, r dbgen.LockApprovalRequestRow, decision Status, comment string) error {
	data := map[string]any{"request": r.ID, "operation": r.OperationID, "kind": r.Kind, "decision": decision, "comment": comment}
	if r.RunID.Valid {
		data["run"], data["stack_instance"] = r.RunID.UUID, r.StackInstanceID.UUID
	}
	return outbox.Emit(ctx, q, outbox.Event{Type: "approval.decided", Subject: r.DeploymentName, Tenant: r.TenantID, Environment: r.EnvironmentID,
		Instance: r.StackInstanceID.UUID, Deployment: r.DeploymentID, Data: data})
}

// record audits a decision on the request.
func record(ctx context.Context, q *dbgen.Queries, actor access.Principal, r dbgen.LockApprovalRequestRow, action string, diff map[string]any) error {
	diff["deployment"], diff["kind"], diff["operation"] = r.DeploymentName, r.Kind, r.OperationID
	if r.RunID.Valid {
		diff["run"] = r.RunID.UUID
	}
	return audit.Record(ctx, q, actor, audit.Event{Tenant: r.TenantID, Action: action, TargetType: "approval_request",
		TargetID: r.ID.String(), Diff: diff})
}
