package component_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"

	"nimbus/app/apptest"
	"nimbus/app/domain/component"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
)

var componentCases = map[string]apptest.AuthzCase{
	"component.Service.Get": {
		// An unpublished draft is for its authors.
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.ReaderA, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.AdminA, apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			_, err := w.Components.Get(context.Background(), p, w.OfA.ID)
			return err
		},
		Then: func(t *testing.T, w *apptest.World) {
			ctx := context.Background()
			w.PublishedA(t)
			_, err := w.Components.Update(ctx, w.AdminA, w.OfA.ID, component.Patch{Code: apptest.Ptr(w.OfA.Code + "# draft only\n")})
			apptest.Must(t, err)
			c, err := w.Components.Get(ctx, w.ReaderA, w.OfA.ID)
			apptest.Must(t, err)
			if strings.Contains(c.Code, "draft only") || c.Code == "" {
				t.Fatal("a reader sees the draft instead of the published version")
			}
			_, err = w.Components.Get(ctx, w.AdminB, w.Shared.ID)
			apptest.Must(t, err) // published provider-level components are for every tenant
		},
	},
	"component.Service.List": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: apptest.ErrHidden}},
		Served:  []apptest.Actor{apptest.AdminA, apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			cat, err := w.Components.List(context.Background(), p, component.Filter{})
			return apptest.Shown(cat.Components, err, func(c component.Summary) bool { return c.ID == w.OfA.ID })
		},
		Then: func(t *testing.T, w *apptest.World) {
			cat, err := w.Components.List(context.Background(), w.AdminB, component.Filter{})
			apptest.Must(t, err)
			if cat.Total != 1 || cat.Components[0].ID != w.Shared.ID {
				t.Fatalf("tenant admin of B lists %+v, want only the provider-level component", cat.Components)
			}
			cat, err = w.Components.List(context.Background(), w.Admin, component.Filter{})
			apptest.Must(t, err)
			if cat.Total != 2 {
				t.Fatalf("provider admin lists %d components, want 2", cat.Total)
			}
		},
	},
	"component.Service.Create": {
		Refused: []apptest.Refusal{{Who: apptest.UserA, Want: problem.ErrForbidden}, {Who: apptest.AdminB, Want: apptest.Invalid("tenant_id")}},
		Served:  []apptest.Actor{apptest.AdminA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			_, err := w.Components.Create(context.Background(), p, apptest.Machine(t, "allowed", &w.A.ID))
			return err
		},
		Then: func(t *testing.T, w *apptest.World) {
			ctx := context.Background()
			_, err := w.Components.Create(ctx, w.AdminA, apptest.Machine(t, "sneaky", nil))
			apptest.WantErr(t, err, problem.ErrForbidden) // provider-level components are the provider's
			_, err = w.Components.Create(ctx, w.AdminA, apptest.Machine(t, "sneaky", &w.B.ID))
			apptest.WantField(t, err, "tenant_id")
		},
	},
	"component.Service.Update": {
		// An unpublished draft is hidden from non-authors.
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.UserA, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.AdminA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			c, err := w.Components.Update(context.Background(), p, w.OfA.ID, component.Patch{Description: apptest.Ptr("changed")})
			if err == nil && c.Description != "changed" {
				t.Errorf("description %q", c.Description)
			}
			return err
		},
		Then: func(t *testing.T, w *apptest.World) {
			_, err := w.Components.Update(context.Background(), w.AdminA, w.Shared.ID, component.Patch{Description: apptest.Ptr("changed")})
			apptest.WantErr(t, err, problem.ErrForbidden)
		},
	},
	"component.Service.Delete": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.UserA, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.AdminA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			return w.Components.Delete(context.Background(), p, w.OfA.ID)
		},
		Then: func(t *testing.T, w *apptest.World) {
			ctx := context.Background()
			_, err := w.Components.Get(ctx, w.AdminA, w.OfA.ID)
			apptest.WantErr(t, err, problem.ErrNotFound)
			apptest.WantErr(t, w.Components.Delete(ctx, w.AdminA, w.Shared.ID), problem.ErrForbidden)
		},
	},
	"component.Service.Publish": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.AdminA, Want: problem.ErrForbidden}}, // publishing is for provider admins
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			v, err := w.Components.Publish(context.Background(), p, w.OfA.ID, w.OfA.Revision, "v1")
			if err == nil && v.Version != 1 {
				t.Errorf("version %d", v.Version)
			}
			return err
		},
	},
	"component.Service.Deployments": {
		// Every tenant sees the shared component; only those who read A's environments see A's
		// deployment of it.
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: apptest.ErrHidden}, {Who: apptest.Stranger, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ReaderA, apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			web := w.Web(t)
			list, err := w.Components.Deployments(context.Background(), p, w.Shared.ID)
			return apptest.Shown(list, err, func(d component.Deployed) bool { return d.ID == web.ID })
		},
	},
	"component.Service.Versions": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ReaderA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			vs, err := w.Components.Versions(context.Background(), p, w.PublishedA(t).ID)
			if err == nil && len(vs) != 1 {
				t.Errorf("versions %v", vs)
			}
			return err
		},
	},
	"component.Service.Version": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ReaderA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			v, err := w.Components.Version(context.Background(), p, w.PublishedA(t).ID, 1)
			if err == nil && v.Code == "" {
				t.Error("a version comes with its code")
			}
			return err
		},
	},
	"component.Service.ArchiveVersion": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.AdminA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			return w.Components.ArchiveVersion(context.Background(), p, w.PublishedA(t).ID, 1)
		},
	},
	"component.Service.Semantics": {
		Refused: []apptest.Refusal{{Who: apptest.Stranger, Want: problem.ErrForbidden}}, // a user in no tenant reads nothing
		Served:  []apptest.Actor{apptest.ReaderA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			sem, err := w.Components.Semantics(context.Background(), p)
			if err == nil && (len(sem.Providers) != 5 || len(sem.SemanticTypes) != 8) {
				t.Errorf("semantic layer: %d providers, %d types", len(sem.Providers), len(sem.SemanticTypes))
			}
			return err
		},
	},
	"component.Service.Owners": {
		// Those who may not create components in A are not offered A.
		Refused: []apptest.Refusal{{Who: apptest.UserA, Want: apptest.ErrHidden}, {Who: apptest.AdminB, Want: apptest.ErrHidden}},
		Served:  []apptest.Actor{apptest.AdminA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			owners, err := w.Components.Owners(context.Background(), p)
			for _, o := range owners {
				if !p.Can(access.ComponentDefinitionCreate, o.ID) {
					t.Errorf("%s may create components in %s", p.Email, o.Name)
				}
			}
			return apptest.Shown(owners, err, func(o component.Owner) bool { return o.ID == w.A.ID })
		},
		Then: func(t *testing.T, w *apptest.World) {
			owners, err := w.Components.Owners(context.Background(), w.UserA)
			apptest.Must(t, err)
			if len(owners) != 0 {
				t.Fatalf("a plain user may create components in %v", owners)
			}
		},
	},
	"component.Service.RequestCheck": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.UserA, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.AdminA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			chk, err := w.Components.RequestCheck(context.Background(), p, w.OfA.ID, uuid.Nil)
			if err == nil && chk.Status != "queued" {
				t.Errorf("status %q", chk.Status)
			}
			return err
		},
	},
	"component.Service.Check": {
		// Checks show drafts: authors only.
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.ReaderA, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.AdminA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			_, err := w.Components.Check(context.Background(), p, w.CheckA(t).ID)
			return err
		},
	},
	"component.Service.CheckZones": {
		// The zones' Proxmox API access is the provider's.
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			_, err := w.Components.CheckZones(context.Background(), p)
			return err
		},
	},
	"component.Service.LinkRepository": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.UserA, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.AdminA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			_, err := w.Components.LinkRepository(context.Background(), p, w.OfA.ID, w.RepoOfA(t))
			return err
		},
		Then: func(t *testing.T, w *apptest.World) {
			// A provider-level component is linked by provider admins alone.
			_, err := w.Components.LinkRepository(context.Background(), w.AdminA, w.Shared.ID, w.RepoOfA(t))
			apptest.WantErr(t, err, problem.ErrForbidden)
		},
	},
	"component.Service.Repository": {
		// The link says where the draft comes from: for its authors.
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.ReaderA, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.AdminA, apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			w.LinkedA(t)
			l, err := w.Components.Repository(context.Background(), p, w.OfA.ID)
			if err == nil && (l == nil || l.URL != w.RepoOfA(t).URL) {
				return apptest.ErrHidden
			}
			return err
		},
		Then: func(t *testing.T, w *apptest.World) {
			// The token is never shown again, nor is the webhook's secret.
			l, err := w.Components.Repository(context.Background(), w.AdminA, w.OfA.ID)
			apptest.Must(t, err)
			raw, _ := json.Marshal(l)
			if !l.HasToken || strings.Contains(string(raw), w.RepoOfA(t).Token) || strings.Contains(string(raw), w.LinkedA(t).WebhookSecret) {
				t.Fatalf("the link shows a secret: %s", raw)
			}
		},
	},
	"component.Service.UnlinkRepository": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: problem.ErrNotFound}, {Who: apptest.UserA, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.AdminA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			w.LinkedA(t)
			return w.Components.UnlinkRepository(context.Background(), p, w.OfA.ID)
		},
		Then: func(t *testing.T, w *apptest.World) {
			l, err := w.Components.Repository(context.Background(), w.AdminA, w.OfA.ID)
			if err != nil || l != nil {
				t.Fatalf("after unlinking: %+v, %v", l, err)
			}
		},
	},
	"component.Service.AddProvider": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			return w.Components.AddProvider(context.Background(), p, component.NewTerm{Name: "hetzner"})
		},
		Then: func(t *testing.T, w *apptest.World) {
			err := w.Components.AddProvider(context.Background(), w.Admin, component.NewTerm{Name: "hetzner"})
			apptest.WantField(t, err, "name") // a second provider of the same name
		},
	},
	"component.Service.AddSemanticType": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			return w.Components.AddSemanticType(context.Background(), p, component.NewTerm{Name: "LoadBalancer"})
		},
		Then: func(t *testing.T, w *apptest.World) {
			err := w.Components.AddSemanticType(context.Background(), w.Admin, component.NewTerm{Name: "load balancer"})
			apptest.WantField(t, err, "name") // a badly formed type name
		},
	},
	"component.Service.AddResourceType": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			in := component.NewResourceType{Provider: "aws", SemanticType: "Container", PulumiType: "aws:ecs/service:Service"}
			return w.Components.AddResourceType(context.Background(), p, in)
		},
		Then: func(t *testing.T, w *apptest.World) {
			in := component.NewResourceType{Provider: "nowhere", SemanticType: "Container", PulumiType: "aws:ecs/service:Service"}
			apptest.WantField(t, w.Components.AddResourceType(context.Background(), w.Admin, in), "provider")
		},
	},
}

// TestAuthz_Methods runs the authorization case of each of the package's data-access methods.
func TestAuthz_Methods(t *testing.T) { apptest.RunAuthz(t, componentCases) }
