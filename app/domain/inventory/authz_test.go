package inventory_test

import (
	"context"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/domain/inventory"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
)

var inventoryCases = map[string]apptest.AuthzCase{
	"inventory.Service.List": {
		Refused: []apptest.Refusal{{Who: apptest.Stranger, Want: problem.ErrForbidden}, {Who: apptest.AdminB, Want: apptest.ErrHidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin, apptest.AdminA, apptest.UserA, apptest.ReaderA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			item := w.Item(t)
			page, err := w.Inventory.List(context.Background(), p, inventory.Filter{Search: "10.0.0.7"})
			return apptest.Shown(page.Items, err, func(it inventory.Item) bool { return it.ID == item })
		},
	},
	"inventory.Service.Get": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.Stranger, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ProviderAdmin, apptest.AdminA, apptest.UserA, apptest.ReaderA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			_, err := w.Inventory.Get(context.Background(), p, w.Item(t))
			return err
		},
	},
	// What discovery found is the provider's: no tenant's admin sees it to set it aside.
	"inventory.Service.Ignore": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrNotFound}, {Who: apptest.Stranger, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			_, err := w.Inventory.Ignore(context.Background(), p, w.Found(t, string(inventory.Unmanaged)))
			return err
		},
		Then: func(t *testing.T, w *apptest.World) {
			// A tenant's own item is theirs to see, not to set aside.
			_, err := w.Inventory.Ignore(context.Background(), w.AdminA, w.Item(t))
			apptest.WantErr(t, err, problem.ErrForbidden)
		},
	},
	"inventory.Service.Unignore": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrNotFound}, {Who: apptest.UserA, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			_, err := w.Inventory.Unignore(context.Background(), p, w.Found(t, string(inventory.Ignored)))
			return err
		},
	},
}

// TestAuthz_Methods runs the authorization case of each of the package's data-access methods.
func TestAuthz_Methods(t *testing.T) { apptest.RunAuthz(t, inventoryCases) }
