package stack_test

import (
	"context"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/domain/stack"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
)

var stackCases = map[string]apptest.AuthzCase{
	"stack.Service.Create": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: apptest.Invalid("tenant_id")}, {Who: apptest.UserA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.AdminA, apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			_, err := w.Stacks.Create(context.Background(), p, stack.New{TenantID: &w.A.ID, Provider: "simcloud",
				Name: "made-by-" + p.UserID.String()[:8], Draft: apptest.RawDraft(t, apptest.StackDraft(w.Shared.ID, 1))})
			return err
		},
		Then: func(t *testing.T, w *apptest.World) {
			// A provider stack is the provider admins' alone.
			_, err := w.Stacks.Create(context.Background(), w.AdminA, stack.New{Provider: "simcloud", Name: "not-mine"})
			apptest.WantErr(t, err, problem.ErrForbidden)
		},
	},
	"stack.Service.Get": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.Stranger, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.AdminA, apptest.ReaderA, apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			_, err := w.Stacks.Get(context.Background(), p, w.PublishedStackOfA(t).ID)
			return err
		},
		Then: func(t *testing.T, w *apptest.World) {
			// Those who may not edit see neither an unpublished stack nor any draft.
			other, err := w.Stacks.Create(context.Background(), w.AdminA, stack.New{TenantID: &w.A.ID, Provider: "simcloud", Name: "unpublished"})
			apptest.Must(t, err)
			_, err = w.Stacks.Get(context.Background(), w.ReaderA, other.ID)
			apptest.WantErr(t, err, problem.ErrNotFound)
			got, err := w.Stacks.Get(context.Background(), w.ReaderA, w.SharedStack(t).ID)
			apptest.Must(t, err)
			if got.Draft != nil {
				t.Fatal("a reader sees the provider stack's draft")
			}
		},
	},
	"stack.Service.List": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: apptest.ErrHidden}, {Who: apptest.Stranger, Want: apptest.ErrHidden}},
		Served:  []apptest.Actor{apptest.ReaderA, apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			mine := w.PublishedStackOfA(t)
			got, err := w.Stacks.List(context.Background(), p, stack.Filter{})
			for _, st := range got {
				if st.TenantID != nil && !p.Member(*st.TenantID) {
					t.Errorf("%s lists stack %s of another tenant", p.Email, st.Name)
				}
			}
			return apptest.Shown(got, err, func(st stack.Stack) bool { return st.ID == mine.ID })
		},
		Then: func(t *testing.T, w *apptest.World) {
			shared := w.SharedStack(t)
			got, err := w.Stacks.List(context.Background(), w.AdminB, stack.Filter{Scope: "provider"})
			apptest.Must(t, apptest.Shown(got, err, func(st stack.Stack) bool { return st.ID == shared.ID }))
		},
	},
	"stack.Service.UpdateDraft": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.UserA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.AdminA, apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			_, err := w.Stacks.UpdateDraft(context.Background(), p, w.PublishedStackOfA(t).ID, stack.Draft{DisplayName: "Shop",
				Draft: apptest.RawDraft(t, apptest.StackDraft(w.Shared.ID, 1))})
			return err
		},
		Then: func(t *testing.T, w *apptest.World) {
			_, err := w.Stacks.UpdateDraft(context.Background(), w.AdminA, w.SharedStack(t).ID, stack.Draft{Draft: apptest.RawDraft(t, apptest.StackDraft(w.Shared.ID, 1))})
			apptest.WantErr(t, err, problem.ErrForbidden)
		},
	},
	"stack.Service.Delete": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.UserA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.AdminA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			return w.Stacks.Delete(context.Background(), p, w.PublishedStackOfA(t).ID)
		},
		Then: func(t *testing.T, w *apptest.World) {
			apptest.WantErr(t, w.Stacks.Delete(context.Background(), w.AdminA, w.SharedStack(t).ID), problem.ErrForbidden)
		},
	},
	"stack.Service.Publish": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.UserA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.AdminA, apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			_, err := w.Stacks.Publish(context.Background(), p, w.PublishedStackOfA(t).ID, "by "+p.Email)
			return err
		},
		Then: func(t *testing.T, w *apptest.World) {
			// A provider stack is published by provider admins alone.
			_, err := w.Stacks.Publish(context.Background(), w.AdminA, w.SharedStack(t).ID, "mine now")
			apptest.WantErr(t, err, problem.ErrForbidden)
		},
	},
	"stack.Service.Versions": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ReaderA, apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			got, err := w.Stacks.Versions(context.Background(), p, w.PublishedStackOfA(t).ID)
			return apptest.Shown(got, err, func(v stack.Version) bool { return v.Version == 1 })
		},
	},
	"stack.Service.Version": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ReaderA, apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			v, err := w.Stacks.Version(context.Background(), p, w.PublishedStackOfA(t).ID, 1)
			if err == nil && len(v.Definition.Operations) != 2 {
				t.Errorf("version 1 has operations %+v", v.Definition.Operations)
			}
			return err
		},
	},
	"stack.Service.Archive": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.UserA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.AdminA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			return w.Stacks.Archive(context.Background(), p, w.PublishedStackOfA(t).ID, 1)
		},
		Then: func(t *testing.T, w *apptest.World) {
			apptest.WantErr(t, w.Stacks.Archive(context.Background(), w.AdminA, w.SharedStack(t).ID, 1), problem.ErrForbidden)
		},
	},
	"stack.Service.Diff": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ReaderA, apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			_, err := w.Stacks.Diff(context.Background(), p, w.PublishedStackOfA(t).ID, stack.Compare{From: 1, To: 1})
			return err
		},
	},
	"stack.Service.Fork": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: apptest.Invalid("tenant_id")}, {Who: apptest.UserA, Want: problem.ErrForbidden}, {Who: apptest.Stranger, Want: apptest.Invalid("tenant_id")}},
		Served:  []apptest.Actor{apptest.AdminA, apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			_, err := w.Stacks.Fork(context.Background(), p, w.SharedStack(t).ID, stack.ForkRequest{TenantID: w.A.ID,
				Name: "fork-by-" + p.UserID.String()[:8]})
			return err
		},
		Then: func(t *testing.T, w *apptest.World) {
			// B's admin may fork into B, but not a stack of A's.
			_, err := w.Stacks.Fork(context.Background(), w.AdminB, w.PublishedStackOfA(t).ID, stack.ForkRequest{TenantID: w.B.ID, Name: "stolen"})
			apptest.WantErr(t, err, problem.ErrNotFound)
		},
	},
}

// TestAuthz_Methods runs the authorization case of each of the package's data-access methods.
func TestAuthz_Methods(t *testing.T) { apptest.RunAuthz(t, stackCases) }
