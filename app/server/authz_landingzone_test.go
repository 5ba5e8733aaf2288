package server_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"

	"nimbus/app/approval"
	"nimbus/app/dashboard"
	"nimbus/app/environment"
	"nimbus/app/landingzone"
	"nimbus/app/problem"
	"nimbus/app/resolver"
)

// zoneWorld is a published landing zone with a template of the shared machine; its services
// queue jobs and work none.
type zoneWorld struct {
	svc      *landingzone.Service
	zone     landingzone.Zone
	template uuid.UUID
}

func newZone(t *testing.T, w *world) zoneWorld {
	t.Helper()
	ctx := context.Background()
	svc := landingzone.NewService(w.pool, testKeys(t), insertOnly(t, w.pool))
	z, err := svc.Create(ctx, w.admin, landingzone.NewZone{Name: "zone", Provider: "simcloud"})
	must(t, err)
	tpl, err := svc.AddTemplate(ctx, w.admin, z.ID, landingzone.NewTemplate{Name: "basic",
		MandatoryComponents: []landingzone.MemberIn{{ComponentID: w.shared.ID, Name: "web", Parameters: map[string]any{"name": "web"}}}})
	must(t, err)
	z, err = svc.Publish(ctx, w.admin, z.ID)
	must(t, err)
	// No worker runs here: the zone's (empty) system services are as good as deployed.
	_, err = w.pool.Exec(ctx, `UPDATE environments SET status = 'active' WHERE id = $1`, z.SystemEnvironmentID)
	must(t, err)
	return zoneWorld{svc: svc, zone: z, template: tpl.ID}
}

// openDev opens tenant A's dev environment from the zone's template.
func (zw zoneWorld) openDev(t *testing.T, w *world) uuid.UUID {
	t.Helper()
	id, err := zw.svc.Open(context.Background(), w.adminA, environment.New{TenantID: w.a.ID, Name: "dev", TemplateID: zw.template})
	must(t, err)
	return id
}

