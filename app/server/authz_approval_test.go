package server_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"nimbus/app/access"
	"nimbus/app/approval"
	"nimbus/app/cursor"
	"nimbus/app/problem"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// request is tenant A's first deploy, by its user, waiting for one approval from a user of A
// under a policy on its environment, as the worker leaves it after the preview.
func (w *world) request(t *testing.T) approval.Request {
	return fixture(w, "request", func() approval.Request {
		ctx := context.Background()
		op := w.web(t).op
		_, err := w.approvals.CreatePolicy(ctx, w.adminA, approval.NewPolicy{Scope: "environment", ScopeID: w.dev(t).ID.String(),
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
		list, err := w.approvals.List(ctx, w.admin, "pending")
		must(t, err)
		if len(list) != 1 {
			t.Fatalf("pending requests %v", list)
		}
		return list[0]
	})
}

// operationStatus is the status of an operation, and its error.
func (w *world) operationStatus(t *testing.T, id uuid.UUID) (status, msg string) {
	t.Helper()
	must(t, w.pool.QueryRow(context.Background(), `SELECT status, error FROM operations WHERE id = $1`, id).Scan(&status, &msg))
	return status, msg
}

// onDev is a policy on A's environment dev asking a tenant admin to approve each destroy.
func onDev(w *world, t *testing.T) approval.NewPolicy {
	return approval.NewPolicy{Scope: "environment", ScopeID: w.dev(t).ID.String(), Operations: []string{"destroy"}, ApproverRole: "tenant_admin"}
}

var approvalCases = map[string]authzCase{
	"approval.Service.List": {
		refused: []refusal{{adminB, errHidden}},
		served:  []actor{readerA, adminA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			req := w.request(t)
			got, err := w.approvals.List(context.Background(), p, "pending")
			for _, r := range got {
				// A's reader sees the request, not theirs to decide; A's admin may decide it.
				if r.ID == req.ID && r.CanDecide != p.HasRole(access.TenantAdmin, w.a.ID) {
					t.Errorf("%s may decide: %v", p.Email, r.CanDecide)
				}
			}
			return shown(got, err, func(r approval.Request) bool { return r.ID == req.ID })
		},
		then: func(t *testing.T, w *world) {
			got, err := w.approvals.List(context.Background(), w.adminB, "")
			must(t, err)
			if len(got) != 0 {
				t.Fatalf("B lists A's requests: %v", got)
			}
		},
	},
	"approval.Service.ListPage": {
		refused: []refusal{{adminB, errHidden}},
		served:  []actor{readerA, adminA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			req := w.request(t)
			got, err := w.approvals.ListPage(context.Background(), p, "pending", cursor.Cursor{}, 1)
			if len(got) > 1 {
				t.Errorf("a page of one holds %d", len(got))
			}
			return shown(got, err, func(r approval.Request) bool { return r.ID == req.ID })
		},
	},
	"approval.Service.Get": {
		refused: []refusal{{adminB, problem.ErrNotFound}},
		served:  []actor{adminA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			got, err := w.approvals.Get(context.Background(), p, w.request(t).ID)
			if err == nil && (!got.CanDecide || got.Parameters["name"] != "web-1") {
				t.Errorf("A's admin gets %+v", got)
			}
			return err
		},
	},
	"approval.Service.Waiting": {
		// A request waits for those who may decide it; the user who asked may not.
		refused: []refusal{{adminB, errHidden}, {readerA, errHidden}, {userA, errHidden}},
		served:  []actor{adminA, providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			w.request(t)
			n, err := w.approvals.Waiting(context.Background(), p)
			switch {
			case err != nil:
				return err
			case n == 0:
				return errHidden
			case n != 1:
				t.Errorf("%s has %d waiting, want 1", p.Email, n)
			}
			return nil
		},
	},
	"approval.Service.Approve": {
		refused: []refusal{{adminB, problem.ErrNotFound}, {userA, problem.ErrForbidden}, {readerA, problem.ErrForbidden}}, // A's user asked
		served:  []actor{adminA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			got, err := w.approvals.Approve(context.Background(), p, w.request(t).ID, "ok")
			if err != nil {
				return err
			}
			if got.Status != "approved" {
				t.Errorf("after the approval: %+v", got)
			}
			if status, _ := w.operationStatus(t, w.web(t).op.ID); status != "queued" {
				t.Errorf("the approved operation is %s, want queued again", status)
			}
			return nil
		},
	},
	"approval.Service.Reject": {
		refused: []refusal{{adminB, problem.ErrNotFound}, {userA, problem.ErrForbidden}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			got, err := w.approvals.Reject(context.Background(), p, w.request(t).ID, "no")
			if err != nil {
				return err
			}
			status, msg := w.operationStatus(t, w.web(t).op.ID)
			if got.Status != "rejected" || status != "rejected" || msg != "rejected by root@example.com: no" {
				t.Errorf("after the rejection: request %s, operation %s %q", got.Status, status, msg)
			}
			return nil
		},
	},
	"approval.Service.CreatePolicy": {
		refused: []refusal{{adminB, invalid("scope_id")}, {userA, problem.ErrForbidden}},
		served:  []actor{adminA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			_, err := w.approvals.CreatePolicy(context.Background(), p, onDev(w, t))
			return err
		},
		then: func(t *testing.T, w *world) {
			// Component policies are the provider's.
			on := approval.NewPolicy{Scope: "component", ScopeID: w.shared.ID.String(), Operations: []string{"destroy"}, ApproverRole: "tenant_admin"}
			_, err := w.approvals.CreatePolicy(context.Background(), w.adminA, on)
			wantErr(t, err, problem.ErrForbidden)
			_, err = w.approvals.CreatePolicy(context.Background(), w.admin, on)
			must(t, err)
		},
	},
	"approval.Service.Policies": {
		refused: []refusal{{adminB, errHidden}},
		served:  []actor{readerA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			w.request(t)
			got, err := w.approvals.Policies(context.Background(), p)
			if err == nil && len(got) > 1 {
				t.Errorf("%s lists %+v", p.Email, got)
			}
			return shown(got, err, func(pol approval.Policy) bool { return pol.Scope == "environment" && pol.ScopeID == w.dev(t).ID })
		},
		then: func(t *testing.T, w *world) {
			got, err := w.approvals.Policies(context.Background(), w.adminB)
			must(t, err)
			if len(got) != 0 {
				t.Fatalf("B lists A's environment's policy: %v", got)
			}
		},
	},
	"approval.Service.DeletePolicy": {
		refused: []refusal{{adminB, problem.ErrNotFound}, {userA, problem.ErrForbidden}},
		served:  []actor{adminA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			pol := fixture(w, "policy", func() approval.Policy {
				pol, err := w.approvals.CreatePolicy(context.Background(), w.adminA, onDev(w, t))
				must(t, err)
				return pol
			})
			return w.approvals.DeletePolicy(context.Background(), p, pol.ID)
		},
		then: func(t *testing.T, w *world) {
			// A component's policy binds every tenant: its tenants see it, and only the provider deletes it.
			pol, err := w.approvals.CreatePolicy(context.Background(), w.admin, approval.NewPolicy{Scope: "component", ScopeID: w.shared.ID.String(),
				Operations: []string{"destroy"}, ApproverRole: "tenant_admin"})
			must(t, err)
			wantErr(t, w.approvals.DeletePolicy(context.Background(), w.adminA, pol.ID), problem.ErrForbidden)
			must(t, w.approvals.DeletePolicy(context.Background(), w.admin, pol.ID))
		},
	},
	"approval.Service.ScopeChoices": {
		refused: []refusal{{adminB, errHidden}, {userA, errHidden}},
		served:  []actor{adminA, providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			env := w.dev(t)
			got, err := w.approvals.ScopeChoices(context.Background(), p)
			for _, c := range got {
				if !p.ProviderAdmin && (c.Scope != "environment" || c.ID != env.ID) {
					t.Errorf("%s may set policies on %+v", p.Email, c)
				}
			}
			return shown(got, err, func(c approval.Choice) bool { return c.Scope == "environment" && c.ID == env.ID })
		},
		then: func(t *testing.T, w *world) {
			got, err := w.approvals.ScopeChoices(context.Background(), w.admin)
			must(t, err)
			scopes := map[string]bool{}
			for _, c := range got {
				scopes[c.Scope] = true
			}
			if !scopes["environment"] || !scopes["component"] {
				t.Fatalf("the provider admin may set policies on %+v", got)
			}
		},
	},
}
