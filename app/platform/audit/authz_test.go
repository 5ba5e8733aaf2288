package audit_test

import (
	"context"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/audit"
)

var accountCases = map[string]apptest.AuthzCase{
	"audit.Service.List": {
		Refused: []apptest.Refusal{{Who: apptest.UserA, Want: problem.ErrForbidden}, {Who: apptest.AdminB, Want: apptest.ErrHidden}},
		Served:  []apptest.Actor{apptest.AdminA, apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			page, err := w.Audit.List(context.Background(), p, audit.Filter{Limit: 200})
			for _, e := range page.Events {
				if !p.ProviderAdmin && !p.Can(access.AuditRead, e.TenantID.UUID) {
					t.Errorf("%s sees event %s of tenant %v", p.Email, e.Action, e.TenantID)
				}
			}
			return apptest.Shown(page.Events, err, func(e audit.Entry) bool { return e.TenantID.UUID == w.A.ID })
		},
	},
}

// TestAuthz_Methods runs the authorization case of each of the package's data-access methods.
func TestAuthz_Methods(t *testing.T) { apptest.RunAuthz(t, accountCases) }
