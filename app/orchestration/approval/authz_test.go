package approval_test

import (
	"context"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/cursor"
	"nimbus/app/kernel/problem"
	"nimbus/app/orchestration/approval"
)

// onDev is a policy on A's environment dev asking a tenant admin to approve each destroy.
func onDev(w *apptest.World, t *testing.T) approval.NewPolicy {
	return approval.NewPolicy{Scope: "environment", ScopeID: w.Dev(t).ID.String(), Operations: []string{"destroy"}, ApproverRole: "tenant_admin"}
}

var approvalCases = map[string]apptest.AuthzCase{
	"approval.Service.List": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: apptest.ErrHidden}},
		Served:  []apptest.Actor{apptest.ReaderA, apptest.AdminA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			req := w.Request(t)
			got, err := w.Approvals.List(context.Background(), p, "pending")
			for _, r := range got {
				// A's reader sees the request, not theirs to decide; A's admin may decide it.
				if r.ID == req.ID && r.CanDecide != p.HasRole(access.TenantAdmin, w.A.ID) {
					t.Errorf("%s may decide: %v", p.Email, r.CanDecide)
				}
			}
			return apptest.Shown(got, err, func(r approval.Request) bool { return r.ID == req.ID })
		},
		Then: func(t *testing.T, w *apptest.World) {
			got, err := w.Approvals.List(context.Background(), w.AdminB, "")
			apptest.Must(t, err)
			if len(got) != 0 {
				t.Fatalf("B lists A's requests: %v", got)
			}
		},
	},
	"approval.Service.ListPage": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: apptest.ErrHidden}},
		Served:  []apptest.Actor{apptest.ReaderA, apptest.AdminA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			req := w.Request(t)
			got, err := w.Approvals.ListPage(context.Background(), p, "pending", cursor.Cursor{}, 1)
			if len(got) > 1 {
				t.Errorf("a page of one holds %d", len(got))
			}
			return apptest.Shown(got, err, func(r approval.Request) bool { return r.ID == req.ID })
		},
	},
	"approval.Service.Queue": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: apptest.ErrHidden}},
		Served:  []apptest.Actor{apptest.ReaderA, apptest.AdminA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			req := w.Request(t)
			pending, decided, err := w.Approvals.Queue(context.Background(), p, 20)
			if len(decided) != 0 {
				t.Errorf("%s's queue shows decided requests: %v", p.Email, decided)
			}
			return apptest.Shown(pending, err, func(r approval.Request) bool { return r.ID == req.ID })
		},
	},
	"approval.Service.Get": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.AdminA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			got, err := w.Approvals.Get(context.Background(), p, w.Request(t).ID)
			if err == nil && (!got.CanDecide || got.Parameters["name"] != "web-1") {
				t.Errorf("A's admin gets %+v", got)
			}
			return err
		},
	},
	"approval.Service.Waiting": {
		// A request waits for those who may decide it; the user who asked may not.
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: apptest.ErrHidden}, {Who: apptest.ReaderA, Want: apptest.ErrHidden}, {Who: apptest.UserA, Want: apptest.ErrHidden}},
		Served:  []apptest.Actor{apptest.AdminA, apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			w.Request(t)
			n, err := w.Approvals.Waiting(context.Background(), p)
			switch {
			case err != nil:
				return err
			case n == 0:
				return apptest.ErrHidden
			case n != 1:
				t.Errorf("%s has %d waiting, want 1", p.Email, n)
			}
			return nil
		},
	},
	"approval.Service.Approve": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.UserA, Want: problem.ErrForbidden}, {Who: apptest.ReaderA, Want: problem.ErrForbidden}}, // A's user asked
		Served:  []apptest.Actor{apptest.AdminA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			got, err := w.Approvals.Approve(context.Background(), p, w.Request(t).ID, "ok")
			if err != nil {
				return err
			}
			if got.Status != "approved" {
				t.Errorf("after the approval: %+v", got)
			}
			if status, _ := w.OperationStatus(t, w.Web(t).Op.ID); status != "queued" {
				t.Errorf("the approved operation is %s, want queued again", status)
			}
			return nil
		},
	},
	"approval.Service.Reject": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.UserA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			got, err := w.Approvals.Reject(context.Background(), p, w.Request(t).ID, "no")
			if err != nil {
				return err
			}
			status, msg := w.OperationStatus(t, w.Web(t).Op.ID)
			if got.Status != "rejected" || status != "rejected" || msg != "rejected by root@example.com: no" {
				t.Errorf("after the rejection: request %s, operation %s %q", got.Status, status, msg)
			}
			return nil
		},
	},
	"approval.Service.CreatePolicy": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: apptest.Invalid("scope_id")}, {Who: apptest.UserA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.AdminA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			_, err := w.Approvals.CreatePolicy(context.Background(), p, onDev(w, t))
			return err
		},
		Then: func(t *testing.T, w *apptest.World) {
			// Component policies are the provider's.
			on := approval.NewPolicy{Scope: "component", ScopeID: w.Shared.ID.String(), Operations: []string{"destroy"}, ApproverRole: "tenant_admin"}
			_, err := w.Approvals.CreatePolicy(context.Background(), w.AdminA, on)
			apptest.WantErr(t, err, problem.ErrForbidden)
			_, err = w.Approvals.CreatePolicy(context.Background(), w.Admin, on)
			apptest.Must(t, err)
		},
	},
	"approval.Service.Policies": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: apptest.ErrHidden}},
		Served:  []apptest.Actor{apptest.ReaderA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			w.Request(t)
			got, err := w.Approvals.Policies(context.Background(), p)
			if err == nil && len(got) > 1 {
				t.Errorf("%s lists %+v", p.Email, got)
			}
			return apptest.Shown(got, err, func(pol approval.Policy) bool { return pol.Scope == "environment" && pol.ScopeID == w.Dev(t).ID })
		},
		Then: func(t *testing.T, w *apptest.World) {
			got, err := w.Approvals.Policies(context.Background(), w.AdminB)
			apptest.Must(t, err)
			if len(got) != 0 {
				t.Fatalf("B lists A's environment's policy: %v", got)
			}
		},
	},
	"approval.Service.DeletePolicy": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.UserA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.AdminA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			pol := apptest.Fixture(w, "policy", func() approval.Policy {
				pol, err := w.Approvals.CreatePolicy(context.Background(), w.AdminA, onDev(w, t))
				apptest.Must(t, err)
				return pol
			})
			return w.Approvals.DeletePolicy(context.Background(), p, pol.ID)
		},
		Then: func(t *testing.T, w *apptest.World) {
			// A component's policy binds every tenant: its tenants see it, and only the provider deletes it.
			pol, err := w.Approvals.CreatePolicy(context.Background(), w.Admin, approval.NewPolicy{Scope: "component", ScopeID: w.Shared.ID.String(),
				Operations: []string{"destroy"}, ApproverRole: "tenant_admin"})
			apptest.Must(t, err)
			apptest.WantErr(t, w.Approvals.DeletePolicy(context.Background(), w.AdminA, pol.ID), problem.ErrForbidden)
			apptest.Must(t, w.Approvals.DeletePolicy(context.Background(), w.Admin, pol.ID))
		},
	},
	"approval.Service.ScopeChoices": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: apptest.ErrHidden}, {Who: apptest.UserA, Want: apptest.ErrHidden}},
		Served:  []apptest.Actor{apptest.AdminA, apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			env := w.Dev(t)
			got, err := w.Approvals.ScopeChoices(context.Background(), p)
			for _, c := range got {
				if !p.ProviderAdmin && (c.Scope != "environment" || c.ID != env.ID) {
					t.Errorf("%s may set policies on %+v", p.Email, c)
				}
			}
			return apptest.Shown(got, err, func(c approval.Choice) bool { return c.Scope == "environment" && c.ID == env.ID })
		},
		Then: func(t *testing.T, w *apptest.World) {
			got, err := w.Approvals.ScopeChoices(context.Background(), w.Admin)
			apptest.Must(t, err)
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

// TestAuthz_Methods runs the authorization case of each of the package's data-access methods.
func TestAuthz_Methods(t *testing.T) { apptest.RunAuthz(t, approvalCases) }
