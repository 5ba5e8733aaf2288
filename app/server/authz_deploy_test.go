package server_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/google/uuid"

	"nimbus/app/access"
	"nimbus/app/deploy"
	"nimbus/app/problem"
	"nimbus/app/pulumix"
)

// deployment is a deployment and the operation that made it, or the last one on it.
type deployment struct {
	deploy.Deployment
	op deploy.Operation
}

// deployA has A's user deploy the shared machine into A's environment dev, under name.
func (w *world) deployA(t *testing.T, name string, previewOnly bool) deployment {
	t.Helper()
	d, op, err := w.deploys.Deploy(context.Background(), w.userA, deploy.Request{ComponentID: w.shared.ID, EnvironmentID: w.dev(t).ID,
		Name: name, Parameters: map[string]any{"name": name + "-1"}, PreviewOnly: previewOnly})
	must(t, err)
	return deployment{Deployment: d, op: op}
}

// web is a deployment of tenant A whose first deploy is queued.
func (w *world) web(t *testing.T) deployment {
	return fixture(w, "web", func() deployment { return w.deployA(t, "web", false) })
}

// previewed is a deployment of tenant A that was only asked to be previewed: pending, its
// preview queued.
func (w *world) previewed(t *testing.T) deployment {
	return fixture(w, "previewed", func() deployment { return w.deployA(t, "api", true) })
}

// live is a deployment of tenant A that is deployed, as a worker leaves it after its first
// deploy succeeded.
func (w *world) live(t *testing.T) deployment {
	return fixture(w, "live", func() deployment {
		ctx := context.Background()
		d := w.deployA(t, "db", false)
		w.succeed(t, d.op.ID)
		_, err := w.pool.Exec(ctx, `UPDATE deployed_components SET status = 'deployed' WHERE id = $1`, d.ID)
		must(t, err)
		return d
	})
}

// succeed ends an operation as a worker does when it succeeded.
func (w *world) succeed(t *testing.T, id uuid.UUID) {
	t.Helper()
	_, err := w.pool.Exec(context.Background(),
		`UPDATE operations SET status = 'succeeded', started_at = now(), finished_at = now() WHERE id = $1`, id)
	must(t, err)
}

// preview is a preview of the live deployment, by A's user, that succeeded.
func (w *world) preview(t *testing.T) deploy.Operation {
	return fixture(w, "preview", func() deploy.Operation {
		op, err := w.deploys.Preview(context.Background(), w.userA, w.live(t).ID, deploy.Change{Parameters: map[string]any{"cores": 3.0}})
		must(t, err)
		w.succeed(t, op.ID)
		return op
	})
}

// v2 is the shared machine's second version, which the live deployment may be upgraded to.
func (w *world) v2(t *testing.T) {
	fixture(w, "v2", func() bool {
		_, err := w.components.Publish(context.Background(), w.admin, w.shared.ID, w.shared.Revision, "second")
		must(t, err)
		return true
	})
}

// states is a deploy service with the Pulumi CLI, for the methods that read or write a stack's
// state; exporting and importing state runs the CLI, never a program.
func (w *world) states(t *testing.T) *deploy.Service {
	return fixture(w, "states", func() *deploy.Service {
		runner, err := pulumix.NewRunner(os.Getenv("NIMBUS_PULUMI_DIR"), t.TempDir(), nil)
		if err != nil {
			t.Fatalf("a stack's state is read and written by the Pulumi CLI: %v", err)
		}
		return deploy.NewService(w.pool, w.keys, insertOnly(t, w.pool), runner, nil)
	})
}

// emptyState is the export of a stack with no resources.
const emptyState = `{"version": 3, "deployment": {"manifest": {"time": "2025-01-01T00:00:00Z", "magic": "", "version": ""}}}`

