package approval

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/objstore/s3test"
	"nimbus/app/kernel/outbox"
	"nimbus/app/kernel/problem"
	"nimbus/app/orchestration/deploy"
	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/db/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(s3test.Around(m)) }

func TestNeed_MostApprovalsFromTheHighestRole(t *testing.T) {
	cases := []struct {
		name     string
		policies []dbgen.ApprovalPoliciesForRow
		n        int
		role     access.Role
	}{
		{"none", nil, 0, access.User},
		{"one", []dbgen.ApprovalPoliciesForRow{{ApprovalsRequired: 2, ApproverRole: "tenant_admin"}}, 2, access.TenantAdmin},
		{"several", []dbgen.ApprovalPoliciesForRow{
			{ApprovalsRequired: 3, ApproverRole: "user"},
			{ApprovalsRequired: 1, ApproverRole: "provider_admin"},
			{ApprovalsRequired: 2, ApproverRole: "tenant_admin"},
		}, 3, access.ProviderAdmin},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if n, role := need(c.policies); n != c.n || role != c.role {
				t.Fatalf("need = %d from %s, want %d from %s", n, role, c.n, c.role)
			}
		})
	}
}

func TestCheck_NamesEachBrokenRule(t *testing.T) {
	two, eleven := 2, 11
	good := NewPolicy{Scope: "environment", ScopeID: uuid.NewString(), Operations: []string{"destroy"}, ApproverRole: "user"}
	cases := []struct {
		name   string
		change func(*NewPolicy)
		fields []string
	}{
		{"valid", func(*NewPolicy) {}, nil},
		{"scope", func(p *NewPolicy) { p.Scope = "tenant" }, []string{"scope"}},
		{"scope id", func(p *NewPolicy) { p.ScopeID = "dev" }, []string{"scope_id"}},
		{"no operations", func(p *NewPolicy) { p.Operations = nil }, []string{"operations"}},
		{"unknown operations", func(p *NewPolicy) { p.Operations = []string{"deploy", "refresh", "preview"} }, []string{"operations[1]", "operations[2]"}},
		{"too many approvals", func(p *NewPolicy) { p.ApprovalsRequired = &eleven }, []string{"approvals_required"}},
		{"role", func(p *NewPolicy) { p.ApproverRole = "read_only" }, []string{"approver_role"}},
		{"all at once", func(p *NewPolicy) { *p = NewPolicy{} }, []string{"scope", "scope_id", "operations", "approver_role"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := good
			c.change(&in)
			_, err := check(in)
			var v *problem.ValidationError
			if len(c.fields) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.As(err, &v) {
				t.Fatalf("got %v, want a validation error", err)
			}
			var got []string
			for _, f := range v.Fields {
				got = append(got, f.Field)
			}
			if strings.Join(got, ",") != strings.Join(c.fields, ",") {
				t.Fatalf("refused %v, want %v", got, c.fields)
			}
		})
	}
	in := good
	in.Operations, in.ApprovalsRequired = []string{"update", "deploy", "update"}, &two
	p, err := check(in)
	if err != nil || strings.Join(p.Operations, ",") != "update,deploy" || p.ApprovalsRequired != 2 {
		t.Fatalf("check kept %v %d (%v), want each operation once and 2 approvals", p.Operations, p.ApprovalsRequired, err)
	}
}

