package server_test

import (
	"context"
	"testing"
	"time"

	"nimbus/app/access"
	"nimbus/app/problem"
)

var driftCases = map[string]authzCase{
	"deploy.Service.CheckDrift": {
		// Looking at the cloud runs the engine: those who may preview may.
		refused: []refusal{{adminB, problem.ErrNotFound}, {readerA, problem.ErrForbidden}},
		served:  []actor{userA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			op, err := w.deploys.CheckDrift(context.Background(), p, w.live(t).ID)
			return queued(t, op, err, "drift_check", 0)
		},
		then: func(t *testing.T, w *world) {
			_, err := w.deploys.CheckDrift(context.Background(), w.userA, w.web(t).ID)
			wantField(t, err, "deployment") // not deployed yet
		},
	},
	"deploy.Service.Reconcile": {
		refused: []refusal{{adminB, problem.ErrNotFound}, {readerA, problem.ErrForbidden}},
		served:  []actor{userA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			op, err := w.deploys.Reconcile(context.Background(), p, w.live(t).ID)
			if err == nil && !op.Refresh {
				t.Errorf("a reconcile that does not read the resources back first: %+v", op)
			}
			return queued(t, op, err, "update", 0)
		},
		then: func(t *testing.T, w *world) {
			_, err := w.deploys.Reconcile(context.Background(), w.userA, w.web(t).ID)
			wantField(t, err, "deployment") // not deployed yet
		},
	},
	"deploy.Service.EnvironmentDriftInterval": {
		refused: []refusal{{adminB, problem.ErrNotFound}, {stranger, problem.ErrNotFound}},
		served:  []actor{readerA, adminA, providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			v, err := w.deploys.EnvironmentDriftInterval(context.Background(), p, w.dev(t).ID)
			if err == nil && (v.Own != nil || v.Effective != nil) {
				t.Errorf("an environment never set: %+v", v)
			}
			return err
		},
	},
	"deploy.Service.SetEnvironmentDriftInterval": {
		// The environment's tenant admins decide how often it is checked.
		refused: []refusal{{adminB, problem.ErrNotFound}, {userA, problem.ErrForbidden}},
		served:  []actor{adminA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			every := 6 * time.Hour
			v, err := w.deploys.SetEnvironmentDriftInterval(context.Background(), p, w.dev(t).ID, &every)
			if err == nil && (v.Effective == nil || time.Duration(*v.Effective) != every) {
				t.Errorf("after setting 6h: %+v", v)
			}
			return err
		},
		then: func(t *testing.T, w *world) {
			v, err := w.deploys.EnvironmentDriftInterval(context.Background(), w.userA, w.dev(t).ID)
			must(t, err)
			if v.Own == nil || time.Duration(*v.Own) != 6*time.Hour {
				t.Errorf("the refused calls changed the interval, or the served one did not: %+v", v)
			}
		},
	},
	"deploy.Service.SetZoneDriftInterval": {
		// Only provider admins see landing zones.
		refused: []refusal{{adminA, problem.ErrNotFound}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			every := time.Hour
			v, err := w.deploys.SetZoneDriftInterval(context.Background(), p, w.zone(t).zone.ID, &every)
			if err == nil && (v == nil || time.Duration(*v) != every) {
				t.Errorf("after setting 1h: %v", v)
			}
			return err
		},
		then: func(t *testing.T, w *world) {
			_, err := w.deploys.SetZoneDriftInterval(context.Background(), w.admin, w.zone(t).zone.ID, new(time.Duration))
			wantField(t, err, "drift_interval") // only an environment's zero turns checks off
		},
	},
}