var zoneCases = map[string]func(t *testing.T, w *world){
	"landingzone.Service.Create": func(t *testing.T, w *world) {
		svc := landingzone.NewService(w.pool, testKeys(t), insertOnly(t, w.pool))
		_, err := svc.Create(context.Background(), w.adminA, landingzone.NewZone{Name: "mine", Provider: "simcloud"})
		wantErr(t, err, problem.ErrForbidden)
	},
	"landingzone.Service.List": func(t *testing.T, w *world) {
		zw := newZone(t, w)
		_, err := zw.svc.List(context.Background(), w.adminA)
		wantErr(t, err, problem.ErrForbidden)
		zones, err := zw.svc.List(context.Background(), w.admin)
		must(t, err)
		if len(zones) != 1 {
			t.Fatalf("the provider admin lists %v", zones)
		}
	},
	"landingzone.Service.Get": func(t *testing.T, w *world) {
		zw := newZone(t, w)
		_, err := zw.svc.Get(context.Background(), w.adminA, zw.zone.ID)
		wantErr(t, err, problem.ErrNotFound)
	},
	"landingzone.Service.Publish": func(t *testing.T, w *world) {
		zw := newZone(t, w)
		_, err := zw.svc.Publish(context.Background(), w.adminA, zw.zone.ID)
		wantErr(t, err, problem.ErrForbidden)
		_, err = zw.svc.Publish(context.Background(), w.admin, zw.zone.ID)
		if problem.FieldOf(err) != "status" {
			t.Fatalf("publishing twice: %v", err)
		}
	},
	"landingzone.Service.Retire": func(t *testing.T, w *world) {
		zw := newZone(t, w)
		_, err := zw.svc.Retire(context.Background(), w.adminA, zw.zone.ID)
		wantErr(t, err, problem.ErrForbidden)
	},
	"landingzone.Service.AddTemplate": func(t *testing.T, w *world) {
		zw := newZone(t, w)
		in := landingzone.NewTemplate{Name: "more", MandatoryComponents: []landingzone.MemberIn{{ComponentID: w.shared.ID, Name: "x"}}}
		_, err := zw.svc.AddTemplate(context.Background(), w.adminA, zw.zone.ID, in)
		wantErr(t, err, problem.ErrForbidden)
		// A tenant's own component is no component for a zone every tenant uses.
		in.MandatoryComponents[0].ComponentID = w.ofA.ID
		_, err = zw.svc.AddTemplate(context.Background(), w.admin, zw.zone.ID, in)
		if problem.FieldOf(err) != "mandatory_components[0].component_id" {
			t.Fatalf("a tenant's component in a template: %v", err)
		}
	},
	"landingzone.Service.AddSystemService": func(t *testing.T, w *world) {
		zw := newZone(t, w)
		in := landingzone.MemberIn{ComponentID: w.shared.ID, Name: "svc", Parameters: map[string]any{"name": "svc"}}
		_, err := zw.svc.AddSystemService(context.Background(), w.adminA, zw.zone.ID, in)
		wantErr(t, err, problem.ErrForbidden)
		_, err = zw.svc.AddSystemService(context.Background(), w.admin, zw.zone.ID, in)
		if problem.FieldOf(err) != "landing_zone" {
			t.Fatalf("a system service for a published zone: %v", err)
		}
	},
	"landingzone.Service.WithdrawTemplate": func(t *testing.T, w *world) {
		zw := newZone(t, w)
		wantErr(t, zw.svc.WithdrawTemplate(context.Background(), w.adminA, zw.zone.ID, zw.template), problem.ErrForbidden)
		must(t, zw.svc.WithdrawTemplate(context.Background(), w.admin, zw.zone.ID, zw.template))
		if err := zw.svc.WithdrawTemplate(context.Background(), w.admin, zw.zone.ID, zw.template); problem.FieldOf(err) != "template_id" {
			t.Fatalf("withdrawing twice: %v", err)
		}
	},
	"landingzone.Service.RemoveSystemService": func(t *testing.T, w *world) {
		zw := newZone(t, w)
		err := zw.svc.RemoveSystemService(context.Background(), w.adminA, zw.zone.ID, uuid.New())
		wantErr(t, err, problem.ErrForbidden)
		if err := zw.svc.RemoveSystemService(context.Background(), w.admin, zw.zone.ID, uuid.New()); problem.FieldOf(err) != "landing_zone" {
			t.Fatalf("removing from a published zone: %v", err)
		}
	},
	"landingzone.Service.Open": func(t *testing.T, w *world) {
		zw := newZone(t, w)
		in := environment.New{TenantID: w.a.ID, Name: "dev", TemplateID: zw.template}
		_, err := zw.svc.Open(context.Background(), w.adminB, in)
		if problem.FieldOf(err) != "tenant_id" {
			t.Fatalf("another tenant's admin: %v", err)
		}
		_, err = zw.svc.Open(context.Background(), w.userA, in)
		wantErr(t, err, problem.ErrForbidden)
		id := zw.openDev(t, w)
		env, err := environment.NewService(w.pool).Get(context.Background(), w.readerA, id)
		must(t, err)
		if env.Status != "provisioning" || env.Template != "basic" {
			t.Fatalf("the new environment: %+v", env)
		}
	},
	"landingzone.Service.Decommission": func(t *testing.T, w *world) {
		zw := newZone(t, w)
		id := zw.openDev(t, w)
		err := zw.svc.Decommission(context.Background(), w.adminB, id)
		wantErr(t, err, problem.ErrNotFound)
		err = zw.svc.Decommission(context.Background(), w.userA, id)
		wantErr(t, err, problem.ErrForbidden)
		err = zw.svc.Decommission(context.Background(), w.adminA, id)
		if problem.FieldOf(err) != "status" {
			t.Fatalf("decommissioning while it provisions: %v", err)
		}
	},
	"landingzone.Service.Retry": func(t *testing.T, w *world) {
		zw := newZone(t, w)
		id := zw.openDev(t, w)
		wantErr(t, zw.svc.Retry(context.Background(), w.adminB, id), problem.ErrNotFound)
		wantErr(t, zw.svc.Retry(context.Background(), w.readerA, id), problem.ErrForbidden)
		if err := zw.svc.Retry(context.Background(), w.adminA, id); problem.FieldOf(err) != "status" {
			t.Fatalf("retrying what did not fail: %v", err)
		}
	},
	"environment.Service.Detail": func(t *testing.T, w *world) {
		env, err := environment.NewService(w.pool).Create(context.Background(), w.adminA, w.a.ID, "dev")
		must(t, err)
		_, err = environment.NewService(w.pool).Detail(context.Background(), w.adminB, env.ID)
		wantErr(t, err, problem.ErrNotFound)
		d, err := environment.NewService(w.pool).Detail(context.Background(), w.readerA, env.ID)
		must(t, err)
		if d.Name != "dev" {
			t.Fatalf("detail %+v", d)
		}
	},
	"dashboard.Service.Overview": func(t *testing.T, w *world) {
		env, _ := devPool(t, w)
		svc := dashboard.NewService(w.pool, approval.NewService(w.pool, insertOnly(t, w.pool)))
		o, err := svc.Overview(context.Background(), w.adminB)
		must(t, err)
		if len(o.Environments) != 0 || len(o.Pools) != 0 {
			t.Fatalf("tenant B's admin sees %+v", o)
		}
		o, err = svc.Overview(context.Background(), w.readerA)
		must(t, err)
		if len(o.Environments) != 1 || o.Environments[0].ID != env.ID || len(o.Pools) != 0 {
			t.Fatalf("tenant A's reader sees %+v", o)
		}
		o, err = svc.Overview(context.Background(), w.admin)
		must(t, err)
		if len(o.Pools) != 1 {
			t.Fatalf("the provider admin sees pools %+v", o.Pools)
		}
	},
	"resolver.Service.ZoneConfigs": func(t *testing.T, w *world) {
		zw := newZone(t, w)
		_, err := resolver.NewService(w.pool).ZoneConfigs(context.Background(), w.adminA, zw.zone.ID)
		wantErr(t, err, problem.ErrNotFound)
	},
	"resolver.Service.SetZoneConfig": func(t *testing.T, w *world) {
		zw := newZone(t, w)
		svc := resolver.NewService(w.pool)
		cfg := json.RawMessage(`{"pattern": "{env}-{seq}"}`)
		_, err := svc.SetZoneConfig(context.Background(), w.adminA, zw.zone.ID, "naming", cfg)
		wantErr(t, err, problem.ErrNotFound)
		_, err = svc.SetZoneConfig(context.Background(), w.admin, zw.zone.ID, "naming", cfg)
		must(t, err)
		// The zone's environments inherit it.
		id := zw.openDev(t, w)
		configs, err := svc.Configs(context.Background(), w.readerA, id)
		must(t, err)
		if len(configs) != 1 || !configs[0].Inherited {
			t.Fatalf("the environment's configurations: %+v", configs)
		}
	},
	"resolver.Service.ClearConfig": func(t *testing.T, w *world) {
		env, _ := devPool(t, w)
		svc := resolver.NewService(w.pool)
		_, err := svc.SetConfig(context.Background(), w.admin, env.ID, "naming", json.RawMessage(`{"pattern": "{env}-{seq}"}`))
		must(t, err)
		wantErr(t, svc.ClearConfig(context.Background(), w.adminB, env.ID, "naming"), problem.ErrNotFound)
		wantErr(t, svc.ClearConfig(context.Background(), w.adminA, env.ID, "naming"), problem.ErrForbidden)
		must(t, svc.ClearConfig(context.Background(), w.admin, env.ID, "naming"))
		configs, err := svc.Configs(context.Background(), w.admin, env.ID)
		must(t, err)
		if len(configs) != 0 {
			t.Fatalf("still configured: %+v", configs)
		}
	},
	"resolver.Service.NextZoneName": func(t *testing.T, w *world) {
		zw := newZone(t, w)
		svc := resolver.NewService(w.pool)
		_, err := svc.NextZoneName(context.Background(), w.adminA, zw.zone.ID, "{env}-{seq}")
		wantErr(t, err, problem.ErrNotFound)
		name, err := svc.NextZoneName(context.Background(), w.admin, zw.zone.ID, "{tenant}-{env}-{seq:02d}")
		must(t, err)
		if name != "tenant-env-01" {
			t.Fatalf("next name %q", name)
		}
	},
}
