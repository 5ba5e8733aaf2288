package user_test

import (
	"context"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"

	"nimbus/app/apptest"
	"nimbus/app/domain/auth"
	"nimbus/app/domain/user"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
)

var accountCases = map[string]apptest.AuthzCase{
	"user.Service.List": {
		Refused: []apptest.Refusal{{Who: apptest.UserA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.AdminA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			got, err := w.Users.List(context.Background(), p)
			if err != nil {
				return err
			}
			for _, u := range got {
				if u.ID == w.AdminB.UserID || u.ID == w.Admin.UserID {
					t.Errorf("tenant admin of A sees %s, who is not in A", u.Email)
				}
			}
			if len(got) != 3 {
				t.Errorf("tenant admin of A sees %d users, want A's 3", len(got))
			}
			return nil
		},
	},
	"user.Service.Get": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.ReaderA, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.AdminA, apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			_, err := w.Users.Get(context.Background(), p, w.UserA.UserID)
			return err
		},
		Then: func(t *testing.T, w *apptest.World) {
			_, err := w.Users.Get(context.Background(), w.AdminA, w.AdminB.UserID)
			apptest.WantErr(t, err, problem.ErrNotFound)
		},
	},
	"user.Service.Create": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			_, err := w.Users.Create(context.Background(), p, user.NewUser{Email: "x@example.com", Password: "long enough password"})
			return err
		},
	},
	"user.Service.Update": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			disabled := true
			_, err := w.Users.Update(context.Background(), p, w.UserA.UserID, user.Change{Disabled: &disabled})
			return err
		},
	},
	"user.Service.ResetPassword": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			return w.Users.ResetPassword(context.Background(), p, w.UserA.UserID, "a brand new password")
		},
	},
	"user.Service.ResetSecondFactor": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}, {Who: apptest.AdminB, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			apptest.Fixture(w, "factor", func() bool {
				f := auth.NewFactors(w.Auth, w.Keys)
				e, err := f.Begin(context.Background(), w.UserA)
				apptest.Must(t, err)
				code, err := totp.GenerateCode(e.Secret, time.Now())
				apptest.Must(t, err)
				_, err = f.Confirm(context.Background(), w.UserA, code, "192.0.2.1")
				apptest.Must(t, err)
				return true
			})
			return w.Users.ResetSecondFactor(context.Background(), p, w.UserA.UserID)
		},
		Then: func(t *testing.T, w *apptest.World) {
			in, err := w.Auth.Login(context.Background(), w.UserA.Email, "long enough password", "192.0.2.1")
			apptest.Must(t, err)
			if in.Session.Secret == "" {
				t.Error("after the reset, the password alone does not sign in")
			}
		},
	},
	"user.Service.Remove": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			return w.Users.Remove(context.Background(), p, w.ReaderA.UserID)
		},
	},
}

// TestAuthz_Methods runs the authorization case of each of the package's data-access methods.
func TestAuthz_Methods(t *testing.T) { apptest.RunAuthz(t, accountCases) }
