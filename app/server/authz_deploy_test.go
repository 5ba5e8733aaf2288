package server_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"

	"nimbus/app/access"
	"nimbus/app/deploy"
	"nimbus/app/environment"
	"nimbus/app/problem"
)

// deployed sets up an environment of tenant A with a queued deployment of the shared machine.
func deployed(t *testing.T, w *world) (*deploy.Service, environment.Environment, deploy.Deployment, deploy.Operation) {
	t.Helper()
	ctx := context.Background()
	env, err := environment.NewService(w.pool).Create(ctx, w.adminA, w.a.ID, "dev")
	must(t, err)
	svc := deploy.NewService(w.pool, testKeys(t), insertOnly(t, w.pool), nil, nil)
	d, op, err := svc.Deploy(ctx, w.userA, deploy.Request{ComponentID: w.shared.ID, EnvironmentID: env.ID, Name: "web",
		Parameters: map[string]any{"name": "web-1"}})
	must(t, err)
	return svc, env, d, op
}

var deployCases = map[string]func(t *testing.T, w *world){
	"deploy.Service.Deploy": func(t *testing.T, w *world) {
		ctx := context.Background()
		svc, env, _, _ := deployed(t, w)
		req := deploy.Request{ComponentID: w.shared.ID, EnvironmentID: env.ID, Name: "other", Parameters: map[string]any{"name": "x"}}
		_, _, err := svc.Deploy(ctx, w.adminB, req)
		if problem.FieldOf(err) != "environment_id" {
			t.Fatalf("deploying into another tenant's environment: %v", err)
		}
		_, _, err = svc.Deploy(ctx, w.readerA, req)
		wantErr(t, err, problem.ErrForbidden)
		req.ComponentID = w.ofA.ID // unpublished
		_, _, err = svc.Deploy(ctx, w.userA, req)
		if problem.FieldOf(err) != "version" {
			t.Fatalf("deploying an unpublished component: %v", err)
		}
	},
	"deploy.Service.Destroy": func(t *testing.T, w *world) {
		ctx := context.Background()
		svc, _, d, _ := deployed(t, w)
		_, err := svc.Destroy(ctx, w.adminB, d.ID)
		wantErr(t, err, problem.ErrNotFound)
		_, err = svc.Destroy(ctx, w.userA, d.ID)
		wantErr(t, err, problem.ErrForbidden) // destroying is for tenant admins
		_, err = svc.Destroy(ctx, w.adminA, d.ID)
		must(t, err)
	},
	"deploy.Service.Get": func(t *testing.T, w *world) {
		svc, _, d, _ := deployed(t, w)
		_, err := svc.Get(context.Background(), w.adminB, d.ID)
		wantErr(t, err, problem.ErrNotFound)
		got, err := svc.Get(context.Background(), w.readerA, d.ID)
		must(t, err)
		if got.Parameters["name"] != "web-1" || got.Parameters["cores"] != 2.0 {
			t.Fatalf("parameters %v: want the given name and the default cores", got.Parameters)
		}
	},
	"deploy.Service.List": func(t *testing.T, w *world) {
		svc, _, _, _ := deployed(t, w)
		got, err := svc.List(context.Background(), w.adminB, deploy.Filter{})
		must(t, err)
		if len(got) != 0 {
			t.Fatalf("B lists A's deployments: %v", got)
		}
		got, err = svc.List(context.Background(), w.readerA, deploy.Filter{})
		must(t, err)
		if len(got) != 1 {
			t.Fatalf("reader of A lists %d deployments", len(got))
		}
	},
	"deploy.Service.Operation": func(t *testing.T, w *world) {
		svc, _, _, op := deployed(t, w)
		_, err := svc.Operation(context.Background(), w.adminB, op.ID)
		wantErr(t, err, problem.ErrNotFound)
		got, err := svc.Operation(context.Background(), w.readerA, op.ID)
		must(t, err)
		if got.Status != "queued" || got.Kind != "deploy" {
			t.Fatalf("operation %+v", got)
		}
	},
	"deploy.Service.Operations": func(t *testing.T, w *world) {
		svc, _, d, _ := deployed(t, w)
		ops, err := svc.Operations(context.Background(), w.adminB, deploy.Filter{DeploymentID: d.ID})
		must(t, err)
		if len(ops) != 0 {
			t.Fatalf("B lists A's operations: %v", ops)
		}
		ops, err = svc.Operations(context.Background(), w.readerA, deploy.Filter{DeploymentID: d.ID, Kind: "deploy", Status: "queued"})
		must(t, err)
		if len(ops) != 1 {
			t.Fatalf("operations %v", ops)
		}
	},
	"deploy.Service.Detail": func(t *testing.T, w *world) {
		svc, _, _, op := deployed(t, w)
		_, err := svc.Detail(context.Background(), w.adminB, op.ID)
		wantErr(t, err, problem.ErrNotFound)
		got, err := svc.Detail(context.Background(), w.readerA, op.ID)
		must(t, err)
		if got.ID != op.ID || got.Steps == nil || got.Resources == nil {
			t.Fatalf("detail %+v", got)
		}
	},
	"deploy.Service.Preview": func(t *testing.T, w *world) {
		actionCase(t, w, "preview", func(svc *deploy.Service, actor access.Principal, id uuid.UUID) (deploy.Operation, error) {
			return svc.Preview(context.Background(), actor, id, deploy.Change{Parameters: map[string]any{"cores": 3.0}})
		}, "")
	},
	"deploy.Service.Start": func(t *testing.T, w *world) {
		actionCase(t, w, "deploy", func(svc *deploy.Service, actor access.Principal, id uuid.UUID) (deploy.Operation, error) {
			return svc.Start(context.Background(), actor, id, deploy.Change{})
		}, "deployment") // its first deploy is queued already
	},
	"deploy.Service.Update": func(t *testing.T, w *world) {
		actionCase(t, w, "update", func(svc *deploy.Service, actor access.Principal, id uuid.UUID) (deploy.Operation, error) {
			return svc.Update(context.Background(), actor, id, deploy.Change{Parameters: map[string]any{"cores": 3.0}})
		}, "deployment") // not deployed yet
	},
	"deploy.Service.Upgrade": func(t *testing.T, w *world) {
		upgrade := func(svc *deploy.Service, actor access.Principal, id uuid.UUID) (deploy.Operation, error) {
			return svc.Upgrade(context.Background(), actor, id, deploy.Change{})
		}
		svc, _, d, _ := deployed(t, w)
		_, err := upgrade(svc, w.userA, d.ID)
		wantErr(t, err, problem.ErrForbidden) // upgrading is for tenant admins
		_, err = upgrade(svc, w.adminB, d.ID)
		wantErr(t, err, problem.ErrNotFound)
		if _, err := upgrade(svc, w.adminA, d.ID); problem.FieldOf(err) != "deployment" {
			t.Fatalf("upgrade of a deployment not deployed yet: %v", err)
		}
	},
	"deploy.Service.Refresh": func(t *testing.T, w *world) {
		actionCase(t, w, "refresh", func(svc *deploy.Service, actor access.Principal, id uuid.UUID) (deploy.Operation, error) {
			return svc.Refresh(context.Background(), actor, id)
		}, "deployment")
	},
	"deploy.Service.State": func(t *testing.T, w *world) {
		svc, _, d, _ := deployed(t, w)
		_, err := svc.State(context.Background(), w.adminB, d.ID)
		wantErr(t, err, problem.ErrNotFound)
		_, err = svc.State(context.Background(), w.userA, d.ID)
		wantErr(t, err, problem.ErrForbidden) // the state holds every property: tenant admins only
	},
	"deploy.Service.RestoreState": func(t *testing.T, w *world) {
		svc, _, d, _ := deployed(t, w)
		err := svc.RestoreState(context.Background(), w.adminB, d.ID, strings.NewReader("{}"), 2)
		wantErr(t, err, problem.ErrNotFound)
		err = svc.RestoreState(context.Background(), w.adminA, d.ID, strings.NewReader("{}"), 2)
		wantErr(t, err, problem.ErrForbidden) // provider admins only
	},
	"deploy.Service.MayRestoreState": func(t *testing.T, w *world) {
		svc, _, d, _ := deployed(t, w)
		wantErr(t, svc.MayRestoreState(context.Background(), w.adminB, d.ID), problem.ErrNotFound)
		wantErr(t, svc.MayRestoreState(context.Background(), w.adminA, d.ID), problem.ErrForbidden)
		must(t, svc.MayRestoreState(context.Background(), w.admin, d.ID))
	},
	"deploy.Service.Deployable": func(t *testing.T, w *world) {
		svc, _, _, _ := deployed(t, w)
		_, err := svc.Deployable(context.Background(), w.adminB, w.ofA.ID)
		wantErr(t, err, problem.ErrNotFound)
		got, err := svc.Deployable(context.Background(), w.userA, w.shared.ID)
		must(t, err)
		if len(got.Environments) != 1 || got.Component != w.shared.Name {
			t.Fatalf("deployable %+v", got)
		}
		got, err = svc.Deployable(context.Background(), w.adminB, w.shared.ID)
		must(t, err)
		if len(got.Environments) != 0 {
			t.Fatalf("B is offered A's environments: %+v", got.Environments)
		}
	},
	"deploy.Service.Apply": func(t *testing.T, w *world) {
		svc, _, d, _ := deployed(t, w)
		preview, err := svc.Preview(context.Background(), w.userA, d.ID, deploy.Change{})
		must(t, err)
		_, err = svc.Apply(context.Background(), w.adminB, preview.ID)
		wantErr(t, err, problem.ErrNotFound)
		_, err = svc.Apply(context.Background(), w.userA, preview.ID)
		if problem.FieldOf(err) != "operation" {
			t.Fatalf("applying a preview that has not run: %v", err)
		}
	},
	"deploy.Service.FullLog": func(t *testing.T, w *world) {
		svc, _, _, op := deployed(t, w)
		_, err := svc.FullLog(context.Background(), w.adminB, op.ID)
		wantErr(t, err, problem.ErrNotFound)
		r, err := svc.FullLog(context.Background(), w.readerA, op.ID)
		must(t, err)
		r.Close()
	},
	"deploy.Service.Logs": func(t *testing.T, w *world) {
		svc, _, _, op := deployed(t, w)
		_, err := svc.Logs(context.Background(), w.adminB, op.ID, 0)
		wantErr(t, err, problem.ErrNotFound)
		_, err = svc.Logs(context.Background(), w.readerA, uuid.New(), 0)
		wantErr(t, err, problem.ErrNotFound)
		_, err = svc.Logs(context.Background(), w.readerA, op.ID, 0)
		must(t, err)
	},
	"deploy.Service.Cancel": func(t *testing.T, w *world) {
		ctx := context.Background()
		svc, _, _, op := deployed(t, w)
		_, err := svc.Cancel(ctx, w.adminB, op.ID)
		wantErr(t, err, problem.ErrNotFound)
		_, err = svc.Cancel(ctx, w.readerA, op.ID)
		wantErr(t, err, problem.ErrForbidden)
		got, err := svc.Cancel(ctx, w.userA, op.ID)
		must(t, err)
		if got.Status != "cancelled" {
			t.Fatalf("a queued operation cancelled is %s", got.Status)
		}
		if _, err := svc.Cancel(ctx, w.userA, op.ID); problem.FieldOf(err) != "operation" {
			t.Fatalf("cancelling twice: %v", err)
		}
	},
}

// actionCase checks an action on a deployment of tenant A: hidden from B, refused to A's
// reader, and for A's user queued, or refused naming refusedField when the deployment's state
// rules it out.
func actionCase(t *testing.T, w *world, kind string, act func(*deploy.Service, access.Principal, uuid.UUID) (deploy.Operation, error), refusedField string) {
	t.Helper()
	svc, _, d, _ := deployed(t, w)
	_, err := act(svc, w.adminB, d.ID)
	wantErr(t, err, problem.ErrNotFound)
	_, err = act(svc, w.readerA, d.ID)
	wantErr(t, err, problem.ErrForbidden)
	op, err := act(svc, w.userA, d.ID)
	if refusedField != "" {
		if problem.FieldOf(err) != refusedField {
			t.Fatalf("%s of a deployment not deployed yet: %v", kind, err)
		}
		return
	}
	must(t, err)
	if op.Kind != kind || op.Status != "queued" || op.Position != 1 {
		t.Fatalf("%s: %+v, want it queued behind the deploy", kind, op)
	}
}
