package poller

import (
	"encoding/json"
	"encoding/pem"
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"

	"nimbus/app/kernel/problem"
	"nimbus/app/kernel/secrets"
	"nimbus/app/orchestration/event"
	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/db/dbtest"
)

func TestCheck_AProxmoxSourceIsReachedOverHTTPS(t *testing.T) {
	ca := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: fakeProxmox(t, qemu, tasks).Certificate().Raw}))
	proxmox := func(url, caCert string) []byte {
		c, _ := json.Marshal(Config{Provider: ProxmoxProvider, URL: url, Node: "pve1", TokenID: "nimbus@pve!poller", CACert: caCert})
		return c
	}
	for _, tc := range []struct {
		name   string
		config []byte
		want   string // field and rule, none when accepted
	}{
		{name: "https", config: proxmox("https://pve.example:8006", "")},
		{name: "https with the cluster's CA", config: proxmox("https://pve.example:8006", ca)},
		{name: "http", config: proxmox("http://pve.example:8006", ""), want: "config.url https"},
		{name: "no scheme", config: proxmox("pve.example:8006", ""), want: "config.url https"},
		{name: "a CA that is no PEM", config: proxmox("https://pve.example:8006", "MIIB..."), want: "config.ca_cert pem"},
		{name: "a CA for simcloud", config: []byte(`{"provider":"simcloud","ca_cert":"x"}`), want: "config fields"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := event.NewSource{Config: tc.config}
			if !strings.Contains(string(tc.config), SimcloudProvider) {
				in.Secret = "s3cret"
			}
			v := &problem.ValidationError{}
			Check(in, v)
			var got []string
			for _, f := range v.Fields {
				got = append(got, f.Field+" "+f.Rule)
			}
			if strings.Join(got, ",") != tc.want {
				t.Fatalf("refused for %q (%v), want %q", got, v.Fields, tc.want)
			}
		})
	}
}

// TestClouds_ASourceTrustsTheCAItNames opens a Proxmox source as the worker does: the node's
// certificate is checked against the source's ca_cert, and without it against the system's
// roots, which refuse it.
func TestClouds_ASourceTrustsTheCAItNames(t *testing.T) {
	srv := fakeProxmox(t, qemu, tasks)
	keys, err := secrets.Load(t.TempDir(), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	source := func(caCert string) dbgen.EventSource {
		id := uuid.New()
		keyID, sealed, err := keys.Seal([]byte("s3cret"), id[:])
		if err != nil {
			t.Fatal(err)
		}
		config, _ := json.Marshal(Config{Provider: ProxmoxProvider, URL: srv.URL, Node: "pve1", TokenID: "nimbus@pve!poller", CACert: caCert})
		return dbgen.EventSource{ID: id, Kind: event.CloudProvider, Config: config, Secret: sealed, SecretKeyID: &keyID}
	}
	clouds := Clouds{Keys: keys}
	ca := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	cloud, _, err := clouds.open(t.Context(), nil, source(ca))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := cloud.Machines(t.Context()); err != nil || len(got) != 2 {
		t.Fatalf("machines %v, %v; want the node's two", got, err)
	}
	cloud, _, err = clouds.open(t.Context(), nil, source(""))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cloud.Machines(t.Context()); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("an unknown certificate: %v", err)
	}
}

// A Proxmox source that names a landing zone polls with the zone's API access: its address,
// its token and its CA, read when it polls. It gives none of its own.
func TestClouds_ASourceNamingAZonePollsWithTheZonesAccess(t *testing.T) {
	srv := fakeProxmox(t, qemu, tasks)
	pool := dbtest.Pool(t)
	q := db.Queries(pool)
	keys, err := secrets.Load(t.TempDir(), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	var zone uuid.UUID
	if err := pool.QueryRow(t.Context(), `INSERT INTO landing_zones (name, provider) VALUES ('pve-eu', 'proxmox') RETURNING id`).Scan(&zone); err != nil {
		t.Fatal(err)
	}
	config, _ := json.Marshal(Config{Provider: ProxmoxProvider, Node: "pve1", LandingZoneID: zone.String()})
	src := dbgen.EventSource{ID: uuid.New(), Kind: event.CloudProvider, Config: config}
	v := &problem.ValidationError{}
	Check(event.NewSource{Config: config}, v)
	if err := v.Err(); err != nil {
		t.Fatalf("a source naming a zone is refused: %v", err)
	}
	clouds := Clouds{Keys: keys}
	_, _, err = clouds.open(t.Context(), q, src)
	if !errors.Is(err, errMisconfigured) || !strings.Contains(err.Error(), "landing zone pve-eu has no Proxmox API access") {
		t.Fatalf("a zone without access: %v", err)
	}

	keyID, sealed, err := keys.Seal([]byte("s3cret"), zone[:])
	if err != nil {
		t.Fatal(err)
	}
	_, err = q.SetZoneProxmoxAccess(t.Context(), dbgen.SetZoneProxmoxAccessParams{LandingZoneID: zone, Endpoint: srv.URL,
		TokenID: "nimbus@pve!poller", TokenSecret: sealed, SecretKeyID: keyID, ServerVersion: "8.4.1",
		CaCert: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))})
	if err != nil {
		t.Fatal(err)
	}
	cloud, _, err := clouds.open(t.Context(), q, src)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := cloud.Machines(t.Context()); err != nil || len(got) != 2 {
		t.Fatalf("machines %v, %v; want the node's two", got, err)
	}

	for _, tc := range []struct {
		name   string
		config Config
		secret string
		want   string
	}{
		{"an address of its own too", Config{Provider: ProxmoxProvider, Node: "pve1", LandingZoneID: zone.String(), URL: srv.URL}, "", "config fields"},
		{"a secret of its own too", Config{Provider: ProxmoxProvider, Node: "pve1", LandingZoneID: zone.String()}, "s3cret", "secret forbidden"},
		{"no zone ID", Config{Provider: ProxmoxProvider, Node: "pve1", LandingZoneID: "pve-eu"}, "", "config.landing_zone_id uuid"},
		{"no node", Config{Provider: ProxmoxProvider, LandingZoneID: zone.String()}, "", "config.node pattern"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, _ := json.Marshal(tc.config)
			v := &problem.ValidationError{}
			Check(event.NewSource{Config: raw, Secret: tc.secret}, v)
			var got []string
			for _, f := range v.Fields {
				got = append(got, f.Field+" "+f.Rule)
			}
			if strings.Join(got, ",") != tc.want {
				t.Fatalf("refused for %q, want %q", got, tc.want)
			}
		})
	}
}
