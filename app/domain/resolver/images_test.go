package resolver_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"nimbus/app/apptest"
	"nimbus/app/domain/component"
	"nimbus/app/domain/resolver"
	"nimbus/app/kernel/problem"
	"nimbus/db"
)

// proxmox-vm takes its OS image from the catalog. What the catalog holds for Proxmox is what
// that input accepts, a cloud image of import content, and what it would refuse (a container
// template) is refused when it is added, naming the input's pattern.
func TestImageCatalog_ProxmoxImagesFitTheProxmoxComponentThatTakesThem(t *testing.T) {
	s := apptest.NewSite(t)
	ctx := t.Context()
	vm := apptest.BuiltinIDs(t, s)["proxmox-vm"]
	var rawBindings, rawSchema []byte
	apptest.Must(t, s.Pool.QueryRow(ctx, `SELECT v.resolver_bindings, v.input_schema FROM component_versions v
		JOIN components c ON c.id = v.component_id AND v.version = c.latest_version WHERE c.id = $1`, vm).Scan(&rawBindings, &rawSchema))
	bindings, err := resolver.ParseBindings(rawBindings)
	apptest.Must(t, err)
	schema := component.ParseSchema("input_schema", rawSchema, &problem.ValidationError{})
	var fromCatalog []resolver.Binding
	for _, b := range bindings {
		if b.Type == "image_catalog" {
			fromCatalog = append(fromCatalog, b)
		}
	}
	if len(fromCatalog) != 1 || fromCatalog[0].Input != "os_template" {
		t.Fatalf("proxmox-vm's bindings: %v", bindings)
	}

	// Every Proxmox entry of the catalog, as the deploy's resolve step hands it out.
	env, err := s.Envs.Create(ctx, s.AdminA, s.A.ID, "pve")
	apptest.Must(t, err)
	images, err := s.Resolvers.Images(ctx, s.Admin)
	apptest.Must(t, err)
	resolved := 0
	for _, img := range images {
		if img.Provider != "proxmox" {
			continue
		}
		config, _ := json.Marshal(map[string]string{"os_family": img.OSFamily, "os_version": img.OSVersion})
		apptest.WantStatus(t, s.Call(t, "PUT", "/api/v1/environments/"+env.ID.String()+"/resolvers/image_catalog", s.Token(t, s.Admin), string(config)), http.StatusOK)
		got, err := resolver.Resolve(ctx, db.Queries(s.Pool), fromCatalog, resolver.Deployment{ID: uuid.New(), EnvID: env.ID, Provider: "proxmox",
			Component: "proxmox-vm", SemanticType: "VirtualMachine"}, uuid.New(), map[string]any{})
		apptest.Must(t, err)
		if problem := schema.Check("os_template", got["os_template"]); problem != "" {
			t.Errorf("%s %s resolves to %v, which proxmox-vm refuses: %s", img.OSFamily, img.OSVersion, got["os_template"], problem)
		}
		resolved++
	}
	if resolved < 3 {
		t.Fatalf("the catalog holds %d Proxmox images, want the three it was seeded with", resolved)
	}

	// A container template is no image a virtual machine boots.
	_, err = s.Resolvers.AddImage(ctx, s.Admin, resolver.Image{Provider: "proxmox", OSFamily: "alpine", OSVersion: "3.20",
		ImageID: "local:vztmpl/alpine-3.20-default_20240908_amd64.tar.xz"})
	apptest.WantField(t, err, "image_id")
	if msg := err.Error(); !strings.Contains(msg, "proxmox-vm's os_template matches ^[A-Za-z][A-Za-z0-9._-]*:import/\\S+$") ||
		!strings.Contains(msg, "such as local:import/debian-12-genericcloud-amd64.qcow2") {
		t.Fatalf("the refusal says %q, want the pattern named", msg)
	}
	r := s.Call(t, "POST", "/api/v1/images", s.Token(t, s.Admin), map[string]any{"provider": "proxmox", "os_family": "alpine", "os_version": "3.20",
		"image_id": "alpine-3.20"})
	apptest.WantStatus(t, r, http.StatusUnprocessableEntity)
	apptest.WantProblem(t, r, "image_id", "pattern")
	_, err = s.Resolvers.AddImage(ctx, s.Admin, resolver.Image{Provider: "proxmox", OSFamily: "alpine", OSVersion: "3.20",
		ImageID: "local:import/alpine-3.20-cloudinit-amd64.qcow2"})
	apptest.Must(t, err)
	// A provider none of whose components takes an image from the catalog takes any reference.
	_, err = s.Resolvers.AddImage(ctx, s.Admin, apptest.Alpine("3.20"))
	apptest.Must(t, err)
}
