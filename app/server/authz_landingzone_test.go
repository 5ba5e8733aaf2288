package server_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"

	"nimbus/app/access"
	"nimbus/app/dashboard"
	"nimbus/app/environment"
	"nimbus/app/landingzone"
	"nimbus/app/problem"
)

// zoneFixture is a landing zone with a template of the shared machine, and for a draft zone a
// system service.
type zoneFixture struct {
	zone     landingzone.Zone
	template uuid.UUID
	service  uuid.UUID
}

// draftZone is a draft landing zone with a template and a system service, both of the shared
// machine.
func (w *world) draftZone(t *testing.T) zoneFixture {
	return fixture(w, "draftZone", func() zoneFixture {
		ctx := context.Background()
		z, err := w.zones.Create(ctx, w.admin, landingzone.NewZone{Name: "draft", Provider: "simcloud"})
		must(t, err)
		tpl, err := w.zones.AddTemplate(ctx, w.admin, z.ID, landingzone.NewTemplate{Name: "basic",
			MandatoryComponents: []landingzone.MemberIn{{ComponentID: w.shared.ID, Name: "web", Parameters: map[string]any{"name": "web"}}}})
		must(t, err)
		svc, err := w.zones.AddSystemService(ctx, w.admin, z.ID, landingzone.MemberIn{ComponentID: w.shared.ID, Name: "dns",
			Parameters: map[string]any{"name": "dns"}})
		must(t, err)
		return zoneFixture{zone: z, template: tpl.ID, service: svc.ID}
	})
}

// zone is a published landing zone with a template of the shared machine and no system
// services. No worker runs here: its (empty) system services are as good as deployed.
func (w *world) zone(t *testing.T) zoneFixture {
	return fixture(w, "zone", func() zoneFixture {
		ctx := context.Background()
		z, err := w.zones.Create(ctx, w.admin, landingzone.NewZone{Name: "zone", Provider: "simcloud"})
		must(t, err)
		tpl, err := w.zones.AddTemplate(ctx, w.admin, z.ID, landingzone.NewTemplate{Name: "basic",
			MandatoryComponents: []landingzone.MemberIn{{ComponentID: w.shared.ID, Name: "web", Parameters: map[string]any{"name": "web"}}}})
		must(t, err)
		z, err = w.zones.Publish(ctx, w.admin, z.ID)
		must(t, err)
		_, err = w.pool.Exec(ctx, `UPDATE environments SET status = 'active' WHERE id = $1`, z.SystemEnvironmentID)
		must(t, err)
		return zoneFixture{zone: z, template: tpl.ID}
	})
}

// zoned is tenant A's environment zoned, opened by its admin from the zone's template; it is
// provisioning, its deploy queued.
func (w *world) zoned(t *testing.T) uuid.UUID {
	return fixture(w, "zoned", func() uuid.UUID {
		id, err := w.lifecycle.Open(context.Background(), w.adminA, environment.New{TenantID: w.a.ID, Name: "zoned", TemplateID: w.zone(t).template})
		must(t, err)
		return id
	})
}

