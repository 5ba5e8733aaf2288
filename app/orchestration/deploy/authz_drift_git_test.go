package deploy_test

import (
	"context"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/app/orchestration/deploy"
)

// driftCases and gitCases are the authorization cases of drift checks and of the git opt-ins.
var driftCases = map[string]apptest.AuthzCase{
	"deploy.Service.CheckDrift": {
		// Looking at the cloud runs the engine: those who may preview may.
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.ReaderA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.UserA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			op, err := w.Deploys.CheckDrift(context.Background(), p, w.Live(t).ID)
			return queued(t, op, err, "drift_check", 0)
		},
		Then: func(t *testing.T, w *apptest.World) {
			_, err := w.Deploys.CheckDrift(context.Background(), w.UserA, w.Web(t).ID)
			apptest.WantField(t, err, "deployment") // not deployed yet
		},
	},
	"deploy.Service.Reconcile": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.ReaderA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.UserA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			op, err := w.Deploys.Reconcile(context.Background(), p, w.Live(t).ID)
			if err == nil && !op.Refresh {
				t.Errorf("a reconcile that does not read the resources back first: %+v", op)
			}
			return queued(t, op, err, "update", 0)
		},
		Then: func(t *testing.T, w *apptest.World) {
			_, err := w.Deploys.Reconcile(context.Background(), w.UserA, w.Web(t).ID)
			apptest.WantField(t, err, "deployment") // not deployed yet
		},
	},
}

var gitCases = map[string]apptest.AuthzCase{
	"deploy.Service.SetGitOptIns": {
		// Previewing from git asks the right to preview; upgrading on publish the right to upgrade.
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.ReaderA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.UserA, apptest.AdminA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			want := deploy.GitOptIns{PreviewFromGit: true, UpgradeOnPublish: p.Can(access.ComponentUpgrade, w.A.ID)}
			d, err := w.Deploys.SetGitOptIns(context.Background(), p, w.Live(t).ID, want)
			if err == nil && d.GitOptIns != want {
				t.Errorf("%s: opt-ins not set: %+v", p.Email, d.GitOptIns)
			}
			return err
		},
		Then: func(t *testing.T, w *apptest.World) {
			// A user who may preview but not upgrade cannot have it upgraded on publish.
			_, err := w.Deploys.SetGitOptIns(context.Background(), w.UserA, w.Live(t).ID, deploy.GitOptIns{UpgradeOnPublish: true})
			apptest.WantErr(t, err, problem.ErrForbidden)
		},
	},
}
