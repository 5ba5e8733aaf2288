package instance_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/apptest"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/lifecycle"
	"nimbus/app/kernel/problem"
	"nimbus/app/orchestration/instance"
)

// instanceName is a stack instance's name for whoever deploys it, so that each served call
// makes its own.
func instanceName(p access.Principal) string { return strings.Split(p.Email, "@")[0] }

var instanceCases = map[string]apptest.AuthzCase{
	"instance.Service.Upgrade": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.ReaderA, Want: problem.ErrForbidden}, {Who: apptest.UserA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.AdminA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			active := w.ActiveStack(t)
			w.WebStackV2(t)
			inst, err := w.Instances.Upgrade(context.Background(), p, active.ID, 0)
			if err == nil && inst.Status != lifecycle.InstanceUpgrading {
				t.Errorf("an instance upgrading is %s", inst.Status)
			}
			return err
		},
		Then: func(t *testing.T, w *apptest.World) {
			later := w.DeployStack(t, "later")
			w.Settle(t, later.ID, "active", "active")
			_, err := w.Instances.Upgrade(context.Background(), w.AdminA, later.ID, 0)
			apptest.WantField(t, err, "version") // deployed at the latest version already
		},
	},
	"instance.Service.UpgradePlan": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.Stranger, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ReaderA, apptest.AdminA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			deploying := w.StackInstance(t)
			w.WebStackV2(t)
			plan, err := w.Instances.UpgradePlan(context.Background(), p, deploying.ID, 0)
			if err == nil && (plan.To != 2 || len(plan.Slots) != 1 || plan.Slots[0].Change != instance.Updated) {
				t.Errorf("upgrade plan %+v", plan)
			}
			return err
		},
	},
	"instance.Service.Deploy": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: apptest.Invalid("environment_id")}, {Who: apptest.ReaderA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.UserA, apptest.AdminA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			inst, err := w.Instances.Deploy(context.Background(), p, instance.Request{StackID: w.WebStackID(t), EnvironmentID: w.Dev(t).ID,
				Name: instanceName(p)})
			if err == nil && (inst.Status != lifecycle.InstanceDeploying || len(inst.Slots) != 1) {
				t.Errorf("a new instance is %s with slots %v", inst.Status, inst.Slots)
			}
			return err
		},
		Then: func(t *testing.T, w *apptest.World) {
			_, err := w.Instances.Deploy(context.Background(), w.UserA, instance.Request{StackID: w.WebStackID(t), EnvironmentID: w.Dev(t).ID, Name: "user-a"})
			apptest.WantField(t, err, "name") // the name is taken
		},
	},
	"instance.Service.DeployTx": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: apptest.Invalid("environment_id")}, {Who: apptest.ReaderA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.UserA, apptest.AdminA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			ctx, req := context.Background(), instance.Request{StackID: w.WebStackID(t), EnvironmentID: w.Dev(t).ID, Name: instanceName(p)}
			var id uuid.UUID
			err := w.InTx(func(tx pgx.Tx) (err error) {
				id, err = w.Instances.DeployTx(ctx, tx, p, req)
				return err
			})
			if err != nil {
				return err
			}
			inst, err := w.Instances.Get(ctx, p, id)
			apptest.Must(t, err)
			if inst.Status != lifecycle.InstanceDeploying || len(inst.Slots) != 1 {
				t.Errorf("a new instance is %s with slots %v", inst.Status, inst.Slots)
			}
			return nil
		},
	},
	"instance.Service.Destroy": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.ReaderA, Want: problem.ErrForbidden}, {Who: apptest.UserA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.AdminA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			_, err := w.Instances.Destroy(context.Background(), p, w.ActiveStack(t).ID)
			return err
		},
		Then: func(t *testing.T, w *apptest.World) {
			inst, err := w.Instances.Get(context.Background(), w.AdminA, w.ActiveStack(t).ID)
			apptest.Must(t, err)
			if inst.Status != lifecycle.InstanceDestroying {
				t.Fatalf("a destroyed instance is %s", inst.Status)
			}
		},
	},
	"instance.Service.DestroyTx": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.ReaderA, Want: problem.ErrForbidden}, {Who: apptest.UserA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.AdminA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			id := w.ActiveStack(t).ID
			return w.InTx(func(tx pgx.Tx) error { return w.Instances.DestroyTx(context.Background(), tx, p, id) })
		},
		Then: func(t *testing.T, w *apptest.World) {
			inst, err := w.Instances.Get(context.Background(), w.AdminA, w.ActiveStack(t).ID)
			apptest.Must(t, err)
			if inst.Status != lifecycle.InstanceDestroying {
				t.Fatalf("a destroyed instance is %s", inst.Status)
			}
		},
	},
	"instance.Service.Retry": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.ReaderA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.UserA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			inst, err := w.Instances.Retry(context.Background(), p, w.FailedStack(t).ID)
			if err == nil && inst.Status != lifecycle.InstanceDeploying {
				t.Errorf("a retried instance is %s", inst.Status)
			}
			return err
		},
		Then: func(t *testing.T, w *apptest.World) {
			_, err := w.Instances.Retry(context.Background(), w.UserA, w.StackInstance(t).ID)
			apptest.WantField(t, err, "instance") // not failed
		},
	},
	"instance.Service.Start": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.ReaderA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.UserA, apptest.AdminA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			inst, err := w.Instances.Start(context.Background(), p, w.PlanStack(t, instanceName(p)).ID, false)
			if err == nil && inst.Status != lifecycle.InstanceDeploying {
				t.Errorf("a plan deployed is %s", inst.Status)
			}
			return err
		},
		Then: func(t *testing.T, w *apptest.World) {
			_, err := w.Instances.Start(context.Background(), w.UserA, w.StackInstance(t).ID, false)
			apptest.WantField(t, err, "instance") // not pending
		},
	},
	"instance.Service.Discard": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.ReaderA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.UserA, apptest.AdminA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			// No worker took the plan's preview: it is withdrawn, and the plan ends at once.
			inst, err := w.Instances.Discard(context.Background(), p, w.PlanStack(t, instanceName(p)).ID)
			if err == nil && (inst.Status != lifecycle.InstanceDestroyed || inst.Slots[0].Status != "destroyed" || inst.Slots[0].Preview != nil) {
				t.Errorf("a plan discarded is %s with slots %+v", inst.Status, inst.Slots)
			}
			return err
		},
		Then: func(t *testing.T, w *apptest.World) {
			_, err := w.Instances.Discard(context.Background(), w.UserA, w.ActiveStack(t).ID)
			apptest.WantField(t, err, "instance") // not pending
		},
	},
	"instance.Service.Get": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.Stranger, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ReaderA, apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			_, err := w.Instances.Get(context.Background(), p, w.StackInstance(t).ID)
			return err
		},
	},
	"instance.Service.List": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: apptest.ErrHidden}, {Who: apptest.Stranger, Want: apptest.ErrHidden}},
		Served:  []apptest.Actor{apptest.ReaderA, apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			want := w.StackInstance(t).ID
			list, err := w.Instances.List(context.Background(), p, instance.Filter{})
			return apptest.Shown(list, err, func(i instance.Instance) bool { return i.ID == want })
		},
	},
	"instance.Service.Runs": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ReaderA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			runs, err := w.Instances.Runs(context.Background(), p, w.StackInstance(t).ID)
			return apptest.Shown(runs, err, func(r instance.Run) bool { return r.Kind == "deploy" })
		},
	},
	"instance.Service.Fire": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.ReaderA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.UserA, apptest.AdminA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			run, err := w.Instances.Fire(context.Background(), p, w.ActiveStack(t).ID, "maintain")
			if err == nil && (run.Kind != "transition" || run.Trigger != "maintain" || run.RequestedBy != p.Email) {
				t.Errorf("fired %+v", run)
			}
			return err
		},
		Then: func(t *testing.T, w *apptest.World) {
			// With no run under way, a trigger the state does not take is refused at once.
			inst := w.DeployStack(t, "idle")
			w.Settle(t, inst.ID, "active", "active")
			_, err := w.Instances.Fire(context.Background(), w.UserA, inst.ID, "resume")
			apptest.WantField(t, err, "trigger")
		},
	},
	"instance.Service.RunOperation": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.ReaderA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.UserA, apptest.AdminA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			run, err := w.Instances.RunOperation(context.Background(), p, w.ActiveStack(t).ID, "resize", map[string]any{"cores": 3.0})
			if err == nil && (run.Kind != "day2" || run.Operation != "resize") {
				t.Errorf("ran %+v", run)
			}
			return err
		},
		Then: func(t *testing.T, w *apptest.World) {
			_, err := w.Instances.RunOperation(context.Background(), w.UserA, w.ActiveStack(t).ID, "resize", map[string]any{"cores": "many"})
			apptest.WantField(t, err, "inputs.cores")
			_, err = w.Instances.RunOperation(context.Background(), w.UserA, w.ActiveStack(t).ID, "shrink", nil)
			apptest.WantField(t, err, "operation")
		},
	},
	"instance.Service.Operations": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ReaderA, apptest.UserA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			offers, err := w.Instances.Operations(context.Background(), p, w.ActiveStack(t).ID)
			may := p.Can(access.StackInstanceDay2, w.A.ID)
			for _, o := range offers {
				if o.Offered != may {
					t.Errorf("%s is offered %v to %s", o.Name, o.Offered, p.Email)
				}
			}
			return apptest.Shown(offers, err, func(o instance.Offer) bool { return o.Kind == "operation" && o.Name == "resize" })
		},
	},
	"instance.Service.History": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ReaderA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			h, err := w.Instances.History(context.Background(), p, w.ActiveStack(t).ID)
			return apptest.Shown(h, err, func(c instance.Change) bool { return c.To == "active" && c.Trigger == "deployed" })
		},
	},
}

// TestAuthz_Methods runs the authorization case of each of the package's data-access methods.
func TestAuthz_Methods(t *testing.T) { apptest.RunAuthz(t, instanceCases) }
