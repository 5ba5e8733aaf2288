package notification

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/outbox"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// React makes the notifications of one of Nimbus's own events, for the people it concerns who
// may still see its tenant and take its kind; the event's ID keys them, so a second run makes
// none. Wire it for each of Kinds' types.
func React(ctx context.Context, tx pgx.Tx, e outbox.Logged) error {
	q := db.Queries(tx)
	kind, ok := kindOf(e.Type)
	if !ok {
		return nil
	}
	n, err := compose(ctx, q, e)
	if err != nil || len(n.users) == 0 {
		return err
	}
	_, err = q.Notify(ctx, dbgen.NotifyParams{Event: e.EventID, Tenant: n.tenant, Kind: kind.Type, Title: n.title, Link: n.link,
		Users: n.users, OnDefault: kind.On})
	if err != nil {
		return fmt.Errorf("notify of %s event %s: %w", e.Type, e.EventID, err)
	}
	return mailNotifications(ctx, tx, q, e.EventID, kind.On)
}

// note is what one event tells whom.
type note struct {
	users       []uuid.UUID
	tenant      uuid.NullUUID
	title, link string
}

// compose finds whom an event concerns and words it. The title names only what its tenant's
// members see; an event about no tenant (an elevation) names none.
func compose(ctx context.Context, q *dbgen.Queries, e outbox.Logged) (note, error) {
	n := note{tenant: uuid.NullUUID{UUID: e.Tenant, Valid: e.Tenant != uuid.Nil}}
	var who uuid.NullUUID
	var err error
	switch e.Type {
	case "approval.requested":
		request, err := e.ID("request")
		if err != nil {
			return n, err
		}
		n.title, n.link = fmt.Sprintf("The %s of %s waits for your approval", e.Data["kind"], e.Subject), "/approvals/"+request.String()
		n.users, err = q.ApprovalDeciders(ctx, dbgen.ApprovalDecidersParams{Request: request, Roles: deciders(e.Data["approver_role"])})
		return n, err
	case "approval.decided":
		var request uuid.UUID
		if request, err = e.ID("request"); err != nil {
			return n, err
		}
		n.title, n.link = fmt.Sprintf("The %s of %s was %s", e.Data["kind"], e.Subject, e.Data["decision"]), "/approvals/"+request.String()
		who, err = q.ApprovalRequester(ctx, request)
	case "deployment.failed", "deployment.succeeded":
		var op uuid.UUID
		if op, err = e.ID("operation"); err != nil {
			return n, err
		}
		n.title, n.link = fmt.Sprintf("The %s of %s %s", e.Data["kind"], e.Subject, e.Data["status"]), "/operations/"+op.String()
		who, err = q.OperationRequester(ctx, op)
	case "environment.expiring":
		n.title, n.link = fmt.Sprintf("Environment %s expires at %s", e.Subject, when(e.Data["expires_at"])), "/environments/"+e.Environment.String()
		who, err = q.EnvironmentCreator(ctx, e.Environment)
	case "environment.expired":
		n.title, n.link = fmt.Sprintf("Environment %s expired and is being decommissioned", e.Subject), "/environments/"+e.Environment.String()
		who, err = q.EnvironmentCreator(ctx, e.Environment)
	case "drift.detected":
		n.title, n.link = fmt.Sprintf("Drift found on %s", e.Subject), "/deployments/"+e.Deployment.String()
		who, err = q.DeploymentCreator(ctx, e.Deployment)
	case "subscription.disabled":
		sub, err := e.ID("subscription")
		if err != nil {
			return n, err
		}
		n.title, n.link = fmt.Sprintf("Subscription %s was turned off: %s", e.Subject, e.Data["reason"]), "/event-subscriptions/"+sub.String()
		n.users, err = q.TenantAdmins(ctx, n.tenant)
		return n, err
	case "backup.failed":
		n.title, n.link = fmt.Sprintf("A scheduled backup failed: %s", e.Data["error"]), "/admin/system"
		n.users, err = q.TenantAdmins(ctx, uuid.NullUUID{}) // of no tenant: the provider admins
		return n, err
	case "elevation.granted", "elevation.ended":
		who.UUID, err = e.ID("user_id")
		who.Valid = err == nil
		role := access.Role(fmt.Sprint(e.Data["role"])).Label()
		// The elevated user may see the tenant no more once it ends: the words name no tenant.
		n.tenant = uuid.NullUUID{}
		if e.Type == "elevation.granted" {
			n.title, n.link = fmt.Sprintf("You were made %s until %s", role, when(e.Data["ends_at"])), "/tenants"
		} else {
			n.title, n.link = fmt.Sprintf("Your elevation to %s ended", role), "/tenants"
		}
	}
	if errors.Is(err, pgx.ErrNoRows) {
		// What it told of is gone: nobody to tell.
		return n, nil
	}
	if err != nil {
		return n, err
	}
	if who.Valid {
		n.users = []uuid.UUID{who.UUID}
	}
	return n, nil
}

// deciders are the tenant roles whose members may decide a request that asks for role.
func deciders(role any) []string {
	asked := access.Role(fmt.Sprint(role))
	var out []string
	for _, r := range access.TenantRoles {
		if r.Grants(access.ApprovalDecide) && !asked.Outranks(r) {
			out = append(out, string(r))
		}
	}
	return out
}

// when words a time an event's data holds (RFC 3339 in the log) for a title.
func when(v any) string {
	s, _ := v.(string)
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return s
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}
