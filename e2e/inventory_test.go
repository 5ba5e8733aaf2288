package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
)

// TestBrowser_InventoryFindsAMachineByAddress is a provider admin looking for what holds an
// address: the inventory's search finds the machine, its page names its network, and the
// network's page names the machine back; a search too short to serve is refused beside its
// field, and the export carries the filter.
func TestBrowser_InventoryFindsAMachineByAddress(t *testing.T) {
	t.Parallel()
	a := startApp(t)
	ctx := context.Background()
	acme := a.createTenant(t, "acme")
	var network, machine uuid.UUID
	err := a.pool.QueryRow(ctx, `INSERT INTO inventory_items (type, provider_id, name, search, tenant_id, status)
		VALUES ('simcloud:index:Network', 'n-1', 'acme-net', 'acme-net n-1', $1, 'active') RETURNING id`, acme.ID).Scan(&network)
	if err != nil {
		t.Fatal(err)
	}
	err = a.pool.QueryRow(ctx, `INSERT INTO inventory_items (type, provider_id, name, addresses, outputs, refs, search, tenant_id, status)
		VALUES ('simcloud:index:Machine', 'm-1', 'web-1', '{10.0.0.7}', '{"ip": "10.0.0.7", "networkId": "n-1"}',
		'{"networkId": "n-1"}', 'web-1 m-1 10.0.0.7', $1, 'active') RETURNING id`, acme.ID).Scan(&machine)
	if err != nil {
		t.Fatal(err)
	}
	s := newSession(t, newBrowser(t), a)
	s.signIn(adminEmail, adminPassword)

	s.open("/inventory")
	s.fill("#f-q", "10")
	if status := s.submit("form.filters"); status != http.StatusUnprocessableEntity {
		t.Fatalf("a two-character search answered %d", status)
	}
	if msg := s.fieldError("q"); !strings.Contains(msg, "at least 3 characters") {
		t.Fatalf("the search's error reads %q", msg)
	}
	s.open("/inventory")
	s.fill("#f-q", "10.0.0.7")
	if status := s.submit("form.filters"); status != http.StatusOK {
		t.Fatalf("the search answered %d", status)
	}
	rows := s.rows("inventory")
	if len(rows) != 1 || rows[0][0] != "web-1" || rows[0][2] != "10.0.0.7" || rows[0][3] != "acme" {
		t.Fatalf("the search by address found %q", rows)
	}
	if href := eval[string](s, `document.querySelector('[data-testid=export-csv]').getAttribute('href')`); href != "/inventory/export.csv?q=10.0.0.7" {
		t.Fatalf("the export leads to %s", href)
	}

	s.follow(`[data-testid=inventory] tbody a`)
	if got := s.path(); got != "/inventory/"+machine.String() {
		t.Fatalf("the search's link led to %s", got)
	}
	if got := s.rows("related"); len(got) != 1 || got[0][0] != "acme-net" || !strings.Contains(got[0][2], "networkId") {
		t.Fatalf("the machine's relations: %q", got)
	}
	s.follow(`[data-testid=related] tbody a`)
	if got := s.path(); got != "/inventory/"+network.String() {
		t.Fatalf("the relation's link led to %s", got)
	}
	if got := s.rows("related"); len(got) != 1 || got[0][0] != "web-1" || !strings.HasPrefix(got[0][2], "names this") {
		t.Fatalf("the network's relations: %q", got)
	}
}

// TestBrowser_InventoryIgnoresWhatDiscoveryFound is a provider admin setting aside a machine
// the zone's discovery found: ignored from its page, it leaves the list until the filter asks
// for ignored items, and its page takes it back.
func TestBrowser_InventoryIgnoresWhatDiscoveryFound(t *testing.T) {
	t.Parallel()
	a := startApp(t)
	var found uuid.UUID
	err := a.pool.QueryRow(context.Background(), `INSERT INTO inventory_items (type, provider_id, name, search, status)
		VALUES ('simcloud:index:Machine', 'm-0f0f0f0f', 'm-0f0f0f0f', 'm-0f0f0f0f', 'unmanaged') RETURNING id`).Scan(&found)
	if err != nil {
		t.Fatal(err)
	}
	s := newSession(t, newBrowser(t), a)
	s.signIn(adminEmail, adminPassword)

	s.open("/inventory/" + found.String())
	if status := s.submit(`form[action$="/ignore"]`); status != http.StatusOK {
		t.Fatalf("ignoring answered %d", status)
	}
	if got := s.text(`[data-testid=item-status]`); got != "ignored" {
		t.Fatalf("after ignoring, the item is %q", got)
	}
	s.open("/inventory")
	if rows := s.rows("inventory"); len(rows) != 1 || !strings.HasPrefix(rows[0][0], "No items") {
		t.Fatalf("the list shows %q, want nothing but the ignored item, left out", rows)
	}
	s.choose("#f-status", "ignored")
	s.submit("form.filters")
	if rows := s.rows("inventory"); len(rows) != 1 || rows[0][0] != "m-0f0f0f0f" {
		t.Fatalf("the ignored filter shows %q", rows)
	}

	s.open("/inventory/" + found.String())
	s.submit(`form[action$="/unignore"]`)
	if got := s.text(`[data-testid=item-status]`); got != "unmanaged" {
		t.Fatalf("taken back, the item is %q", got)
	}
}
