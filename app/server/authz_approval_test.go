package server_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"nimbus/app/access"
	"nimbus/app/approval"
	"nimbus/app/deploy"
	"nimbus/app/problem"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// waiting sets up tenant A's first deploy, by its user, waiting for one approval from a user
// of A under a policy on its environment, as the worker leaves it after the preview.
func waiting(t *testing.T, w *world) (*approval.Service, approval.Request, deploy.Operation) {
	t.Helper()
	ctx := context.Background()
	_, env, _, op := deployed(t, w)
	svc := approval.NewService(w.pool, insertOnly(t, w.pool))
	_, err := svc.CreatePolicy(ctx, w.adminA, approval.NewPolicy{Scope: "environment", ScopeID: env.ID.String(),
		Operations: []string{"deploy"}, ApproverRole: "user"})
	must(t, err)
	err = db.Tx(ctx, w.pool, func(q *dbgen.Queries) error {
		row, err := q.GetOperation(ctx, op.ID)
		if err != nil {
			return err
		}
		dep, err := q.GetDeployment(ctx, op.DeploymentID)
		if err != nil {
			return err
		}
		if wait, err := approval.NewGate(time.Hour).Hold(ctx, q, row, dep); err != nil || !wait {
			return errors.Join(err, errors.New("the policy did not hold the deploy"))
		}
		_, err = w.pool.Exec(ctx, `UPDATE operations SET status = 'awaiting_approval' WHERE id = $1`, op.ID)
		return err
	})
	must(t, err)
	list, err := svc.List(ctx, w.admin, "pending")
	must(t, err)
	if len(list) != 1 {
		t.Fatalf("pending requests %v", list)
	}
	return svc, list[0], op
}

