package landingzone_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"

	"nimbus/app/apptest"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/app/orchestration/landingzone"
)

var zoneCases = map[string]apptest.AuthzCase{
	"landingzone.Service.Providers": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			got, err := w.Zones.Providers(context.Background(), p)
			return apptest.Shown(got, err, func(c landingzone.Choice) bool { return c.Value == "simcloud" })
		},
	},
	"landingzone.Service.ComponentChoices": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			got, err := w.Zones.ComponentChoices(context.Background(), p, w.DraftZone(t).Zone.ID)
			return apptest.Shown(got, err, func(c landingzone.Choice) bool { return c.Value == w.Shared.ID.String() })
		},
	},
	"landingzone.Service.Create": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			z, err := w.Zones.Create(context.Background(), p, landingzone.NewZone{Name: "mine", Provider: "simcloud"})
			if err == nil && z.Status != "draft" {
				t.Errorf("a new zone is %s", z.Status)
			}
			return err
		},
	},
	"landingzone.Service.List": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			zw := w.Zone(t)
			zones, err := w.Zones.List(context.Background(), p)
			return apptest.Shown(zones, err, func(z landingzone.Zone) bool { return z.ID == zw.Zone.ID })
		},
	},
	"landingzone.Service.Get": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			z, err := w.Zones.Get(context.Background(), p, w.Zone(t).Zone.ID)
			if err == nil && (len(z.Templates) != 1 || z.Templates[0].Name != "basic") {
				t.Errorf("templates %+v", z.Templates)
			}
			return err
		},
	},
	"landingzone.Service.Publish": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			z, err := w.Zones.Publish(context.Background(), p, w.DraftZone(t).Zone.ID)
			if err == nil && (z.Status != "published" || z.SystemStatus != "provisioning") {
				t.Errorf("the published zone is %s, its system services %s", z.Status, z.SystemStatus)
			}
			return err
		},
		Then: func(t *testing.T, w *apptest.World) {
			_, err := w.Zones.Publish(context.Background(), w.Admin, w.DraftZone(t).Zone.ID)
			apptest.WantField(t, err, "status") // publishing twice
		},
	},
	"landingzone.Service.Retire": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			z, err := w.Zones.Retire(context.Background(), p, w.Zone(t).Zone.ID)
			if err == nil && z.Status != "retired" {
				t.Errorf("the retired zone is %s", z.Status)
			}
			return err
		},
		Then: func(t *testing.T, w *apptest.World) {
			_, err := w.Zones.Retire(context.Background(), w.Admin, w.Zone(t).Zone.ID)
			apptest.WantField(t, err, "status") // retiring twice
		},
	},
	"landingzone.Service.AddTemplate": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			in := landingzone.NewTemplate{Name: "more", MandatoryComponents: []landingzone.MemberIn{{ComponentID: w.Shared.ID, Name: "x",
				Parameters: map[string]any{"name": "x"}}}}
			_, err := w.Zones.AddTemplate(context.Background(), p, w.Zone(t).Zone.ID, in)
			return err
		},
		Then: func(t *testing.T, w *apptest.World) {
			// A tenant's own component is no component for a zone every tenant uses.
			in := landingzone.NewTemplate{Name: "theirs", MandatoryComponents: []landingzone.MemberIn{{ComponentID: w.OfA.ID, Name: "x"}}}
			_, err := w.Zones.AddTemplate(context.Background(), w.Admin, w.Zone(t).Zone.ID, in)
			apptest.WantField(t, err, "mandatory_components[0].component_id")
		},
	},
	"landingzone.Service.CheckTemplate": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			in := landingzone.NewTemplate{Name: "checked", MandatoryComponents: []landingzone.MemberIn{{ComponentID: w.Shared.ID, Name: "x"}}}
			return w.Zones.CheckTemplate(context.Background(), p, w.Zone(t).Zone.ID, in)
		},
		Then: func(t *testing.T, w *apptest.World) {
			in := landingzone.NewTemplate{Name: "theirs", MandatoryComponents: []landingzone.MemberIn{{ComponentID: w.OfA.ID, Name: "x"}}}
			apptest.WantField(t, w.Zones.CheckTemplate(context.Background(), w.Admin, w.Zone(t).Zone.ID, in), "mandatory_components[0].component_id")
			z, err := w.Zones.Get(context.Background(), w.Admin, w.Zone(t).Zone.ID)
			apptest.Must(t, err)
			for _, tpl := range z.Templates {
				if tpl.Name == "checked" {
					t.Fatal("checking a template saved it")
				}
			}
		},
	},
	"landingzone.Service.Inputs": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			schema, _, _, err := w.Zones.Inputs(context.Background(), p, w.Zone(t).Zone.ID, w.Shared.ID)
			if err == nil && !strings.Contains(string(schema), "cores") {
				t.Errorf("inputs %s", schema)
			}
			return err
		},
		Then: func(t *testing.T, w *apptest.World) {
			_, _, _, err := w.Zones.Inputs(context.Background(), w.Admin, w.Zone(t).Zone.ID, w.OfA.ID)
			apptest.WantField(t, err, "component_id") // a tenant's own component
		},
	},
	"landingzone.Service.AddSystemService": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			in := landingzone.MemberIn{ComponentID: w.Shared.ID, Name: "svc", Parameters: map[string]any{"name": "svc"}}
			m, err := w.Zones.AddSystemService(context.Background(), p, w.DraftZone(t).Zone.ID, in)
			if err == nil && m.Name != "svc" {
				t.Errorf("added %+v", m)
			}
			return err
		},
		Then: func(t *testing.T, w *apptest.World) {
			in := landingzone.MemberIn{ComponentID: w.Shared.ID, Name: "svc", Parameters: map[string]any{"name": "svc"}}
			_, err := w.Zones.AddSystemService(context.Background(), w.Admin, w.Zone(t).Zone.ID, in)
			apptest.WantField(t, err, "landing_zone") // a published zone's system services are deployed already
		},
	},
	"landingzone.Service.WithdrawTemplate": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			zw := w.Zone(t)
			return w.Zones.WithdrawTemplate(context.Background(), p, zw.Zone.ID, zw.Template)
		},
		Then: func(t *testing.T, w *apptest.World) {
			zw := w.Zone(t)
			apptest.WantField(t, w.Zones.WithdrawTemplate(context.Background(), w.Admin, zw.Zone.ID, zw.Template), "template_id") // withdrawing twice
		},
	},
	"landingzone.Service.RemoveSystemService": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			dz := w.DraftZone(t)
			return w.Zones.RemoveSystemService(context.Background(), p, dz.Zone.ID, dz.Service)
		},
		Then: func(t *testing.T, w *apptest.World) {
			apptest.WantField(t, w.Zones.RemoveSystemService(context.Background(), w.Admin, w.Zone(t).Zone.ID, uuid.New()), "landing_zone") // a published zone
		},
	},
}

var ttlCases = map[string]apptest.AuthzCase{
	"landingzone.Service.SetLifetimes": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			z, err := w.Zones.SetLifetimes(context.Background(), p, w.Zone(t).Zone.ID, landingzone.Lifetimes{Default: "7d", Max: "30d"})
			if err == nil && (z.Default != "7d" || z.Max != "30d") {
				t.Errorf("the zone's lifetimes: %+v", z.Lifetimes)
			}
			return err
		},
		Then: func(t *testing.T, w *apptest.World) {
			_, err := w.Zones.SetLifetimes(context.Background(), w.Admin, w.Zone(t).Zone.ID, landingzone.Lifetimes{Default: "31d", Max: "30d"})
			apptest.WantField(t, err, "default_ttl")
		},
	},
}

// TestAuthz_Methods runs the authorization case of each of the package's data-access methods.
func TestAuthz_Methods(t *testing.T) { apptest.RunAuthz(t, zoneCases, ttlCases) }
