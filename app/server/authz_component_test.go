package server_test

import (
	"context"
	"strings"
	"testing"

	"nimbus/app/access"
	"nimbus/app/component"
	"nimbus/app/problem"
)

func ptr[T any](v T) *T { return &v }

// publishedA is tenant A's component with its first version published.
func (w *world) publishedA(t *testing.T) component.Component {
	return fixture(w, "publishedA", func() component.Component {
		_, err := w.components.Publish(context.Background(), w.admin, w.ofA.ID, w.ofA.Revision, "v1")
		must(t, err)
		return w.ofA
	})
}

// checkA is a check of tenant A's component, requested by A's admin.
func (w *world) checkA(t *testing.T) component.Check {
	return fixture(w, "checkA", func() component.Check {
		chk, err := w.components.RequestCheck(context.Background(), w.adminA, w.ofA.ID)
		must(t, err)
		return chk
	})
}

var componentCases = map[string]authzCase{
	"component.Service.Get": {
		// An unpublished draft is for its authors.
		refused: []refusal{{adminB, problem.ErrNotFound}, {readerA, problem.ErrNotFound}},
		served:  []actor{adminA, providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			_, err := w.components.Get(context.Background(), p, w.ofA.ID)
			return err
		},
		then: func(t *testing.T, w *world) {
			ctx := context.Background()
			w.publishedA(t)
			_, err := w.components.Update(ctx, w.adminA, w.ofA.ID, component.Patch{Code: ptr(w.ofA.Code + "# draft only\n")})
			must(t, err)
			c, err := w.components.Get(ctx, w.readerA, w.ofA.ID)
			must(t, err)
			if strings.Contains(c.Code, "draft only") || c.Code == "" {
				t.Fatal("a reader sees the draft instead of the published version")
			}
			_, err = w.components.Get(ctx, w.adminB, w.shared.ID)
			must(t, err) // published provider-level components are for every tenant
		},
	},
	"component.Service.List": {
		refused: []refusal{{adminB, errHidden}},
		served:  []actor{adminA, providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			cat, err := w.components.List(context.Background(), p, component.Filter{})
			return shown(cat.Components, err, func(c component.Summary) bool { return c.ID == w.ofA.ID })
		},
		then: func(t *testing.T, w *world) {
			cat, err := w.components.List(context.Background(), w.adminB, component.Filter{})
			must(t, err)
			if cat.Total != 1 || cat.Components[0].ID != w.shared.ID {
				t.Fatalf("tenant admin of B lists %+v, want only the provider-level component", cat.Components)
			}
			cat, err = w.components.List(context.Background(), w.admin, component.Filter{})
			must(t, err)
			if cat.Total != 2 {
				t.Fatalf("provider admin lists %d components, want 2", cat.Total)
			}
		},
	},
	"component.Service.Create": {
		refused: []refusal{{userA, problem.ErrForbidden}, {adminB, invalid("tenant_id")}},
		served:  []actor{adminA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			_, err := w.components.Create(context.Background(), p, machine(t, "allowed", &w.a.ID))
			return err
		},
		then: func(t *testing.T, w *world) {
			ctx := context.Background()
			_, err := w.components.Create(ctx, w.adminA, machine(t, "sneaky", nil))
			wantErr(t, err, problem.ErrForbidden) // provider-level components are the provider's
			_, err = w.components.Create(ctx, w.adminA, machine(t, "sneaky", &w.b.ID))
			wantField(t, err, "tenant_id")
		},
	},
	"component.Service.Update": {
		// An unpublished draft is hidden from non-authors.
		refused: []refusal{{adminB, problem.ErrNotFound}, {userA, problem.ErrNotFound}},
		served:  []actor{adminA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			c, err := w.components.Update(context.Background(), p, w.ofA.ID, component.Patch{Description: ptr("changed")})
			if err == nil && c.Description != "changed" {
				t.Errorf("description %q", c.Description)
			}
			return err
		},
		then: func(t *testing.T, w *world) {
			_, err := w.components.Update(context.Background(), w.adminA, w.shared.ID, component.Patch{Description: ptr("changed")})
			wantErr(t, err, problem.ErrForbidden)
		},
	},
	"component.Service.Delete": {
		refused: []refusal{{adminB, problem.ErrNotFound}, {userA, problem.ErrNotFound}},
		served:  []actor{adminA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			return w.components.Delete(context.Background(), p, w.ofA.ID)
		},
		then: func(t *testing.T, w *world) {
			ctx := context.Background()
			_, err := w.components.Get(ctx, w.adminA, w.ofA.ID)
			wantErr(t, err, problem.ErrNotFound)
			wantErr(t, w.components.Delete(ctx, w.adminA, w.shared.ID), problem.ErrForbidden)
		},
	},
	"component.Service.Publish": {
		refused: []refusal{{adminB, problem.ErrNotFound}, {adminA, problem.ErrForbidden}}, // publishing is for provider admins
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			v, err := w.components.Publish(context.Background(), p, w.ofA.ID, w.ofA.Revision, "v1")
			if err == nil && v.Version != 1 {
				t.Errorf("version %d", v.Version)
			}
			return err
		},
	},
	"component.Service.Deployments": {
		// Every tenant sees the shared component; only those who read A's environments see A's
		// deployment of it.
		refused: []refusal{{adminB, errHidden}, {stranger, problem.ErrNotFound}},
		served:  []actor{readerA, providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			web := w.web(t)
			list, err := w.components.Deployments(context.Background(), p, w.shared.ID)
			return shown(list, err, func(d component.Deployed) bool { return d.ID == web.ID })
		},
	},
	"component.Service.Versions": {
		refused: []refusal{{adminB, problem.ErrNotFound}},
		served:  []actor{readerA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			vs, err := w.components.Versions(context.Background(), p, w.publishedA(t).ID)
			if err == nil && len(vs) != 1 {
				t.Errorf("versions %v", vs)
			}
			return err
		},
	},
	"component.Service.Version": {
		refused: []refusal{{adminB, problem.ErrNotFound}},
		served:  []actor{readerA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			v, err := w.components.Version(context.Background(), p, w.publishedA(t).ID, 1)
			if err == nil && v.Code == "" {
				t.Error("a version comes with its code")
			}
			return err
		},
	},
	"component.Service.ArchiveVersion": {
		refused: []refusal{{adminB, problem.ErrNotFound}, {adminA, problem.ErrForbidden}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			return w.components.ArchiveVersion(context.Background(), p, w.publishedA(t).ID, 1)
		},
	},
	"component.Service.Semantics": {
		refused: []refusal{{stranger, problem.ErrForbidden}}, // a user in no tenant reads nothing
		served:  []actor{readerA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			sem, err := w.components.Semantics(context.Background(), p)
			if err == nil && (len(sem.Providers) != 5 || len(sem.SemanticTypes) != 8) {
				t.Errorf("semantic layer: %d providers, %d types", len(sem.Providers), len(sem.SemanticTypes))
			}
			return err
		},
	},
	"component.Service.Owners": {
		// Those who may not create components in A are not offered A.
		refused: []refusal{{userA, errHidden}, {adminB, errHidden}},
		served:  []actor{adminA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			owners, err := w.components.Owners(context.Background(), p)
			for _, o := range owners {
				if !p.Can(access.ComponentDefinitionCreate, o.ID) {
					t.Errorf("%s may create components in %s", p.Email, o.Name)
				}
			}
			return shown(owners, err, func(o component.Owner) bool { return o.ID == w.a.ID })
		},
		then: func(t *testing.T, w *world) {
			owners, err := w.components.Owners(context.Background(), w.userA)
			must(t, err)
			if len(owners) != 0 {
				t.Fatalf("a plain user may create components in %v", owners)
			}
		},
	},
	"component.Service.RequestCheck": {
		refused: []refusal{{adminB, problem.ErrNotFound}, {userA, problem.ErrNotFound}},
		served:  []actor{adminA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			chk, err := w.components.RequestCheck(context.Background(), p, w.ofA.ID)
			if err == nil && chk.Status != "queued" {
				t.Errorf("status %q", chk.Status)
			}
			return err
		},
	},
	"component.Service.Check": {
		// Checks show drafts: authors only.
		refused: []refusal{{adminB, problem.ErrNotFound}, {readerA, problem.ErrNotFound}},
		served:  []actor{adminA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			_, err := w.components.Check(context.Background(), p, w.checkA(t).ID)
			return err
		},
	},
	"component.Service.AddProvider": {
		refused: []refusal{{adminA, problem.ErrForbidden}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			return w.components.AddProvider(context.Background(), p, component.NewTerm{Name: "hetzner"})
		},
		then: func(t *testing.T, w *world) {
			err := w.components.AddProvider(context.Background(), w.admin, component.NewTerm{Name: "hetzner"})
			wantField(t, err, "name") // a second provider of the same name
		},
	},
	"component.Service.AddSemanticType": {
		refused: []refusal{{adminA, problem.ErrForbidden}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			return w.components.AddSemanticType(context.Background(), p, component.NewTerm{Name: "LoadBalancer"})
		},
		then: func(t *testing.T, w *world) {
			err := w.components.AddSemanticType(context.Background(), w.admin, component.NewTerm{Name: "load balancer"})
			wantField(t, err, "name") // a badly formed type name
		},
	},
	"component.Service.AddResourceType": {
		refused: []refusal{{adminA, problem.ErrForbidden}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			in := component.NewResourceType{Provider: "aws", SemanticType: "Container", PulumiType: "aws:ecs/service:Service"}
			return w.components.AddResourceType(context.Background(), p, in)
		},
		then: func(t *testing.T, w *world) {
			in := component.NewResourceType{Provider: "nowhere", SemanticType: "Container", PulumiType: "aws:ecs/service:Service"}
			wantField(t, w.components.AddResourceType(context.Background(), w.admin, in), "provider")
		},
	},
}
