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

var componentCases = map[string]func(t *testing.T, w *world){
	"component.Service.Get": func(t *testing.T, w *world) {
		ctx := context.Background()
		_, err := w.components.Get(ctx, w.adminB, w.ofA.ID)
		wantErr(t, err, problem.ErrNotFound)
		_, err = w.components.Get(ctx, w.readerA, w.ofA.ID)
		wantErr(t, err, problem.ErrNotFound) // an unpublished draft is for its authors
		_, err = w.components.Get(ctx, w.adminA, w.ofA.ID)
		must(t, err)
		_, err = w.components.Publish(ctx, w.admin, w.ofA.ID, w.ofA.Revision, "v1")
		must(t, err)
		_, err = w.components.Update(ctx, w.adminA, w.ofA.ID, component.Patch{Code: ptr(w.ofA.Code + "# draft only\n")})
		must(t, err)
		c, err := w.components.Get(ctx, w.readerA, w.ofA.ID)
		must(t, err)
		if strings.Contains(c.Code, "draft only") || c.Code == "" {
			t.Fatal("a reader sees the draft instead of the published version")
		}
		_, err = w.components.Get(ctx, w.adminB, w.shared.ID)
		must(t, err) // published provider-level components are for every tenant
	},
	"component.Service.List": func(t *testing.T, w *world) {
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
	"component.Service.Create": func(t *testing.T, w *world) {
		ctx := context.Background()
		_, err := w.components.Create(ctx, w.adminA, machine(t, "sneaky", nil))
		wantErr(t, err, problem.ErrForbidden)
		_, err = w.components.Create(ctx, w.userA, machine(t, "sneaky", &w.a.ID))
		wantErr(t, err, problem.ErrForbidden)
		_, err = w.components.Create(ctx, w.adminA, machine(t, "sneaky", &w.b.ID))
		if problem.FieldOf(err) != "tenant_id" {
			t.Fatalf("creating in another tenant: %v, want a tenant_id error", err)
		}
		_, err = w.components.Create(ctx, w.adminA, machine(t, "allowed", &w.a.ID))
		must(t, err)
	},
	"component.Service.Update": func(t *testing.T, w *world) {
		ctx := context.Background()
		p := component.Patch{Description: ptr("changed")}
		_, err := w.components.Update(ctx, w.adminA, w.shared.ID, p)
		wantErr(t, err, problem.ErrForbidden)
		_, err = w.components.Update(ctx, w.adminB, w.ofA.ID, p)
		wantErr(t, err, problem.ErrNotFound)
		_, err = w.components.Update(ctx, w.userA, w.ofA.ID, p)
		wantErr(t, err, problem.ErrNotFound) // an unpublished draft is hidden from non-authors
		c, err := w.components.Update(ctx, w.adminA, w.ofA.ID, p)
		must(t, err)
		if c.Description != "changed" {
			t.Fatalf("description %q", c.Description)
		}
	},
	"component.Service.Delete": func(t *testing.T, w *world) {
		ctx := context.Background()
		wantErr(t, w.components.Delete(ctx, w.adminA, w.shared.ID), problem.ErrForbidden)
		wantErr(t, w.components.Delete(ctx, w.adminB, w.ofA.ID), problem.ErrNotFound)
		must(t, w.components.Delete(ctx, w.adminA, w.ofA.ID))
		_, err := w.components.Get(ctx, w.adminA, w.ofA.ID)
		wantErr(t, err, problem.ErrNotFound)
	},
	"component.Service.Publish": func(t *testing.T, w *world) {
		ctx := context.Background()
		_, err := w.components.Publish(ctx, w.adminB, w.ofA.ID, w.ofA.Revision, "v1")
		wantErr(t, err, problem.ErrNotFound)
		_, err = w.components.Publish(ctx, w.adminA, w.ofA.ID, w.ofA.Revision, "v1")
		wantErr(t, err, problem.ErrForbidden) // publishing is for provider admins
		v, err := w.components.Publish(ctx, w.admin, w.ofA.ID, w.ofA.Revision, "v1")
		must(t, err)
		if v.Version != 1 {
			t.Fatalf("version %d", v.Version)
		}
	},
	"component.Service.Versions": func(t *testing.T, w *world) {
		ctx := context.Background()
		_, err := w.components.Publish(ctx, w.admin, w.ofA.ID, w.ofA.Revision, "v1")
		must(t, err)
		_, err = w.components.Versions(ctx, w.adminB, w.ofA.ID)
		wantErr(t, err, problem.ErrNotFound)
		vs, err := w.components.Versions(ctx, w.readerA, w.ofA.ID)
		must(t, err)
		if len(vs) != 1 {
			t.Fatalf("versions %v", vs)
		}
	},
	"component.Service.Version": func(t *testing.T, w *world) {
		ctx := context.Background()
		_, err := w.components.Publish(ctx, w.admin, w.ofA.ID, w.ofA.Revision, "v1")
		must(t, err)
		_, err = w.components.Version(ctx, w.adminB, w.ofA.ID, 1)
		wantErr(t, err, problem.ErrNotFound)
		v, err := w.components.Version(ctx, w.readerA, w.ofA.ID, 1)
		must(t, err)
		if v.Code == "" {
			t.Fatal("a version comes with its code")
		}
	},
	"component.Service.ArchiveVersion": func(t *testing.T, w *world) {
		ctx := context.Background()
		_, err := w.components.Publish(ctx, w.admin, w.ofA.ID, w.ofA.Revision, "v1")
		must(t, err)
		wantErr(t, w.components.ArchiveVersion(ctx, w.adminB, w.ofA.ID, 1), problem.ErrNotFound)
		wantErr(t, w.components.ArchiveVersion(ctx, w.adminA, w.ofA.ID, 1), problem.ErrForbidden)
		must(t, w.components.ArchiveVersion(ctx, w.admin, w.ofA.ID, 1))
	},
	"component.Service.Semantics": func(t *testing.T, w *world) {
		_, err := w.components.Semantics(context.Background(), access.Principal{UserID: w.admin.UserID})
		wantErr(t, err, problem.ErrForbidden) // a user in no tenant reads nothing
		sem, err := w.components.Semantics(context.Background(), w.readerA)
		must(t, err)
		if len(sem.Providers) != 5 || len(sem.SemanticTypes) != 8 {
			t.Fatalf("semantic layer: %d providers, %d types", len(sem.Providers), len(sem.SemanticTypes))
		}
	},
	"component.Service.Owners": func(t *testing.T, w *world) {
		owners, err := w.components.Owners(context.Background(), w.userA)
		must(t, err)
		if len(owners) != 0 {
			t.Fatalf("a plain user may create components in %v", owners)
		}
		owners, err = w.components.Owners(context.Background(), w.adminA)
		must(t, err)
		if len(owners) != 1 || owners[0].ID != w.a.ID {
			t.Fatalf("tenant admin of A may create in %v, want only A", owners)
		}
	},
	"component.Service.RequestCheck": func(t *testing.T, w *world) {
		ctx := context.Background()
		_, err := w.components.RequestCheck(ctx, w.adminB, w.ofA.ID)
		wantErr(t, err, problem.ErrNotFound)
		_, err = w.components.RequestCheck(ctx, w.userA, w.ofA.ID)
		wantErr(t, err, problem.ErrNotFound)
		chk, err := w.components.RequestCheck(ctx, w.adminA, w.ofA.ID)
		must(t, err)
		if chk.Status != "queued" {
			t.Fatalf("status %q", chk.Status)
		}
	},
	"component.Service.Check": func(t *testing.T, w *world) {
		ctx := context.Background()
		chk, err := w.components.RequestCheck(ctx, w.adminA, w.ofA.ID)
		must(t, err)
		_, err = w.components.Check(ctx, w.adminB, chk.ID)
		wantErr(t, err, problem.ErrNotFound)
		_, err = w.components.Check(ctx, w.readerA, chk.ID)
		wantErr(t, err, problem.ErrNotFound) // checks show drafts: authors only
		_, err = w.components.Check(ctx, w.adminA, chk.ID)
		must(t, err)
	},
	"component.Service.AddProvider": func(t *testing.T, w *world) {
		ctx := context.Background()
		wantErr(t, w.components.AddProvider(ctx, w.adminA, component.NewTerm{Name: "hetzner"}), problem.ErrForbidden)
		must(t, w.components.AddProvider(ctx, w.admin, component.NewTerm{Name: "hetzner"}))
		if problem.FieldOf(w.components.AddProvider(ctx, w.admin, component.NewTerm{Name: "hetzner"})) != "name" {
			t.Fatal("a second provider of the same name was not refused on its name")
		}
	},
	"component.Service.AddSemanticType": func(t *testing.T, w *world) {
		ctx := context.Background()
		wantErr(t, w.components.AddSemanticType(ctx, w.adminA, component.NewTerm{Name: "LoadBalancer"}), problem.ErrForbidden)
		must(t, w.components.AddSemanticType(ctx, w.admin, component.NewTerm{Name: "LoadBalancer"}))
		if problem.FieldOf(w.components.AddSemanticType(ctx, w.admin, component.NewTerm{Name: "load balancer"})) != "name" {
			t.Fatal("a badly formed type name was not refused on its name")
		}
	},
	"component.Service.AddResourceType": func(t *testing.T, w *world) {
		ctx := context.Background()
		in := component.NewResourceType{Provider: "aws", SemanticType: "Container", PulumiType: "aws:ecs/service:Service"}
		wantErr(t, w.components.AddResourceType(ctx, w.adminA, in), problem.ErrForbidden)
		must(t, w.components.AddResourceType(ctx, w.admin, in))
		in.Provider = "nowhere"
		if problem.FieldOf(w.components.AddResourceType(ctx, w.admin, in)) != "provider" {
			t.Fatal("an unknown provider was not refused on its name")
		}
	},
}
