package apptest

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"nimbus/app/domain/component"
	"nimbus/app/domain/proxmox"
	"nimbus/app/orchestration/landingzone"
)

// ProxmoxAPI stands for a Proxmox VE API. No Proxmox VE runs where the tests do: this is an
// HTTPS server of the tests' own answering /api2/json/version as Proxmox does, to the one
// API token it knows, and 401 to anything else.
type ProxmoxAPI struct {
	URL     string
	CA      string // PEM of the server's certificate, which no system root trusts
	TokenID string
	Secret  string
	Asked   atomic.Int32 // requests that carried the token
	srv     *httptest.Server
}

// ProxmoxNote drafts a Proxmox component of the provider's that makes no resource, only hands
// its name back: what reaches the engine is the zone's access, which its tests follow.
func ProxmoxNote(t testing.TB, s *Site) component.Component {
	t.Helper()
	c, err := s.Components.Create(t.Context(), s.Admin, component.New{Draft: component.Draft{Name: "pve-note", Language: "yaml",
		Code:         "name: pve-note\nruntime: yaml\nconfig:\n  name:\n    type: string\noutputs:\n  name: ${name}\n",
		InputSchema:  []byte(`{"type":"object","required":["name"],"properties":{"name":{"type":"string"}}}`),
		OutputSchema: []byte(`{"type":"object","properties":{"name":{"type":"string"}}}`)},
		Provider: "proxmox", SemanticType: "VirtualMachine"})
	Must(t, err)
	return c
}

// NewProxmoxAPI starts a stand-in Proxmox VE API for the test.
func NewProxmoxAPI(t testing.TB) *ProxmoxAPI {
	p := &ProxmoxAPI{TokenID: "nimbus@pve!deploy", Secret: "5f1c2e7a-33b4-4c1e-9d0a-" + uuid.NewString()[:12]}
	p.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "PVEAPIToken="+p.TokenID+"="+p.Secret {
			w.Header().Set("Content-Type", "application/json;charset=UTF-8")
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"data":null}`))
			return
		}
		p.Asked.Add(1)
		if r.URL.Path != "/api2/json/version" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json;charset=UTF-8")
		w.Write([]byte(`{"data":{"version":"8.4.1","release":"8.4","repoid":"2a5fa54a8503f96d"}}`))
	}))
	t.Cleanup(p.srv.Close)
	p.URL = p.srv.URL
	p.CA = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.srv.Certificate().Raw}))
	return p
}

// Access is what a provider admin gives a zone to reach this API.
func (p *ProxmoxAPI) Access() proxmox.NewAccess {
	return proxmox.NewAccess{Endpoint: p.URL, TokenID: p.TokenID, Secret: p.Secret, CACert: p.CA}
}

// Stop closes the API, as a Proxmox VE that went away.
func (p *ProxmoxAPI) Stop() { p.srv.Close() }

// ProxmoxZone is a draft landing zone for Proxmox.
func (w *World) ProxmoxZone(t *testing.T) uuid.UUID {
	return Fixture(w, "proxmoxZone", func() uuid.UUID {
		z, err := w.Zones.Create(context.Background(), w.Admin, landingzone.NewZone{Name: "pve", Provider: "proxmox"})
		Must(t, err)
		return z.ID
	})
}
