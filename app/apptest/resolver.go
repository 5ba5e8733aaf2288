package apptest

import (
	"context"
	"encoding/json"
	"testing"

	"nimbus/app/domain/ipam"
	"nimbus/app/domain/resolver"
)

// NetA is a pool of tenant A's environment dev, made by the provider admin.
func (w *World) NetA(t *testing.T) ipam.Pool {
	return Fixture(w, "netA", func() ipam.Pool {
		p, err := w.Ipam.CreatePool(context.Background(), w.Admin, ipam.NewPool{Name: "net", Prefix: "10.1.0.0/24", EnvironmentID: w.Dev(t).ID})
		Must(t, err)
		return p
	})
}

// Image is an entry the provider admin added to the image catalog.
func (w *World) Image(t *testing.T) resolver.Image {
	return Fixture(w, "image", func() resolver.Image {
		img, err := w.Resolvers.AddImage(context.Background(), w.Admin, Alpine("3.21"))
		Must(t, err)
		return img
	})
}

// Alpine is an image catalog entry of the simulated cloud.
func Alpine(version string) resolver.Image {
	return resolver.Image{Provider: "simcloud", OSFamily: "alpine", OSVersion: version, ImageID: "alpine-" + version}
}

// BoundMachine publishes a machine whose name and address come from resolvers, and a secret
// made up for it.
func (s *Site) BoundMachine(t *testing.T) string {
	t.Helper()
	m := Machine(t, "bound-machine", nil)
	m.Draft.ResolverBindings = json.RawMessage(`{"ip_address": "ipam", "name": "naming"}`)
	c, err := s.Components.Create(t.Context(), s.Admin, m)
	Must(t, err)
	_, err = s.Components.Publish(t.Context(), s.Admin, c.ID, c.Revision, "first")
	Must(t, err)
	return c.ID.String()
}