// fixture is one deploy operation of tenant T, asked for by its user, under a policy on its
// environment that wants two approvals from users.
type fixture struct {
	pool                   *pgxpool.Pool
	svc                    *Service
	tenant, op, deployment uuid.UUID
	requester, ann, bob    access.Principal
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	pool := dbtest.Pool(t)
	d := dbtest.NewDeployment(t, pool)
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	fx := &fixture{pool: pool, svc: NewService(pool, client), tenant: d.TenantID, op: d.OperationID, deployment: d.DeploymentID}
	person := func(email string) access.Principal {
		var id uuid.UUID
		if err := pool.QueryRow(ctx, `INSERT INTO users (email, password_hash) VALUES ($1, 'x') RETURNING id`, email).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return access.Principal{UserID: id, Email: email, Roles: map[uuid.UUID]access.Role{d.TenantID: access.User}}
	}
	fx.requester, fx.ann, fx.bob = person("requester@t.example"), person("ann@t.example"), person("bob@t.example")
	_, err = pool.Exec(ctx, `UPDATE operations SET requested_by = $2 WHERE id = $1`, d.OperationID, fx.requester.UserID)
	must(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO approval_policies (scope, scope_id, operations, approvals_required, approver_role)
		VALUES ('environment', $1, '{deploy}', 2, 'user')`, d.EnvironmentID)
	must(t, err)
	return fx
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// hold asks the gate about the operation as the worker does after the preview, and parks it
// when it must wait.
func (fx *fixture) hold(t *testing.T, ttl time.Duration) bool {
	t.Helper()
	var wait bool
	err := db.Tx(context.Background(), fx.pool, func(q *dbgen.Queries) error {
		op, err := q.GetOperation(context.Background(), fx.op)
		if err != nil {
			return err
		}
		dep, err := q.GetDeployment(context.Background(), fx.deployment)
		if err != nil {
			return err
		}
		wait, err = NewGate(ttl).Hold(context.Background(), q, deploy.Gated{Operation: op.ID, Kind: op.Kind, Deployment: dep.ID,
			Name: dep.Name, Component: dep.ComponentID, Environment: dep.EnvironmentID, Tenant: dep.TenantID})
		return err
	})
	must(t, err)
	if wait {
		fx.exec(t, `UPDATE operations SET status = 'awaiting_approval' WHERE id = $1`, fx.op)
	}
	return wait
}

func (fx *fixture) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	if _, err := fx.pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatal(err)
	}
}

// status is a column of the operation's row.
func (fx *fixture) status(t *testing.T) (status, msg string) {
	t.Helper()
	must(t, fx.pool.QueryRow(context.Background(), `SELECT status, error FROM operations WHERE id = $1`, fx.op).Scan(&status, &msg))
	return status, msg
}

func (fx *fixture) request(t *testing.T) Request {
	t.Helper()
	list, err := fx.svc.List(context.Background(), fx.ann, "")
	must(t, err)
	if len(list) == 0 {
		t.Fatal("no request")
	}
	return list[0]
}

func wantRule(t *testing.T, err error, rule string) {
	t.Helper()
	var v *problem.ValidationError
	if !errors.As(err, &v) || v.Fields[0].Rule != rule {
		t.Fatalf("got %v, want a refusal by the rule %s", err, rule)
	}
}

func TestGate_AsksOnceAndLetsGoOnceEnoughApproved(t *testing.T) {
	fx := newFixture(t)
	ctx := context.Background()
	if !fx.hold(t, time.Hour) || !fx.hold(t, time.Hour) {
		t.Fatal("the policy did not hold the deploy")
	}
	var n int
	must(t, fx.pool.QueryRow(ctx, `SELECT count(*) FROM approval_requests WHERE operation_id = $1`, fx.op).Scan(&n))
	if n != 1 {
		t.Fatalf("%d requests after asking twice, want 1", n)
	}
	req := fx.request(t)
	if req.ApprovalsRequired != 2 || req.ApproverRole != access.User || req.RequestedBy != "requester@t.example" || !req.CanDecide {
		t.Fatalf("request %+v", req)
	}

	_, err := fx.svc.Approve(ctx, fx.requester, req.ID, "")
	if !errors.Is(err, problem.ErrForbidden) {
		t.Fatalf("the requester's approval: %v", err)
	}
	got, err := fx.svc.Approve(ctx, fx.ann, req.ID, "one")
	must(t, err)
	if got.Status != "pending" || got.Approvals != 1 || got.CanDecide {
		t.Fatalf("after one of two approvals: %+v", got.Request)
	}
	_, err = fx.svc.Approve(ctx, fx.ann, req.ID, "")
	wantRule(t, err, "once")
	_, err = fx.svc.Reject(ctx, fx.ann, req.ID, "")
	wantRule(t, err, "once")
	if !strings.Contains(err.Error(), "you already approved this") {
		t.Fatalf("a second decision: %v", err)
	}
	_, err = fx.svc.Reject(ctx, fx.bob, req.ID, "  ")
	wantRule(t, err, "required")
	if status, _ := fx.status(t); status != "awaiting_approval" {
		t.Fatalf("after one of two approvals the operation is %s", status)
	}

	got, err = fx.svc.Approve(ctx, fx.bob, req.ID, "two")
	must(t, err)
	if got.Status != "approved" || got.Approvals != 2 || len(got.Decisions) != 2 {
		t.Fatalf("after both approvals: %+v", got)
	}
	if status, _ := fx.status(t); status != "queued" {
		t.Fatalf("the approved operation is %s, want queued", status)
	}
	must(t, fx.pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind = 'operation' AND args->>'operation_id' = $1`, fx.op.String()).Scan(&n))
	if n != 1 {
		t.Fatalf("%d jobs queued for the approved operation, want 1", n)
	}
	if fx.hold(t, time.Hour) {
		t.Fatal("the approved operation is held again")
	}
}

func TestDecide_AfterExpiryEndsTheOperation(t *testing.T) {
	fx := newFixture(t)
	ctx := context.Background()
	fx.hold(t, time.Hour)
	req := fx.request(t)
	fx.exec(t, `UPDATE approval_requests SET expires_at = now() - interval '1 second' WHERE id = $1`, req.ID)
	if got := fx.request(t); got.Status != "expired" || got.CanDecide {
		t.Fatalf("a request past its time lists as %s (can decide %v)", got.Status, got.CanDecide)
	}
	_, err := fx.svc.Approve(ctx, fx.ann, req.ID, "")
	wantRule(t, err, "expired")
	status, msg := fx.status(t)
	if status != "rejected" || !strings.Contains(msg, "expired") {
		t.Fatalf("the operation is %s (%s), want rejected for the expiry", status, msg)
	}
	var depStatus string
	must(t, fx.pool.QueryRow(ctx, `SELECT status FROM deployed_components WHERE id = $1`, fx.deployment).Scan(&depStatus))
	if depStatus != "failed" {
		t.Fatalf("a first deploy that expired left the deployment %s, want failed", depStatus)
	}
	_, err = fx.svc.Approve(ctx, fx.bob, req.ID, "")
	wantRule(t, err, "expired")
}

