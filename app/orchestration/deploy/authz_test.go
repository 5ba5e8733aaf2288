package deploy_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/apptest"
	"nimbus/app/domain/inventory"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/app/orchestration/deploy"
)

// emptyState is the export of a stack with no resources.
const emptyState = `{"version": 3, "deployment": {"manifest": {"time": "2025-01-01T00:00:00Z", "magic": "", "version": ""}}}`

var deployCases = map[string]apptest.AuthzCase{
	"deploy.Service.Standing": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ReaderA, apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			live := w.Live(t)
			w.V2(t)
			got, err := w.Deploys.Standing(context.Background(), p, live.ID)
			// Only those who may upgrade the deployment are offered the second version.
			mayUpgrade := p.Can(access.ComponentUpgrade, w.A.ID)
			if err == nil && (len(got.InputSchema) == 0 || got.Fresh || (len(got.Upgrades) == 1) != mayUpgrade) {
				t.Errorf("%s: standing %+v", p.Email, got)
			}
			return err
		},
	},
	"deploy.Service.NeverDeployed": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ReaderA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			fresh, err := w.Deploys.NeverDeployed(context.Background(), p, w.Web(t).ID)
			if err == nil && !fresh {
				t.Error("a deployment in its first deploy counts as deployed")
			}
			return err
		},
	},
	"deploy.Service.AwaitedApproval": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ReaderA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			r := w.Request(t)
			got, err := w.Deploys.AwaitedApproval(context.Background(), p, r.OperationID)
			if err == nil && (got.ID != r.ID || got.Required != r.ApprovalsRequired || got.Approvals != 0) {
				t.Errorf("awaited %+v, want request %s", got, r.ID)
			}
			return err
		},
	},
	// What discovery found is the provider's to adopt: others do not see it.
	"deploy.Service.Adopt": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrNotFound}, {Who: apptest.UserA, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			env := w.Dev(t).ID
			_, err := w.Pool.Exec(context.Background(), `UPDATE environments SET landing_zone_id = $1 WHERE id = $2`, w.Zone(t).Zone.ID, env)
			apptest.Must(t, err)
			d, op, err := w.Deploys.Adopt(context.Background(), p, w.Found(t, string(inventory.Unmanaged)), deploy.Request{ComponentID: w.Shared.ID,
				EnvironmentID: env, Name: "adopted", Parameters: map[string]any{"name": "x"}})
			if err == nil && (d.Status != "pending" || op.Kind != "deploy" || op.Status != "queued") {
				t.Errorf("deployment %s, operation %s %s", d.Status, op.Kind, op.Status)
			}
			return err
		},
		Then: func(t *testing.T, w *apptest.World) {
			// A managed item is no one's to adopt; one being adopted is not adopted twice.
			_, _, err := w.Deploys.Adopt(context.Background(), w.Admin, w.Item(t), deploy.Request{ComponentID: w.Shared.ID,
				EnvironmentID: w.Dev(t).ID, Name: "managed", Parameters: map[string]any{"name": "x"}})
			apptest.WantField(t, err, "status")
			_, _, err = w.Deploys.Adopt(context.Background(), w.Admin, w.Found(t, string(inventory.Unmanaged)), deploy.Request{ComponentID: w.Shared.ID,
				EnvironmentID: w.Dev(t).ID, Name: "twice", Parameters: map[string]any{"name": "x"}})
			apptest.WantField(t, err, "status")
		},
	},
	"deploy.Service.Deploy": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: apptest.Invalid("environment_id")}, {Who: apptest.ReaderA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.UserA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			d, op, err := w.Deploys.Deploy(context.Background(), p, deploy.Request{ComponentID: w.Shared.ID, EnvironmentID: w.Dev(t).ID,
				Name: "other", Parameters: map[string]any{"name": "x"}})
			if err == nil && (d.Status != "pending" || op.Kind != "deploy" || op.Status != "queued") {
				t.Errorf("deployment %s, operation %s %s", d.Status, op.Kind, op.Status)
			}
			return err
		},
		Then: func(t *testing.T, w *apptest.World) {
			_, _, err := w.Deploys.Deploy(context.Background(), w.UserA, deploy.Request{ComponentID: w.OfA.ID, EnvironmentID: w.Dev(t).ID,
				Name: "unpublished", Parameters: map[string]any{"name": "x"}})
			apptest.WantField(t, err, "version")
		},
	},
	"deploy.Service.Review": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: apptest.Invalid("environment_id")}, {Who: apptest.ReaderA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.UserA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			return w.Deploys.Review(context.Background(), p, deploy.Request{ComponentID: w.Shared.ID, EnvironmentID: w.Dev(t).ID,
				Name: "reviewed", Parameters: map[string]any{"name": "x"}}, nil)
		},
		Then: func(t *testing.T, w *apptest.World) {
			// Reviewed, not recorded; and every problem at once.
			ds, err := w.Deploys.List(context.Background(), w.UserA, deploy.Filter{Search: "reviewed"})
			apptest.Must(t, err)
			if len(ds) != 0 {
				t.Errorf("a review recorded %v", ds)
			}
			err = w.Deploys.Review(context.Background(), w.UserA, deploy.Request{ComponentID: w.Shared.ID, EnvironmentID: w.Dev(t).ID,
				Name: "Not A Name", Parameters: map[string]any{"name": "x", "cores": "many"}}, nil)
			var v *problem.ValidationError
			if !errors.As(err, &v) || len(v.Fields) < 2 {
				t.Errorf("a review of a bad name and a bad input says %v, want both", err)
			}
		},
	},
	"deploy.Service.Plan": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: apptest.Invalid("environment_id")}, {Who: apptest.ReaderA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.UserA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			ctx, env := context.Background(), w.Dev(t).ID
			return w.InTx(func(tx pgx.Tx) error {
				id, err := w.Deploys.Plan(ctx, tx, p, deploy.Request{ComponentID: w.Shared.ID, EnvironmentID: env,
					Name: "planned", Parameters: map[string]any{"name": "x"}}, deploy.Owner{})
				if err != nil {
					return err
				}
				// Recorded, and left for the graph that planned it to start.
				var status string
				var operations int
				apptest.Must(t, tx.QueryRow(ctx, `SELECT status, (SELECT count(*) FROM operations WHERE deployment_id = $1)
					FROM deployed_components WHERE id = $1`, id).Scan(&status, &operations))
				if status != "pending" || operations != 0 {
					t.Errorf("a planned deployment is %s with %d operations", status, operations)
				}
				return nil
			})
		},
	},
	"deploy.Service.Destroy": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.UserA, Want: problem.ErrForbidden}}, // destroying is for tenant admins
		Served:  []apptest.Actor{apptest.AdminA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			op, err := w.Deploys.Destroy(context.Background(), p, w.Live(t).ID)
			if err == nil && (op.Kind != "destroy" || op.Status != "queued") {
				t.Errorf("destroy: %+v", op)
			}
			return err
		},
	},
	"deploy.Service.Get": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ReaderA, apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			got, err := w.Deploys.Get(context.Background(), p, w.Web(t).ID)
			if err == nil && (got.Parameters["name"] != "web-1" || got.Parameters["cores"] != 2.0) {
				t.Errorf("parameters %v: want the given name and the default cores", got.Parameters)
			}
			return err
		},
	},
	"deploy.Service.Peek": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ReaderA, apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			web := w.Web(t)
			got, err := w.Deploys.Peek(context.Background(), p, web.ID)
			if err == nil && (got.ID != web.ID || got.Environment != web.Environment || got.Parameters["name"] != "web-1") {
				t.Errorf("peeked at %+v, want %s in %s", got, web.Name, web.Environment)
			}
			return err
		},
	},
	"deploy.Service.Destroyers": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ReaderA, apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			got, err := w.Deploys.Destroyers(context.Background(), p, w.Web(t).ID)
			if err == nil && (len(got) != 1 || got[0] != w.AdminA.Email) {
				t.Errorf("the destroyers of a deployment of tenant A: %v, want its admin %s", got, w.AdminA.Email)
			}
			return err
		},
	},
	"deploy.Service.List": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: apptest.ErrHidden}},
		Served:  []apptest.Actor{apptest.ReaderA, apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			web := w.Web(t)
			got, err := w.Deploys.List(context.Background(), p, deploy.Filter{})
			return apptest.Shown(got, err, func(d deploy.Deployment) bool { return d.ID == web.ID })
		},
		Then: func(t *testing.T, w *apptest.World) {
			got, err := w.Deploys.List(context.Background(), w.AdminB, deploy.Filter{})
			apptest.Must(t, err)
			if len(got) != 0 {
				t.Fatalf("B lists A's deployments: %v", got)
			}
			got, err = w.Deploys.List(context.Background(), w.ReaderA, deploy.Filter{})
			apptest.Must(t, err)
			if len(got) != 1 {
				t.Fatalf("reader of A lists %d deployments", len(got))
			}
		},
	},
	"deploy.Service.FilterChoices": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: apptest.ErrHidden}},
		Served:  []apptest.Actor{apptest.ReaderA, apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			web := w.Web(t)
			envs, err := w.Deploys.FilterChoices(context.Background(), p, deploy.EnvironmentChoice, "", uuid.Nil)
			if err != nil {
				return err
			}
			comps, err := w.Deploys.FilterChoices(context.Background(), p, deploy.ComponentChoice, "", uuid.Nil)
			return apptest.Shown(envs, err, func(c deploy.Choice) bool {
				return c.ID == web.EnvironmentID && c.Name == web.Environment &&
					slices.ContainsFunc(comps, func(c deploy.Choice) bool { return c.ID == web.ComponentID && c.Name == web.Component })
			})
		},
		Then: func(t *testing.T, w *apptest.World) {
			// Neither chosen by its ID nor found by its name is another tenant's shown.
			web := w.Web(t)
			for kind, id := range map[string]uuid.UUID{deploy.EnvironmentChoice: web.EnvironmentID, deploy.ComponentChoice: web.ComponentID} {
				got, err := w.Deploys.FilterChoices(context.Background(), w.AdminB, kind, web.Environment, id)
				apptest.Must(t, err)
				if slices.ContainsFunc(got, func(c deploy.Choice) bool { return c.ID == id }) {
					t.Errorf("B is offered A's %s %s: %v", kind, id, got)
				}
			}
		},
	},
	"deploy.Service.Operation": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ReaderA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			got, err := w.Deploys.Operation(context.Background(), p, w.Web(t).Op.ID)
			if err == nil && (got.Status != "queued" || got.Kind != "deploy") {
				t.Errorf("operation %+v", got)
			}
			return err
		},
	},
	"deploy.Service.Operations": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: apptest.ErrHidden}},
		Served:  []apptest.Actor{apptest.ReaderA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			web := w.Web(t)
			ops, err := w.Deploys.Operations(context.Background(), p, deploy.Filter{DeploymentID: web.ID, Kind: "deploy", Status: "queued"})
			if err == nil && len(ops) > 1 {
				t.Errorf("operations %v", ops)
			}
			return apptest.Shown(ops, err, func(op deploy.Operation) bool { return op.ID == web.Op.ID })
		},
		Then: func(t *testing.T, w *apptest.World) {
			ops, err := w.Deploys.Operations(context.Background(), w.AdminB, deploy.Filter{DeploymentID: w.Web(t).ID})
			apptest.Must(t, err)
			if len(ops) != 0 {
				t.Fatalf("B lists A's operations: %v", ops)
			}
		},
	},
	"deploy.Service.Detail": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ReaderA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			op := w.Web(t).Op
			got, err := w.Deploys.Detail(context.Background(), p, op.ID)
			if err == nil && (got.ID != op.ID || got.Steps == nil || got.Resources == nil) {
				t.Errorf("detail %+v", got)
			}
			return err
		},
	},
	"deploy.Service.Preview": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.ReaderA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.UserA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			op, err := w.Deploys.Preview(context.Background(), p, w.Web(t).ID, deploy.Change{Parameters: map[string]any{"cores": 3.0}})
			return queued(t, op, err, "preview", 1) // behind the deploy
		},
	},
	"deploy.Service.Start": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.ReaderA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.UserA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			op, err := w.Deploys.Start(context.Background(), p, w.Previewed(t).ID, deploy.Change{})
			return queued(t, op, err, "deploy", 1) // behind the preview
		},
		Then: func(t *testing.T, w *apptest.World) {
			_, err := w.Deploys.Start(context.Background(), w.UserA, w.Web(t).ID, deploy.Change{})
			apptest.WantField(t, err, "deployment") // its first deploy is queued already
		},
	},
	"deploy.Service.Update": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.ReaderA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.UserA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			op, err := w.Deploys.Update(context.Background(), p, w.Live(t).ID, deploy.Change{Parameters: map[string]any{"cores": 3.0}})
			return queued(t, op, err, "update", 0)
		},
		Then: func(t *testing.T, w *apptest.World) {
			_, err := w.Deploys.Update(context.Background(), w.UserA, w.Web(t).ID, deploy.Change{Parameters: map[string]any{"cores": 3.0}})
			apptest.WantField(t, err, "deployment") // not deployed yet
		},
	},
	"deploy.Service.Upgrade": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.UserA, Want: problem.ErrForbidden}}, // upgrading is for tenant admins
		Served:  []apptest.Actor{apptest.AdminA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			d := w.Live(t)
			w.V2(t) // published after the deploy
			op, err := w.Deploys.Upgrade(context.Background(), p, d.ID, deploy.Change{})
			if err == nil && op.Version != 2 {
				t.Errorf("the upgrade brings version %d, want 2", op.Version)
			}
			return queued(t, op, err, "upgrade", 0)
		},
		Then: func(t *testing.T, w *apptest.World) {
			_, err := w.Deploys.Upgrade(context.Background(), w.AdminA, w.Web(t).ID, deploy.Change{})
			apptest.WantField(t, err, "deployment") // not deployed yet
		},
	},
	"deploy.Service.Refresh": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.ReaderA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.UserA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			op, err := w.Deploys.Refresh(context.Background(), p, w.Live(t).ID)
			return queued(t, op, err, "refresh", 0)
		},
		Then: func(t *testing.T, w *apptest.World) {
			_, err := w.Deploys.Refresh(context.Background(), w.UserA, w.Web(t).ID)
			apptest.WantField(t, err, "deployment") // not deployed yet
		},
	},
	"deploy.Service.State": {
		// The state holds every property: tenant admins only.
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.UserA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.AdminA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			d := apptest.Fixture(w, "restored", func() apptest.Deployment {
				d := w.Live(t)
				apptest.Must(t, w.States(t).RestoreState(context.Background(), w.Admin, d.ID, strings.NewReader(emptyState), int64(len(emptyState))))
				return d
			})
			state, err := w.States(t).State(context.Background(), p, d.ID)
			if err == nil && !strings.Contains(string(state), `"deployment"`) {
				t.Errorf("the export: %s", state)
			}
			return err
		},
	},
	"deploy.Service.RestoreState": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.AdminA, Want: problem.ErrForbidden}}, // provider admins only
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			return w.States(t).RestoreState(context.Background(), p, w.Live(t).ID, strings.NewReader(emptyState), int64(len(emptyState)))
		},
	},
	"deploy.Service.MayRestoreState": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.AdminA, Want: problem.ErrForbidden}}, // provider admins only
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			return w.States(t).MayRestoreState(context.Background(), p, w.Live(t).ID)
		},
	},
	"deploy.Service.Deployable": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.UserA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			env := w.Dev(t)
			got, err := w.Deploys.Deployable(context.Background(), p, w.PublishedA(t).ID)
			if err == nil && (len(got.Environments) != 1 || got.Environments[0].ID != env.ID) {
				t.Errorf("%s is offered %+v", p.Email, got.Environments)
			}
			return err
		},
		Then: func(t *testing.T, w *apptest.World) {
			got, err := w.Deploys.Deployable(context.Background(), w.UserA, w.Shared.ID)
			apptest.Must(t, err)
			if len(got.Environments) != 1 || got.Component != w.Shared.Name {
				t.Fatalf("deployable %+v", got)
			}
			got, err = w.Deploys.Deployable(context.Background(), w.AdminB, w.Shared.ID)
			apptest.Must(t, err)
			if len(got.Environments) != 0 {
				t.Fatalf("B is offered A's environments: %+v", got.Environments)
			}
		},
	},
	"deploy.Service.Apply": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.ReaderA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.UserA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			op, err := w.Deploys.Apply(context.Background(), p, w.Preview(t).ID)
			if err == nil && op.Parameters["cores"] != 3.0 {
				t.Errorf("the update applies %v, not what was previewed", op.Parameters)
			}
			return queued(t, op, err, "update", 0)
		},
		Then: func(t *testing.T, w *apptest.World) {
			preview, err := w.Deploys.Preview(context.Background(), w.UserA, w.Live(t).ID, deploy.Change{})
			apptest.Must(t, err)
			_, err = w.Deploys.Apply(context.Background(), w.UserA, preview.ID)
			apptest.WantField(t, err, "operation") // a preview that has not run
		},
	},
	"deploy.Service.FullLog": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ReaderA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			r, err := w.Deploys.FullLog(context.Background(), p, w.Web(t).Op.ID)
			if err == nil {
				r.Close()
			}
			return err
		},
	},
	"deploy.Service.Logs": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ReaderA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			_, err := w.Deploys.Logs(context.Background(), p, w.Web(t).Op.ID, 0)
			return err
		},
		Then: func(t *testing.T, w *apptest.World) {
			_, err := w.Deploys.Logs(context.Background(), w.ReaderA, uuid.New(), 0)
			apptest.WantErr(t, err, problem.ErrNotFound)
		},
	},
	"deploy.Service.Cancel": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.ReaderA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.UserA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			got, err := w.Deploys.Cancel(context.Background(), p, w.Web(t).Op.ID)
			if err == nil && got.Status != "cancelled" {
				t.Errorf("a queued operation cancelled is %s", got.Status)
			}
			return err
		},
		Then: func(t *testing.T, w *apptest.World) {
			_, err := w.Deploys.Cancel(context.Background(), w.UserA, w.Web(t).Op.ID)
			apptest.WantField(t, err, "operation") // cancelling twice
		},
	},
}

// TestAuthz_Methods runs the authorization case of each of the package's data-access methods.
func TestAuthz_Methods(t *testing.T) { apptest.RunAuthz(t, deployCases, driftCases, gitCases) }

// queued checks that a requested operation is of kind and queued with position operations
// before it; it passes err on.
func queued(t *testing.T, op deploy.Operation, err error, kind deploy.Kind, position int) error {
	t.Helper()
	if err == nil && (op.Kind != kind || op.Status != "queued" || op.Position != position) {
		t.Errorf("%s: %+v, want it queued with %d before it", kind, op, position)
	}
	return err
}
