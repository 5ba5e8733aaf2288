package auth_test

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/google/uuid"

	"nimbus/app/apptest"
	"nimbus/app/domain/auth"
	"nimbus/app/domain/elevation"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
)

var accountCases = map[string]apptest.AuthzCase{
	"auth.Service.ListTokens": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: apptest.ErrHidden}},
		Served:  []apptest.Actor{apptest.AdminA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			mine := w.TokenA(t)
			got, err := w.Auth.ListTokens(context.Background(), p)
			return apptest.Shown(got, err, func(tok auth.Token) bool { return tok.ID == mine.Token.ID })
		},
	},
	"auth.Service.CreateToken": {
		Open:   "every user makes tokens of their own, which act as them",
		Served: []apptest.Actor{apptest.ReaderA, apptest.Stranger},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			ctx := context.Background()
			tok, err := w.Auth.CreateToken(ctx, p, auth.TokenSpec{Name: "my token"})
			if err != nil {
				return err
			}
			got, err := w.Auth.TokenPrincipal(ctx, tok.Secret)
			apptest.Must(t, err)
			if got.UserID != p.UserID || got.ProviderAdmin != p.ProviderAdmin || !maps.Equal(got.Roles, p.Roles) {
				t.Errorf("the token of %s acts as %+v", p.Email, got)
			}
			return nil
		},
	},
	"auth.Service.RevokeToken": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.AdminA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			return w.Auth.RevokeToken(context.Background(), p, w.TokenA(t).Token.ID)
		},
		Then: func(t *testing.T, w *apptest.World) {
			_, err := w.Auth.TokenPrincipal(context.Background(), w.TokenA(t).Secret)
			apptest.WantErr(t, err, problem.ErrUnauthenticated)
		},
	},
	"auth.Service.Logout": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: apptest.ErrIgnored}}, // B cannot end A's session
		Served:  []apptest.Actor{apptest.AdminA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			ctx := context.Background()
			sess := apptest.Fixture(w, "session", func() auth.Session {
				in, err := w.Auth.Login(ctx, "admin-a@example.com", "long enough password", "192.0.2.1")
				apptest.Must(t, err)
				return in.Session
			})
			if err := w.Auth.Logout(ctx, p, sess.ID); err != nil {
				return err
			}
			_, _, err := w.Auth.SessionPrincipal(ctx, sess.Secret)
			if err == nil {
				return apptest.ErrIgnored
			}
			apptest.WantErr(t, err, problem.ErrUnauthenticated)
			return nil
		},
	},
	"auth.Service.Elevations": {
		Refused: []apptest.Refusal{{Who: apptest.ProviderAdmin, Want: apptest.ErrHidden}, {Who: apptest.AdminA, Want: apptest.ErrHidden}},
		Served:  []apptest.Actor{apptest.ReaderA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			e := apptest.Fixture(w, "elevation", func() elevation.Elevation {
				e, err := w.Elevations.Grant(context.Background(), w.Admin, elevation.Grant{UserID: w.ReaderA.UserID, TenantID: w.A.ID,
					Role: access.User, Duration: time.Hour, Reason: "a hand with the deploys"})
				apptest.Must(t, err)
				return e
			})
			got, err := w.Auth.Elevations(context.Background(), p)
			return apptest.Shown(got, err, func(h auth.HeldElevation) bool { return h.ID == e.ID })
		},
	},
	"auth.Service.TokenTenants": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: apptest.ErrHidden}, {Who: apptest.Stranger, Want: apptest.ErrHidden}},
		Served:  []apptest.Actor{apptest.AdminA, apptest.ReaderA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			got, err := w.Auth.TokenTenants(context.Background(), p)
			return apptest.Shown(got, err, func(c auth.TenantChoice) bool { return c.ID == w.A.ID })
		},
	},
	"auth.Service.ChangePassword": {
		Open:   "every user changes their own password, knowing the current one; nobody else's",
		Served: []apptest.Actor{apptest.ReaderA, apptest.Stranger},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			ctx := context.Background()
			if err := w.Auth.ChangePassword(ctx, p, uuid.Nil, "long enough password", "another long password"); err != nil {
				return err
			}
			if _, err := w.Auth.Login(ctx, p.Email, "another long password", "192.0.2.9"); err != nil {
				t.Errorf("%s cannot sign in with the new password: %v", p.Email, err)
			}
			return nil
		},
	},
}

// setProvider configures an identity provider of the test's own, as the provider admin.
func setProvider(t *testing.T, w *apptest.World) {
	t.Helper()
	p := apptest.NewOpenIDProvider(t, "http://127.0.0.1")
	_, err := auth.NewSSO(w.Auth, w.Keys).Set(context.Background(), w.Admin, p.Settings("a-admins = tenant_admin Tenant A"))
	apptest.Must(t, err)
}

