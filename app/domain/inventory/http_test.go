package inventory_test

import (
	"encoding/csv"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/domain/inventory"
)

func TestInventory_PagesSearchAndExport(t *testing.T) {
	s := apptest.NewSite(t)
	item := s.Item(t).String()
	reader, other := s.Token(t, s.ReaderA), s.Token(t, s.AdminB)

	page := s.Call(t, "GET", "/inventory?q=10.0.0.7", reader, nil)
	apptest.WantStatus(t, page, http.StatusOK)
	apptest.WantIn(t, page, "/inventory/"+item, "db-1", "10.0.0.7", "/inventory/export.csv?q=10.0.0.7")
	if r := s.Call(t, "GET", "/inventory?q=10.0.0.8", reader, nil); strings.Contains(string(r.Body), item) {
		t.Fatal("a search by another address shows the item")
	}
	detail := s.Call(t, "GET", "/inventory/"+item, reader, nil)
	apptest.WantStatus(t, detail, http.StatusOK)
	apptest.WantIn(t, detail, "m-1", "/deployments/"+s.Live(t).ID.String(), "/operations/"+s.Live(t).Op.ID.String())
	// A slot's resource links to its stack instance.
	shop := s.StackInstance(t).ID
	_, err := s.Pool.Exec(t.Context(), `UPDATE inventory_items SET stack_instance_id = $1, slot = 'web' WHERE id = $2`, shop, item)
	apptest.Must(t, err)
	apptest.WantIn(t, s.Call(t, "GET", "/inventory/"+item, reader, nil), "/stack-instances/"+shop.String(), "slot web")

	// Another tenant sees nothing of it: not in the list, and the item is missing to them.
	if r := s.Call(t, "GET", "/inventory?q=10.0.0.7", other, nil); strings.Contains(string(r.Body), item) {
		t.Fatal("B's admin finds A's item")
	}
	apptest.WantStatus(t, s.Call(t, "GET", "/inventory/"+item, other, nil), http.StatusNotFound)
	apptest.WantStatus(t, s.Call(t, "GET", "/api/v1/inventory/"+item, other, nil), http.StatusNotFound)

	// Bad filters are answered by name, on the page and in the API.
	bad := s.Call(t, "GET", "/inventory?q=10&tenant=x&status=gone", reader, nil)
	apptest.WantStatus(t, bad, http.StatusUnprocessableEntity)
	apptest.WantIn(t, bad, `data-field-error="tenant"`, "must be a tenant&#39;s ID")
	apptest.WantProblem(t, s.Call(t, "GET", "/api/v1/inventory?q=10", reader, nil), "q", "min")
	apptest.WantProblem(t, s.Call(t, "GET", "/api/v1/inventory?status=gone", reader, nil), "status", "oneof")

	export := s.Call(t, "GET", "/inventory/export.csv?q=10.0.0.7", reader, nil)
	apptest.WantStatus(t, export, http.StatusOK)
	rows, err := csv.NewReader(strings.NewReader(string(export.Body))).ReadAll()
	apptest.Must(t, err)
	if len(rows) != 2 || rows[0][0] != "id" || rows[1][0] != item || rows[1][6] != "10.0.0.7" || rows[1][9] != s.A.Name {
		t.Fatalf("the CSV export: %q", rows)
	}
	if r := s.Call(t, "GET", "/inventory/export.csv", other, nil); strings.Contains(string(r.Body), item) {
		t.Fatal("B's admin exports A's item")
	}
	var items []map[string]any
	asJSON := s.Call(t, "GET", "/inventory/export.json?status=active", reader, nil)
	apptest.WantStatus(t, asJSON, http.StatusOK)
	apptest.Must(t, json.Unmarshal(asJSON.Body, &items))
	if len(items) != 1 || items[0]["id"] != item {
		t.Fatalf("the JSON export: %s", asJSON.Body)
	}
}

// What discovery found in a zone's cloud is no tenant's: provider admins see it, tenants do not.
func TestInventory_UnmanagedItemsAreTheProviders(t *testing.T) {
	s := apptest.NewSite(t)
	var stranger string
	err := s.Pool.QueryRow(t.Context(), `INSERT INTO inventory_items (type, provider_id, name, search, landing_zone_id, status)
		VALUES ('simcloud:index:Machine', 'm-stranger', 'm-stranger', 'm-stranger', $1, 'unmanaged') RETURNING id`,
		s.Zone(t).Zone.ID).Scan(&stranger)
	apptest.Must(t, err)
	root, admin := s.Token(t, s.Admin), s.Token(t, s.AdminA)
	apptest.WantIn(t, s.Call(t, "GET", "/inventory?status=unmanaged", root, nil), "/inventory/"+stranger, "m-stranger")
	apptest.WantStatus(t, s.Call(t, "GET", "/api/v1/inventory/"+stranger, root, nil), http.StatusOK)
	if r := s.Call(t, "GET", "/inventory?status=unmanaged", admin, nil); strings.Contains(string(r.Body), stranger) {
		t.Fatal("a tenant's admin sees what discovery found")
	}
	apptest.WantStatus(t, s.Call(t, "GET", "/api/v1/inventory/"+stranger, admin, nil), http.StatusNotFound)
}