func TestExpireDue_EndsOnlyRequestsPastTheirTime(t *testing.T) {
	fx := newFixture(t)
	ctx := context.Background()
	fx.hold(t, time.Hour)
	if n, err := fx.svc.ExpireDue(ctx); err != nil || n != 0 {
		t.Fatalf("expired %d (%v) before their time", n, err)
	}
	fx.exec(t, `UPDATE approval_requests SET expires_at = now() - interval '1 second'`)
	if n, err := fx.svc.ExpireDue(ctx); err != nil || n != 1 {
		t.Fatalf("expired %d (%v), want 1", n, err)
	}
	if status, _ := fx.status(t); status != "rejected" {
		t.Fatalf("after the sweep the operation is %s", status)
	}
	var actor string
	must(t, fx.pool.QueryRow(ctx, `SELECT actor_email FROM audit_events WHERE action = 'approval.expire'`).Scan(&actor))
	if actor != "system" {
		t.Fatalf("the expiry is audited as %s", actor)
	}
}

func TestDecide_ChangeAfterThePreviewVoidsTheRequest(t *testing.T) {
	fx := newFixture(t)
	ctx := context.Background()
	fx.exec(t, `INSERT INTO operation_steps (operation_id, position, name, status) VALUES ($1, 0, 'preview', 'done'), ($1, 1, 'approve', 'pending')`, fx.op)
	fx.hold(t, time.Hour)
	req := fx.request(t)
	// Another operation changed the deployment after the preview.
	fx.exec(t, `INSERT INTO operations (deployment_id, kind, status, finished_at) VALUES ($1, 'update', 'succeeded', now() + interval '1 second')`, fx.deployment)
	_, err := fx.svc.Approve(ctx, fx.ann, req.ID, "")
	wantRule(t, err, "stale")
	var preview string
	must(t, fx.pool.QueryRow(ctx, `SELECT status FROM operation_steps WHERE operation_id = $1 AND name = 'preview'`, fx.op).Scan(&preview))
	if status, _ := fx.status(t); status != "queued" || preview != "pending" {
		t.Fatalf("after the void the operation is %s with its preview %s, want queued to preview again", status, preview)
	}
	if !fx.hold(t, time.Hour) {
		t.Fatal("after a new preview the operation does not ask again")
	}
	if again := fx.request(t); again.ID == req.ID || again.Status != "pending" {
		t.Fatalf("the operation waits on %+v", again)
	}
}

// TestWithdraw_ClosesTheRequestOfACancelledOperation: the approvals' reaction to
// deployment.cancelled closes the operation's request, and changes nothing when told again.
func TestWithdraw_ClosesTheRequestOfACancelledOperation(t *testing.T) {
	fx := newFixture(t)
	ctx := context.Background()
	if !fx.hold(t, time.Hour) {
		t.Fatal("the policy did not hold the deploy")
	}
	req := fx.request(t)
	cancelled := outbox.Logged{Type: "deployment.cancelled", Data: map[string]any{"operation": fx.op.String()}}
	for range 2 {
		must(t, db.BeginFunc(ctx, fx.pool, func(tx pgx.Tx) error { return Withdraw(ctx, tx, cancelled) }))
	}
	got, err := fx.svc.Get(ctx, fx.ann, req.ID)
	must(t, err)
	if got.Status != Cancelled {
		t.Fatalf("the request of the cancelled operation is %s", got.Status)
	}
	if err := db.BeginFunc(ctx, fx.pool, func(tx pgx.Tx) error {
		return Withdraw(ctx, tx, outbox.Logged{Type: "deployment.cancelled"})
	}); err == nil {
		t.Fatal("an event naming no operation was taken")
	}
}

// TestDecide_AfterACancelRefusesAndClosesTheRequest: a decision that comes between a cancel and
// the reaction to it is refused in words, and closes the request itself.
func TestDecide_AfterACancelRefusesAndClosesTheRequest(t *testing.T) {
	fx := newFixture(t)
	ctx := context.Background()
	if !fx.hold(t, time.Hour) {
		t.Fatal("the policy did not hold the deploy")
	}
	req := fx.request(t)
	fx.exec(t, `UPDATE operations SET status = 'cancelled' WHERE id = $1`, fx.op)
	_, err := fx.svc.Approve(ctx, fx.ann, req.ID, "late")
	wantRule(t, err, "state")
	if !strings.Contains(err.Error(), "its operation is cancelled") {
		t.Fatalf("the refusal: %v", err)
	}
	got, err := fx.svc.Get(ctx, fx.ann, req.ID)
	must(t, err)
	if got.Status != Cancelled || len(got.Decisions) != 0 {
		t.Fatalf("after a decision on a cancelled operation's request: %+v", got)
	}
}
