package deploy

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"nimbus/app/domain/proxmox"
	"nimbus/app/kernel/secrets"
	"nimbus/app/platform/pulumix"
	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/db/dbtest"
)

// A Proxmox deployment's engine is handed its zone's API in its environment, the variables the
// Proxmox VE provider reads when the program declares no provider, its CA certificate as the
// roots it trusts, and the API's port as the one it may reach; never a setting, and the secret
// is hidden from what the engine says. A zone without API access refuses it in words, and for
// good: a retry fails the same way.
func TestAccess_AProxmoxEngineGetsItsZonesAPIInItsEnvironment(t *testing.T) {
	pool := dbtest.Pool(t)
	ctx := context.Background()
	keys, err := secrets.Load(t.TempDir(), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	d := dbtest.NewDeployment(t, pool)
	var zone uuid.UUID
	if err := pool.QueryRow(ctx, `INSERT INTO landing_zones (name, provider) VALUES ('pve-eu', 'proxmox') RETURNING id`).Scan(&zone); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE environments SET landing_zone_id = $1 WHERE id = $2`, zone, d.EnvironmentID); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE components SET provider_id = (SELECT id FROM semantic_providers WHERE name = 'proxmox') WHERE id = $1`, d.ComponentID); err != nil {
		t.Fatal(err)
	}
	q := db.Queries(pool)
	site := engineSite{provider: proxmox.Provider, zone: uuid.NullUUID{UUID: zone, Valid: true}}

	_, err = clusterAccessOf(ctx, q, keys, site, 0)
	if !errors.Is(err, proxmox.ErrNoAccess) || !finalOnCluster(err) ||
		err.Error() != "landing zone pve-eu has no Proxmox API access: a provider admin sets it on the zone's page" {
		t.Fatalf("without access: %v", err)
	}

	const secret, ca = "0b7e5c2a-canary-4f0e", "-----BEGIN CERTIFICATE-----\nthe zone's CA\n-----END CERTIFICATE-----\n"
	keyID, sealed, err := keys.Seal([]byte(secret), zone[:])
	if err != nil {
		t.Fatal(err)
	}
	_, err = q.SetZoneProxmoxAccess(ctx, dbgen.SetZoneProxmoxAccessParams{LandingZoneID: zone, Endpoint: "https://pve.example:8443",
		TokenID: "nimbus@pve!deploy", TokenSecret: sealed, SecretKeyID: keyID, CaCert: ca, ServerVersion: "8.4.1"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := clusterAccessOf(ctx, q, keys, site, 0)
	if err != nil {
		t.Fatal(err)
	}
	st := pulumix.Stack{Name: "d-1"}
	a.give(&st)
	want := map[string]string{"PROXMOX_VE_ENDPOINT": "https://pve.example:8443", "PROXMOX_VE_API_TOKEN": "nimbus@pve!deploy=" + secret,
		"PROXMOX_VE_INSECURE": "false"}
	if len(st.Env) != len(want) {
		t.Fatalf("the engine's environment: %v, want %v", st.Env, want)
	}
	for k, v := range want {
		if st.Env[k] != v {
			t.Errorf("%s=%q, want %q", k, st.Env[k], v)
		}
	}
	if string(st.Files["SSL_CERT_FILE"]) != ca || len(st.Files) != 1 {
		t.Errorf("the engine's files: %v", st.Files)
	}
	if !slices.Equal(st.Hidden, []string{secret}) {
		t.Errorf("what the engine says hides %v, want the secret", st.Hidden)
	}
	if !slices.Equal(st.Ports, []uint16{8443}) {
		t.Errorf("the engine may reach ports %v, want the API's alone", st.Ports)
	}
	for k, v := range st.Settings {
		if strings.Contains(v, secret) || strings.HasPrefix(k, "proxmoxve:") {
			t.Errorf("a setting holds the access: %s=%s", k, v)
		}
	}
}