var ssoCases = map[string]apptest.AuthzCase{
	"auth.SSO.Provider": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrNotFound}, {Who: apptest.UserA, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			apptest.Fixture(w, "provider", func() bool { setProvider(t, w); return true })
			got, err := auth.NewSSO(w.Auth, w.Keys).Provider(context.Background(), p)
			if err == nil && (got == nil || len(got.Mappings) != 1) {
				t.Errorf("the provider's settings = %+v", got)
			}
			return err
		},
	},
	"auth.SSO.Set": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}, {Who: apptest.UserA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			op := apptest.NewOpenIDProvider(t, "http://127.0.0.1")
			_, err := auth.NewSSO(w.Auth, w.Keys).Set(context.Background(), p, op.Settings(""))
			return err
		},
	},
	"auth.SSO.Remove": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}, {Who: apptest.UserA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			setProvider(t, w)
			return auth.NewSSO(w.Auth, w.Keys).Remove(context.Background(), p)
		},
	},
}

var factorCases = map[string]apptest.AuthzCase{
	"auth.Factors.Status": {
		Open:   "every user reads their own second factor's state; nobody else's",
		Served: []apptest.Actor{apptest.ReaderA, apptest.Stranger},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			st, err := factorsAt(w, clockAt).Status(context.Background(), p)
			if err == nil && (st.Enabled || st.Pending != nil) {
				t.Errorf("%s has a second factor they never set up: %+v", p.Email, st)
			}
			return err
		},
	},
	"auth.Factors.Begin": {
		Open:   "every local user sets up their own second factor; nobody else's",
		Served: []apptest.Actor{apptest.ReaderA, apptest.Stranger},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			_, err := factorsAt(w, clockAt).Begin(context.Background(), p)
			return err
		},
	},
	"auth.Factors.Confirm": {
		Open:   "every local user turns on their own second factor, with a code of it; nobody else's",
		Served: []apptest.Actor{apptest.ReaderA, apptest.Stranger},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			f := factorsAt(w, clockAt)
			e, err := f.Begin(context.Background(), p)
			apptest.Must(t, err)
			_, err = f.Confirm(context.Background(), p, code(t, e.Secret, 0), "192.0.2.1")
			return err
		},
	},
	"auth.Factors.Disable": {
		Open:   "every user turns off their own second factor, with a code of it; nobody else's",
		Served: []apptest.Actor{apptest.ReaderA, apptest.Stranger},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			f := factorsAt(w, clockAt)
			_, codes := enrol(t, f, p)
			return f.Disable(context.Background(), p, codes[0], "192.0.2.1")
		},
	},
	"auth.Factors.RegenerateRecovery": {
		Open:   "every user replaces their own recovery codes, with a code of their factor; nobody else's",
		Served: []apptest.Actor{apptest.ReaderA, apptest.Stranger},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			f := factorsAt(w, clockAt)
			secret, _ := enrol(t, f, p)
			_, err := f.RegenerateRecovery(context.Background(), p, code(t, secret, 0), "192.0.2.1")
			return err
		},
	},
	"auth.Factors.Keys": {
		Open:   "every user lists their own security keys; nobody else's",
		Served: []apptest.Actor{apptest.ReaderA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			f := factorsAt(w, clockAt)
			apptest.Fixture(w, "key", func() bool { enrol(t, f, w.ReaderA); addKey(t, f, w.ReaderA); return true })
			keys, err := f.Keys(context.Background(), p)
			return apptest.Shown(keys, err, func(k auth.SecurityKey) bool { return k.Name == "soft key" })
		},
	},
	"auth.Factors.BeginKey": {
		Open:   "every user with the authenticator app on adds security keys of their own; nobody else's",
		Served: []apptest.Actor{apptest.ReaderA, apptest.Stranger},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			f := factorsAt(w, clockAt)
			enrol(t, f, p)
			_, err := f.BeginKey(context.Background(), p, keyOrigin)
			return err
		},
	},
	"auth.Factors.FinishKey": {
		Open:   "every user with the authenticator app on adds security keys of their own; nobody else's",
		Served: []apptest.Actor{apptest.ReaderA, apptest.Stranger},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			f := factorsAt(w, clockAt)
			enrol(t, f, p)
			opts, err := f.BeginKey(context.Background(), p, keyOrigin)
			apptest.Must(t, err)
			return f.FinishKey(context.Background(), p, keyOrigin, "soft key", newSoftKey(t).create(t, opts))
		},
	},
}

// TestAuthz_Methods runs the authorization case of each of the package's data-access methods.
func TestAuthz_Methods(t *testing.T) { apptest.RunAuthz(t, accountCases, ssoCases, factorCases) }