var approvalCases = map[string]func(t *testing.T, w *world){
	"approval.Service.List": func(t *testing.T, w *world) {
		svc, req, _ := waiting(t, w)
		got, err := svc.List(context.Background(), w.adminB, "")
		must(t, err)
		if len(got) != 0 {
			t.Fatalf("B lists A's requests: %v", got)
		}
		got, err = svc.List(context.Background(), w.readerA, "pending")
		must(t, err)
		if len(got) != 1 || got[0].ID != req.ID || got[0].CanDecide {
			t.Fatalf("A's reader lists %+v: want the request, not theirs to decide", got)
		}
	},
	"approval.Service.Get": func(t *testing.T, w *world) {
		svc, req, _ := waiting(t, w)
		_, err := svc.Get(context.Background(), w.adminB, req.ID)
		wantErr(t, err, problem.ErrNotFound)
		got, err := svc.Get(context.Background(), w.adminA, req.ID)
		must(t, err)
		if !got.CanDecide || got.Parameters["name"] != "web-1" {
			t.Fatalf("A's admin gets %+v", got)
		}
	},
	"approval.Service.Waiting": func(t *testing.T, w *world) {
		svc, _, _ := waiting(t, w)
		for _, c := range []struct {
			who   string
			actor access.Principal
			want  int
		}{
			{"B's admin", w.adminB, 0}, {"A's reader", w.readerA, 0}, {"A's user, who asked", w.userA, 0},
			{"A's admin", w.adminA, 1}, {"the provider admin", w.admin, 1},
		} {
			n, err := svc.Waiting(context.Background(), c.actor)
			must(t, err)
			if n != c.want {
				t.Errorf("%s has %d waiting, want %d", c.who, n, c.want)
			}
		}
	},
	"approval.Service.Approve": func(t *testing.T, w *world) {
		svc, req, op := waiting(t, w)
		ctx := context.Background()
		_, err := svc.Approve(ctx, w.adminB, req.ID, "")
		wantErr(t, err, problem.ErrNotFound)
		_, err = svc.Approve(ctx, w.userA, req.ID, "")
		wantErr(t, err, problem.ErrForbidden) // the requester
		_, err = svc.Approve(ctx, w.readerA, req.ID, "")
		wantErr(t, err, problem.ErrForbidden)
		got, err := svc.Approve(ctx, w.adminA, req.ID, "ok")
		must(t, err)
		if got.Status != "approved" {
			t.Fatalf("after the approval: %+v", got)
		}
		var status string
		must(t, w.pool.QueryRow(ctx, `SELECT status FROM operations WHERE id = $1`, op.ID).Scan(&status))
		if status != "queued" {
			t.Fatalf("the approved operation is %s, want queued again", status)
		}
	},
	"approval.Service.Reject": func(t *testing.T, w *world) {
		svc, req, op := waiting(t, w)
		ctx := context.Background()
		_, err := svc.Reject(ctx, w.adminB, req.ID, "")
		wantErr(t, err, problem.ErrNotFound)
		_, err = svc.Reject(ctx, w.userA, req.ID, "")
		wantErr(t, err, problem.ErrForbidden)
		got, err := svc.Reject(ctx, w.admin, req.ID, "no")
		must(t, err)
		var status, msg string
		must(t, w.pool.QueryRow(ctx, `SELECT status, error FROM operations WHERE id = $1`, op.ID).Scan(&status, &msg))
		if got.Status != "rejected" || status != "rejected" || msg != "rejected by root@example.com: no" {
			t.Fatalf("after the rejection: request %s, operation %s %q", got.Status, status, msg)
		}
	},
	"approval.Service.CreatePolicy": func(t *testing.T, w *world) {
		ctx := context.Background()
		_, env, _, _ := deployed(t, w)
		svc := approval.NewService(w.pool, insertOnly(t, w.pool))
		on := func(scope string, id uuid.UUID) approval.NewPolicy {
			return approval.NewPolicy{Scope: scope, ScopeID: id.String(), Operations: []string{"destroy"}, ApproverRole: "tenant_admin"}
		}
		_, err := svc.CreatePolicy(ctx, w.adminB, on("environment", env.ID))
		if problem.FieldOf(err) != "scope_id" {
			t.Fatalf("B's admin on A's environment: %v", err)
		}
		_, err = svc.CreatePolicy(ctx, w.userA, on("environment", env.ID))
		wantErr(t, err, problem.ErrForbidden)
		_, err = svc.CreatePolicy(ctx, w.adminA, on("component", w.shared.ID))
		wantErr(t, err, problem.ErrForbidden)
		_, err = svc.CreatePolicy(ctx, w.adminA, on("environment", env.ID))
		must(t, err)
		_, err = svc.CreatePolicy(ctx, w.admin, on("component", w.shared.ID))
		must(t, err)
	},
	"approval.Service.Policies": func(t *testing.T, w *world) {
		ctx := context.Background()
		svc, _, _ := waiting(t, w)
		got, err := svc.Policies(ctx, w.adminB)
		must(t, err)
		if len(got) != 0 {
			t.Fatalf("B lists A's environment's policy: %v", got)
		}
		got, err = svc.Policies(ctx, w.readerA)
		must(t, err)
		if len(got) != 1 || got[0].Scope != "environment" {
			t.Fatalf("A's reader lists %+v", got)
		}
	},
	"approval.Service.DeletePolicy": func(t *testing.T, w *world) {
		ctx := context.Background()
		svc, _, _ := waiting(t, w)
		list, err := svc.Policies(ctx, w.admin)
		must(t, err)
		id := list[0].ID
		wantErr(t, svc.DeletePolicy(ctx, w.adminB, id), problem.ErrNotFound)
		wantErr(t, svc.DeletePolicy(ctx, w.userA, id), problem.ErrForbidden)
		must(t, svc.DeletePolicy(ctx, w.adminA, id))
	},
	"approval.Service.ScopeChoices": func(t *testing.T, w *world) {
		ctx := context.Background()
		_, env, _, _ := deployed(t, w)
		svc := approval.NewService(w.pool, insertOnly(t, w.pool))
		for _, c := range []struct {
			who   string
			actor access.Principal
			want  int
		}{{"B's admin", w.adminB, 0}, {"A's user", w.userA, 0}, {"A's admin", w.adminA, 1}} {
			got, err := svc.ScopeChoices(ctx, c.actor)
			must(t, err)
			if len(got) != c.want || c.want == 1 && got[0].ID != env.ID {
				t.Errorf("%s may set policies on %+v", c.who, got)
			}
		}
		got, err := svc.ScopeChoices(ctx, w.admin)
		must(t, err)
		scopes := map[string]bool{}
		for _, c := range got {
			scopes[c.Scope] = true
		}
		if !scopes["environment"] || !scopes["component"] {
			t.Errorf("the provider admin may set policies on %+v", got)
		}
	},
}