var zoneCases = map[string]authzCase{
	"landingzone.Service.Providers": {
		refused: []refusal{{adminA, problem.ErrForbidden}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			got, err := w.zones.Providers(context.Background(), p)
			return shown(got, err, func(c landingzone.Choice) bool { return c.Value == "simcloud" })
		},
	},
	"landingzone.Service.ComponentChoices": {
		refused: []refusal{{adminA, problem.ErrNotFound}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			got, err := w.zones.ComponentChoices(context.Background(), p, w.draftZone(t).zone.ID)
			return shown(got, err, func(c landingzone.Choice) bool { return c.Value == w.shared.ID.String() })
		},
	},
	"landingzone.Service.Create": {
		refused: []refusal{{adminA, problem.ErrForbidden}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			z, err := w.zones.Create(context.Background(), p, landingzone.NewZone{Name: "mine", Provider: "simcloud"})
			if err == nil && z.Status != "draft" {
				t.Errorf("a new zone is %s", z.Status)
			}
			return err
		},
	},
	"landingzone.Service.List": {
		refused: []refusal{{adminA, problem.ErrForbidden}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			zw := w.zone(t)
			zones, err := w.zones.List(context.Background(), p)
			return shown(zones, err, func(z landingzone.Zone) bool { return z.ID == zw.zone.ID })
		},
	},
	"landingzone.Service.Get": {
		refused: []refusal{{adminA, problem.ErrNotFound}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			z, err := w.zones.Get(context.Background(), p, w.zone(t).zone.ID)
			if err == nil && (len(z.Templates) != 1 || z.Templates[0].Name != "basic") {
				t.Errorf("templates %+v", z.Templates)
			}
			return err
		},
	},
	"landingzone.Service.Publish": {
		refused: []refusal{{adminA, problem.ErrForbidden}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			z, err := w.zones.Publish(context.Background(), p, w.draftZone(t).zone.ID)
			if err == nil && (z.Status != "published" || z.SystemStatus != "provisioning") {
				t.Errorf("the published zone is %s, its system services %s", z.Status, z.SystemStatus)
			}
			return err
		},
		then: func(t *testing.T, w *world) {
			_, err := w.zones.Publish(context.Background(), w.admin, w.draftZone(t).zone.ID)
			wantField(t, err, "status") // publishing twice
		},
	},
	"landingzone.Service.Retire": {
		refused: []refusal{{adminA, problem.ErrForbidden}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			z, err := w.zones.Retire(context.Background(), p, w.zone(t).zone.ID)
			if err == nil && z.Status != "retired" {
				t.Errorf("the retired zone is %s", z.Status)
			}
			return err
		},
		then: func(t *testing.T, w *world) {
			_, err := w.zones.Retire(context.Background(), w.admin, w.zone(t).zone.ID)
			wantField(t, err, "status") // retiring twice
		},
	},
	"landingzone.Service.AddTemplate": {
		refused: []refusal{{adminA, problem.ErrForbidden}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			in := landingzone.NewTemplate{Name: "more", MandatoryComponents: []landingzone.MemberIn{{ComponentID: w.shared.ID, Name: "x",
				Parameters: map[string]any{"name": "x"}}}}
			_, err := w.zones.AddTemplate(context.Background(), p, w.zone(t).zone.ID, in)
			return err
		},
		then: func(t *testing.T, w *world) {
			// A tenant's own component is no component for a zone every tenant uses.
			in := landingzone.NewTemplate{Name: "theirs", MandatoryComponents: []landingzone.MemberIn{{ComponentID: w.ofA.ID, Name: "x"}}}
			_, err := w.zones.AddTemplate(context.Background(), w.admin, w.zone(t).zone.ID, in)
			wantField(t, err, "mandatory_components[0].component_id")
		},
	},
	"landingzone.Service.CheckTemplate": {
		refused: []refusal{{adminA, problem.ErrForbidden}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			in := landingzone.NewTemplate{Name: "checked", MandatoryComponents: []landingzone.MemberIn{{ComponentID: w.shared.ID, Name: "x"}}}
			return w.zones.CheckTemplate(context.Background(), p, w.zone(t).zone.ID, in)
		},
		then: func(t *testing.T, w *world) {
			in := landingzone.NewTemplate{Name: "theirs", MandatoryComponents: []landingzone.MemberIn{{ComponentID: w.ofA.ID, Name: "x"}}}
			wantField(t, w.zones.CheckTemplate(context.Background(), w.admin, w.zone(t).zone.ID, in), "mandatory_components[0].component_id")
			z, err := w.zones.Get(context.Background(), w.admin, w.zone(t).zone.ID)
			must(t, err)
			for _, tpl := range z.Templates {
				if tpl.Name == "checked" {
					t.Fatal("checking a template saved it")
				}
			}
		},
	},
	"landingzone.Service.Inputs": {
		refused: []refusal{{adminA, problem.ErrNotFound}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			schema, _, _, err := w.zones.Inputs(context.Background(), p, w.zone(t).zone.ID, w.shared.ID)
			if err == nil && !strings.Contains(string(schema), "cores") {
				t.Errorf("inputs %s", schema)
			}
			return err
		},
		then: func(t *testing.T, w *world) {
			_, _, _, err := w.zones.Inputs(context.Background(), w.admin, w.zone(t).zone.ID, w.ofA.ID)
			wantField(t, err, "component_id") // a tenant's own component
		},
	},
	"landingzone.Service.AddSystemService": {
		refused: []refusal{{adminA, problem.ErrForbidden}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			in := landingzone.MemberIn{ComponentID: w.shared.ID, Name: "svc", Parameters: map[string]any{"name": "svc"}}
			m, err := w.zones.AddSystemService(context.Background(), p, w.draftZone(t).zone.ID, in)
			if err == nil && m.Name != "svc" {
				t.Errorf("added %+v", m)
			}
			return err
		},
		then: func(t *testing.T, w *world) {
			in := landingzone.MemberIn{ComponentID: w.shared.ID, Name: "svc", Parameters: map[string]any{"name": "svc"}}
			_, err := w.zones.AddSystemService(context.Background(), w.admin, w.zone(t).zone.ID, in)
			wantField(t, err, "landing_zone") // a published zone's system services are deployed already
		},
	},
	"landingzone.Service.WithdrawTemplate": {
		refused: []refusal{{adminA, problem.ErrForbidden}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			zw := w.zone(t)
			return w.zones.WithdrawTemplate(context.Background(), p, zw.zone.ID, zw.template)
		},
		then: func(t *testing.T, w *world) {
			zw := w.zone(t)
			wantField(t, w.zones.WithdrawTemplate(context.Background(), w.admin, zw.zone.ID, zw.template), "template_id") // withdrawing twice
		},
	},
	"landingzone.Service.RemoveSystemService": {
		refused: []refusal{{adminA, problem.ErrForbidden}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			dz := w.draftZone(t)
			return w.zones.RemoveSystemService(context.Background(), p, dz.zone.ID, dz.service)
		},
		then: func(t *testing.T, w *world) {
			wantField(t, w.zones.RemoveSystemService(context.Background(), w.admin, w.zone(t).zone.ID, uuid.New()), "landing_zone") // a published zone
		},
	},
	"environment.Service.Detail": {
		refused: []refusal{{adminB, problem.ErrNotFound}},
		served:  []actor{readerA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			d, err := w.envs.Detail(context.Background(), p, w.dev(t).ID)
			if err == nil && d.Name != "dev" {
				t.Errorf("detail %+v", d)
			}
			return err
		},
	},
	"dashboard.Service.Overview": {
		refused: []refusal{{adminB, errHidden}},
		served:  []actor{readerA, providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			env := w.dev(t)
			w.netA(t) // a pool, which only the provider admin's overview shows
			o, err := dashboard.NewService(w.pool, w.envs, w.ipam, w.approvals).Overview(context.Background(), p)
			if err == nil && !p.ProviderAdmin && len(o.Pools) != 0 {
				t.Errorf("%s sees pools %+v", p.Email, o.Pools)
			}
			return shown(o.Environments, err, func(e environment.Environment) bool { return e.ID == env.ID })
		},
		then: func(t *testing.T, w *world) {
			svc := dashboard.NewService(w.pool, w.envs, w.ipam, w.approvals)
			o, err := svc.Overview(context.Background(), w.adminB)
			must(t, err)
			if len(o.Environments) != 0 {
				t.Fatalf("tenant B's admin sees %+v", o.Environments)
			}
			o, err = svc.Overview(context.Background(), w.readerA)
			must(t, err)
			if len(o.Environments) != 1 {
				t.Fatalf("tenant A's reader sees %+v", o.Environments)
			}
			o, err = svc.Overview(context.Background(), w.admin)
			must(t, err)
			if len(o.Pools) != 1 {
				t.Fatalf("the provider admin sees pools %+v", o.Pools)
			}
		},
	},
	"resolver.Service.ZoneConfigs": {
		refused: []refusal{{adminA, problem.ErrNotFound}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			_, err := w.resolvers.ZoneConfigs(context.Background(), p, w.zone(t).zone.ID)
			return err
		},
	},
	"resolver.Service.SetZoneConfig": {
		refused: []refusal{{adminA, problem.ErrNotFound}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			cfg := json.RawMessage(`{"pattern": "{env}-{seq}"}`)
			_, err := w.resolvers.SetZoneConfig(context.Background(), p, w.zone(t).zone.ID, "naming", cfg)
			return err
		},
		then: func(t *testing.T, w *world) {
			// The zone's environments inherit it.
			configs, err := w.resolvers.Configs(context.Background(), w.readerA, w.zoned(t))
			must(t, err)
			if len(configs) != 1 || !configs[0].Inherited {
				t.Fatalf("the environment's configurations: %+v", configs)
			}
		},
	},
	"resolver.Service.ClearConfig": {
		refused: []refusal{{adminB, problem.ErrNotFound}, {adminA, problem.ErrForbidden}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			env := fixture(w, "named", func() environment.Environment {
				env := w.dev(t)
				_, err := w.resolvers.SetConfig(context.Background(), w.admin, env.ID, "naming", json.RawMessage(`{"pattern": "{env}-{seq}"}`))
				must(t, err)
				return env
			})
			return w.resolvers.ClearConfig(context.Background(), p, env.ID, "naming")
		},
		then: func(t *testing.T, w *world) {
			configs, err := w.resolvers.Configs(context.Background(), w.admin, w.dev(t).ID)
			must(t, err)
			if len(configs) != 0 {
				t.Fatalf("still configured: %+v", configs)
			}
		},
	},
	"resolver.Service.NextZoneName": {
		refused: []refusal{{adminA, problem.ErrNotFound}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			name, err := w.resolvers.NextZoneName(context.Background(), p, w.zone(t).zone.ID, "{tenant}-{env}-{seq:02d}")
			if err == nil && name != "tenant-env-01" {
				t.Errorf("next name %q", name)
			}
			return err
		},
	},
}