var deployCases = map[string]authzCase{
	"deploy.Service.Standing": {
		refused: []refusal{{adminB, problem.ErrNotFound}},
		served:  []actor{readerA, providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			live := w.live(t)
			w.v2(t)
			got, err := w.deploys.Standing(context.Background(), p, live.ID)
			// Only those who may upgrade the deployment are offered the second version.
			mayUpgrade := p.Can(access.ComponentUpgrade, w.a.ID)
			if err == nil && (len(got.InputSchema) == 0 || got.Fresh || (len(got.Upgrades) == 1) != mayUpgrade) {
				t.Errorf("%s: standing %+v", p.Email, got)
			}
			return err
		},
	},
	"deploy.Service.NeverDeployed": {
		refused: []refusal{{adminB, problem.ErrNotFound}},
		served:  []actor{readerA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			fresh, err := w.deploys.NeverDeployed(context.Background(), p, w.web(t).ID)
			if err == nil && !fresh {
				t.Error("a deployment in its first deploy counts as deployed")
			}
			return err
		},
	},
	"deploy.Service.AwaitedApproval": {
		refused: []refusal{{adminB, problem.ErrNotFound}},
		served:  []actor{readerA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			r := w.request(t)
			got, err := w.deploys.AwaitedApproval(context.Background(), p, r.OperationID)
			if err == nil && (got.ID != r.ID || got.Required != r.ApprovalsRequired || got.Approvals != 0) {
				t.Errorf("awaited %+v, want request %s", got, r.ID)
			}
			return err
		},
	},
	"deploy.Service.Deploy": {
		refused: []refusal{{adminB, invalid("environment_id")}, {readerA, problem.ErrForbidden}},
		served:  []actor{userA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			d, op, err := w.deploys.Deploy(context.Background(), p, deploy.Request{ComponentID: w.shared.ID, EnvironmentID: w.dev(t).ID,
				Name: "other", Parameters: map[string]any{"name": "x"}})
			if err == nil && (d.Status != "pending" || op.Kind != "deploy" || op.Status != "queued") {
				t.Errorf("deployment %s, operation %s %s", d.Status, op.Kind, op.Status)
			}
			return err
		},
		then: func(t *testing.T, w *world) {
			_, _, err := w.deploys.Deploy(context.Background(), w.userA, deploy.Request{ComponentID: w.ofA.ID, EnvironmentID: w.dev(t).ID,
				Name: "unpublished", Parameters: map[string]any{"name": "x"}})
			wantField(t, err, "version")
		},
	},
	"deploy.Service.Destroy": {
		refused: []refusal{{adminB, problem.ErrNotFound}, {userA, problem.ErrForbidden}}, // destroying is for tenant admins
		served:  []actor{adminA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			op, err := w.deploys.Destroy(context.Background(), p, w.live(t).ID)
			if err == nil && (op.Kind != "destroy" || op.Status != "queued") {
				t.Errorf("destroy: %+v", op)
			}
			return err
		},
	},
	"deploy.Service.Get": {
		refused: []refusal{{adminB, problem.ErrNotFound}},
		served:  []actor{readerA, providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			got, err := w.deploys.Get(context.Background(), p, w.web(t).ID)
			if err == nil && (got.Parameters["name"] != "web-1" || got.Parameters["cores"] != 2.0) {
				t.Errorf("parameters %v: want the given name and the default cores", got.Parameters)
			}
			return err
		},
	},
	"deploy.Service.List": {
		refused: []refusal{{adminB, errHidden}},
		served:  []actor{readerA, providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			web := w.web(t)
			got, err := w.deploys.List(context.Background(), p, deploy.Filter{})
			return shown(got, err, func(d deploy.Deployment) bool { return d.ID == web.ID })
		},
		then: func(t *testing.T, w *world) {
			got, err := w.deploys.List(context.Background(), w.adminB, deploy.Filter{})
			must(t, err)
			if len(got) != 0 {
				t.Fatalf("B lists A's deployments: %v", got)
			}
			got, err = w.deploys.List(context.Background(), w.readerA, deploy.Filter{})
			must(t, err)
			if len(got) != 1 {
				t.Fatalf("reader of A lists %d deployments", len(got))
			}
		},
	},
	"deploy.Service.Operation": {
		refused: []refusal{{adminB, problem.ErrNotFound}},
		served:  []actor{readerA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			got, err := w.deploys.Operation(context.Background(), p, w.web(t).op.ID)
			if err == nil && (got.Status != "queued" || got.Kind != "deploy") {
				t.Errorf("operation %+v", got)
			}
			return err
		},
	},
	"deploy.Service.Operations": {
		refused: []refusal{{adminB, errHidden}},
		served:  []actor{readerA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			web := w.web(t)
			ops, err := w.deploys.Operations(context.Background(), p, deploy.Filter{DeploymentID: web.ID, Kind: "deploy", Status: "queued"})
			if err == nil && len(ops) > 1 {
				t.Errorf("operations %v", ops)
			}
			return shown(ops, err, func(op deploy.Operation) bool { return op.ID == web.op.ID })
		},
		then: func(t *testing.T, w *world) {
			ops, err := w.deploys.Operations(context.Background(), w.adminB, deploy.Filter{DeploymentID: w.web(t).ID})
			must(t, err)
			if len(ops) != 0 {
				t.Fatalf("B lists A's operations: %v", ops)
			}
		},
	},
	"deploy.Service.Detail": {
		refused: []refusal{{adminB, problem.ErrNotFound}},
		served:  []actor{readerA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			op := w.web(t).op
			got, err := w.deploys.Detail(context.Background(), p, op.ID)
			if err == nil && (got.ID != op.ID || got.Steps == nil || got.Resources == nil) {
				t.Errorf("detail %+v", got)
			}
			return err
		},
	},
	"deploy.Service.Preview": {
		refused: []refusal{{adminB, problem.ErrNotFound}, {readerA, problem.ErrForbidden}},
		served:  []actor{userA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			op, err := w.deploys.Preview(context.Background(), p, w.web(t).ID, deploy.Change{Parameters: map[string]any{"cores": 3.0}})
			return queued(t, op, err, "preview", 1) // behind the deploy
		},
	},
	"deploy.Service.Start": {
		refused: []refusal{{adminB, problem.ErrNotFound}, {readerA, problem.ErrForbidden}},
		served:  []actor{userA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			op, err := w.deploys.Start(context.Background(), p, w.previewed(t).ID, deploy.Change{})
			return queued(t, op, err, "deploy", 1) // behind the preview
		},
		then: func(t *testing.T, w *world) {
			_, err := w.deploys.Start(context.Background(), w.userA, w.web(t).ID, deploy.Change{})
			wantField(t, err, "deployment") // its first deploy is queued already
		},
	},
	"deploy.Service.Update": {
		refused: []refusal{{adminB, problem.ErrNotFound}, {readerA, problem.ErrForbidden}},
		served:  []actor{userA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			op, err := w.deploys.Update(context.Background(), p, w.live(t).ID, deploy.Change{Parameters: map[string]any{"cores": 3.0}})
			return queued(t, op, err, "update", 0)
		},
		then: func(t *testing.T, w *world) {
			_, err := w.deploys.Update(context.Background(), w.userA, w.web(t).ID, deploy.Change{Parameters: map[string]any{"cores": 3.0}})
			wantField(t, err, "deployment") // not deployed yet
		},
	},
	"deploy.Service.Upgrade": {
		refused: []refusal{{adminB, problem.ErrNotFound}, {userA, problem.ErrForbidden}}, // upgrading is for tenant admins
		served:  []actor{adminA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			d := w.live(t)
			w.v2(t) // published after the deploy
			op, err := w.deploys.Upgrade(context.Background(), p, d.ID, deploy.Change{})
			if err == nil && op.Version != 2 {
				t.Errorf("the upgrade brings version %d, want 2", op.Version)
			}
			return queued(t, op, err, "upgrade", 0)
		},
		then: func(t *testing.T, w *world) {
			_, err := w.deploys.Upgrade(context.Background(), w.adminA, w.web(t).ID, deploy.Change{})
			wantField(t, err, "deployment") // not deployed yet
		},
	},
	"deploy.Service.Refresh": {
		refused: []refusal{{adminB, problem.ErrNotFound}, {readerA, problem.ErrForbidden}},
		served:  []actor{userA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			op, err := w.deploys.Refresh(context.Background(), p, w.live(t).ID)
			return queued(t, op, err, "refresh", 0)
		},
		then: func(t *testing.T, w *world) {
			_, err := w.deploys.Refresh(context.Background(), w.userA, w.web(t).ID)
			wantField(t, err, "deployment") // not deployed yet
		},
	},
	"deploy.Service.State": {
		// The state holds every property: tenant admins only.
		refused: []refusal{{adminB, problem.ErrNotFound}, {userA, problem.ErrForbidden}},
		served:  []actor{adminA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			d := fixture(w, "restored", func() deployment {
				d := w.live(t)
				must(t, w.states(t).RestoreState(context.Background(), w.admin, d.ID, strings.NewReader(emptyState), int64(len(emptyState))))
				return d
			})
			state, err := w.states(t).State(context.Background(), p, d.ID)
			if err == nil && !strings.Contains(string(state), `"deployment"`) {
				t.Errorf("the export: %s", state)
			}
			return err
		},
	},
	"deploy.Service.RestoreState": {
		refused: []refusal{{adminB, problem.ErrNotFound}, {adminA, problem.ErrForbidden}}, // provider admins only
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			return w.states(t).RestoreState(context.Background(), p, w.live(t).ID, strings.NewReader(emptyState), int64(len(emptyState)))
		},
	},
	"deploy.Service.MayRestoreState": {
		refused: []refusal{{adminB, problem.ErrNotFound}, {adminA, problem.ErrForbidden}}, // provider admins only
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			return w.states(t).MayRestoreState(context.Background(), p, w.live(t).ID)
		},
	},
	"deploy.Service.Deployable": {
		refused: []refusal{{adminB, problem.ErrNotFound}},
		served:  []actor{userA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			env := w.dev(t)
			got, err := w.deploys.Deployable(context.Background(), p, w.publishedA(t).ID)
			if err == nil && (len(got.Environments) != 1 || got.Environments[0].ID != env.ID) {
				t.Errorf("%s is offered %+v", p.Email, got.Environments)
			}
			return err
		},
		then: func(t *testing.T, w *world) {
			got, err := w.deploys.Deployable(context.Background(), w.userA, w.shared.ID)
			must(t, err)
			if len(got.Environments) != 1 || got.Component != w.shared.Name {
				t.Fatalf("deployable %+v", got)
			}
			got, err = w.deploys.Deployable(context.Background(), w.adminB, w.shared.ID)
			must(t, err)
			if len(got.Environments) != 0 {
				t.Fatalf("B is offered A's environments: %+v", got.Environments)
			}
		},
	},
	"deploy.Service.Apply": {
		refused: []refusal{{adminB, problem.ErrNotFound}, {readerA, problem.ErrForbidden}},
		served:  []actor{userA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			op, err := w.deploys.Apply(context.Background(), p, w.preview(t).ID)
			if err == nil && op.Parameters["cores"] != 3.0 {
				t.Errorf("the update applies %v, not what was previewed", op.Parameters)
			}
			return queued(t, op, err, "update", 0)
		},
		then: func(t *testing.T, w *world) {
			preview, err := w.deploys.Preview(context.Background(), w.userA, w.live(t).ID, deploy.Change{})
			must(t, err)
			_, err = w.deploys.Apply(context.Background(), w.userA, preview.ID)
			wantField(t, err, "operation") // a preview that has not run
		},
	},
	"deploy.Service.FullLog": {
		refused: []refusal{{adminB, problem.ErrNotFound}},
		served:  []actor{readerA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			r, err := w.deploys.FullLog(context.Background(), p, w.web(t).op.ID)
			if err == nil {
				r.Close()
			}
			return err
		},
	},
	"deploy.Service.Logs": {
		refused: []refusal{{adminB, problem.ErrNotFound}},
		served:  []actor{readerA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			_, err := w.deploys.Logs(context.Background(), p, w.web(t).op.ID, 0)
			return err
		},
		then: func(t *testing.T, w *world) {
			_, err := w.deploys.Logs(context.Background(), w.readerA, uuid.New(), 0)
			wantErr(t, err, problem.ErrNotFound)
		},
	},
	"deploy.Service.Cancel": {
		refused: []refusal{{adminB, problem.ErrNotFound}, {readerA, problem.ErrForbidden}},
		served:  []actor{userA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			got, err := w.deploys.Cancel(context.Background(), p, w.web(t).op.ID)
			if err == nil && got.Status != "cancelled" {
				t.Errorf("a queued operation cancelled is %s", got.Status)
			}
			return err
		},
		then: func(t *testing.T, w *world) {
			_, err := w.deploys.Cancel(context.Background(), w.userA, w.web(t).op.ID)
			wantField(t, err, "operation") // cancelling twice
		},
	},
}

// queued checks that a requested operation is of kind and queued with position operations
// before it; it passes err on.
func queued(t *testing.T, op deploy.Operation, err error, kind deploy.Kind, position int) error {
	t.Helper()
	if err == nil && (op.Kind != kind || op.Status != "queued" || op.Position != position) {
		t.Errorf("%s: %+v, want it queued with %d before it", kind, op, position)
	}
	return err
}