func TestInventoryAPI_PagesByKeyset(t *testing.T) {
	s := apptest.NewSite(t)
	first := s.Item(t).String()
	_, err := s.Pool.Exec(t.Context(), `INSERT INTO inventory_items (type, name, search, tenant_id, status)
		SELECT 'simcloud:index:Disk', 'disk-' || n, 'disk-' || n, $1, 'active' FROM generate_series(1, 3) n`, s.A.ID)
	apptest.Must(t, err)
	reader := s.Token(t, s.ReaderA)
	seen := map[string]bool{}
	path := "/api/v1/inventory?limit=2"
	for pages := 0; path != ""; pages++ {
		if pages > 3 {
			t.Fatal("the list does not end")
		}
		body := s.Call(t, "GET", path, reader, nil).JSON(t)
		for _, it := range body["items"].([]any) {
			id := it.(map[string]any)["id"].(string)
			if seen[id] {
				t.Fatalf("%s is on two pages", id)
			}
			seen[id] = true
		}
		path, _ = body["next"].(string)
	}
	if len(seen) != 4 || !seen[first] {
		t.Fatalf("the pages held %d items, want the 4 of A", len(seen))
	}
	got := s.Call(t, "GET", "/api/v1/inventory/"+first, reader, nil).JSON(t)
	if got["provider_id"] != "m-1" || got["status"] != "active" {
		t.Fatalf("the API's item: %v", got)
	}
}

// A search finds a part of a name, separators and all, and pages newest first by keyset like
// the list.
func TestInventoryAPI_SearchPagesByKeyset(t *testing.T) {
	s := apptest.NewSite(t)
	_, err := s.Pool.Exec(t.Context(), `INSERT INTO inventory_items (type, name, search, tenant_id, status, created_at)
		SELECT 'simcloud:index:Disk', 'disk-' || n, 'disk-' || n || ' 10.7.0.' || n, $1, 'active', now() - make_interval(secs => n)
		FROM generate_series(1, 5) n`, s.A.ID)
	apptest.Must(t, err)
	reader := s.Token(t, s.ReaderA)
	var names []string
	path := "/api/v1/inventory?limit=2&q=ISK-"
	for pages := 0; path != ""; pages++ {
		if pages > 3 {
			t.Fatal("the search does not end")
		}
		body := s.Call(t, "GET", path, reader, nil).JSON(t)
		for _, it := range body["items"].([]any) {
			names = append(names, it.(map[string]any)["name"].(string))
		}
		path, _ = body["next"].(string)
	}
	if got := strings.Join(names, " "); got != "disk-1 disk-2 disk-3 disk-4 disk-5" {
		t.Fatalf("the search's pages held %s, want the five disks newest first", got)
	}
	for q, want := range map[string]int{"10.7.0.3": 1, "sk-3 10.7": 1, "10.70": 0, "disk3": 0} {
		if got := len(s.Call(t, "GET", "/api/v1/inventory?q="+url.QueryEscape(q), reader, nil).JSON(t)["items"].([]any)); got != want {
			t.Errorf("a search for %q found %d items, want %d", q, got, want)
		}
	}
}

// A provider admin ignores what discovery found, from its page and through the API: it leaves
// the list unless asked for, the move is audited, and it can be taken back.
func TestInventory_ProviderAdminIgnoresWhatDiscoveryFound(t *testing.T) {
	s := apptest.NewSite(t)
	found := s.Found(t, string(inventory.Unmanaged)).String()
	root := s.Token(t, s.Admin)
	apptest.WantIn(t, s.Call(t, "GET", "/inventory/"+found, root, nil), `data-testid="ignore"`, "/inventory/"+found+"/ignore")

	apptest.WantStatus(t, s.Submit(t, "/inventory/"+found+"/ignore", root, url.Values{}), http.StatusSeeOther)
	page := s.Call(t, "GET", "/inventory/"+found, root, nil)
	apptest.WantIn(t, page, `data-testid="item-status">ignored`, `data-testid="unignore"`)
	if r := s.Call(t, "GET", "/inventory", root, nil); strings.Contains(string(r.Body), found) {
		t.Fatal("an ignored item is listed without being asked for")
	}
	apptest.WantIn(t, s.Call(t, "GET", "/inventory?status=ignored", root, nil), "/inventory/"+found)
	var audited int
	apptest.Must(t, s.Pool.QueryRow(t.Context(), `SELECT count(*) FROM audit_events WHERE action = 'inventory.ignore' AND target_id = $1`,
		found).Scan(&audited))
	if audited != 1 {
		t.Fatalf("ignoring was audited %d times", audited)
	}

	// Ignored twice is refused by the status it has; a managed item is no one's to ignore.
	apptest.WantProblem(t, s.Call(t, "POST", "/api/v1/inventory/"+found+"/ignore", root, nil), "status", "unmanaged")
	apptest.WantProblem(t, s.Call(t, "POST", "/api/v1/inventory/"+s.Item(t).String()+"/ignore", root, nil), "status", "unmanaged")
	apptest.WantStatus(t, s.Call(t, "POST", "/api/v1/inventory/"+found+"/unignore", s.Token(t, s.AdminA), nil), http.StatusNotFound)

	r := s.Call(t, "POST", "/api/v1/inventory/"+found+"/unignore", root, nil)
	apptest.WantStatus(t, r, http.StatusOK)
	if got := r.JSON(t)["status"]; got != string(inventory.Unmanaged) {
		t.Fatalf("taken back, the item is %v", got)
	}
	apptest.WantIn(t, s.Call(t, "GET", "/inventory", root, nil), "/inventory/"+found)
}
