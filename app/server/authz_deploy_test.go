package server_test

import (
	"context"
	"testing"

	"github.com/google/uuid"

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
	svc := deploy.NewService(w.pool, testKeys(t), insertOnly(t, w.pool))
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
		got, err := svc.List(context.Background(), w.adminB)
		must(t, err)
		if len(got) != 0 {
			t.Fatalf("B lists A's deployments: %v", got)
		}
		got, err = svc.List(context.Background(), w.readerA)
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
		_, err := svc.Operations(context.Background(), w.adminB, d.ID)
		wantErr(t, err, problem.ErrNotFound)
		ops, err := svc.Operations(context.Background(), w.readerA, d.ID)
		must(t, err)
		if len(ops) != 1 {
			t.Fatalf("operations %v", ops)
		}
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
