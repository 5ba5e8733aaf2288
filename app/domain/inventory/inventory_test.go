package inventory_test

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"github.com/google/uuid"

	"nimbus/app/apptest"
	"nimbus/app/domain/component"
	"nimbus/app/domain/inventory"
	"nimbus/app/kernel/objstore/s3test"
	"nimbus/app/kernel/problem"
	"nimbus/app/orchestration/environment"
	"nimbus/db/dbtest"
)

// Each test gets a database of its own; the tests on the S3 backend share one S3 server.
func TestMain(m *testing.M) { dbtest.Main(s3test.Around(m)) }

// networked is a machine on a network of its own, as a tenant's component makes one.
const networked = `name: networked
runtime: yaml
config:
  name:
    type: string
  cores:
    type: integer
    default: 2
resources:
  net:
    type: simcloud:index:Network
    properties:
      name: ${name}-net
      cidr: 10.9.0.0/16
  machine:
    type: simcloud:index:Machine
    properties:
      name: ${name}
      cores: ${cores}
      networkId: ${net.id}
outputs:
  ip_address: ${machine.ip}
`

// inventorySite is a site with the networked component published and tenant A's environment
// dev to deploy it into.
type inventorySite struct {
	*apptest.Site
	component, env uuid.UUID
}

func newInventorySite(t *testing.T) inventorySite {
	t.Helper()
	s := apptest.NewSiteWith(t, apptest.SiteConfig{Backend: "file"})
	ctx := t.Context()
	c, err := s.Components.Create(ctx, s.Admin, component.New{Draft: component.Draft{Name: "networked", Language: "yaml", Code: networked,
		InputSchema:  []byte(`{"type":"object","properties":{"name":{"type":"string"},"cores":{"type":"integer"}},"required":["name"]}`),
		OutputSchema: []byte(`{"type":"object","properties":{"ip_address":{"type":"string"}}}`)},
		Provider: "simcloud", SemanticType: "VirtualMachine"})
	apptest.Must(t, err)
	_, err = s.Components.Publish(ctx, s.Admin, c.ID, c.Revision, "first")
	apptest.Must(t, err)
	env, err := environment.NewService(s.Pool).Create(ctx, s.AdminA, s.A.ID, "dev")
	apptest.Must(t, err)
	return inventorySite{Site: s, component: c.ID, env: env.ID}
}

// run asks for an operation and waits for it to succeed; it returns the reply's body.
func (s inventorySite) run(t *testing.T, token, path string, body map[string]any) map[string]any {
	t.Helper()
	r := s.Call(t, "POST", path, token, body)
	apptest.WantStatus(t, r, http.StatusAccepted)
	out := r.JSON(t)
	id, _ := out["id"].(string)
	if op, nested := out["operation"].(map[string]any); nested {
		id = op["id"].(string)
	}
	if op := s.WaitOperation(t, token, id); op["status"] != "succeeded" {
		t.Fatalf("%s: %v", path, op)
	}
	return out
}

// items are the deployment's items as A's reader finds them, by type.
func (s inventorySite) items(t *testing.T, deployment string) map[string]inventory.Item {
	t.Helper()
	page, err := s.Inventory.List(t.Context(), s.ReaderA, inventory.Filter{Limit: 200})
	apptest.Must(t, err)
	out := map[string]inventory.Item{}
	for _, it := range page.Items {
		if it.DeploymentID != nil && it.DeploymentID.String() == deployment {
			out[it.Type] = it
		}
	}
	return out
}

// eventTypes are the types of the inventory's events in the log, sorted.
func eventTypes(t *testing.T, s inventorySite) []string {
	t.Helper()
	rows, err := s.Pool.Query(context.Background(), `SELECT type FROM event_log WHERE type LIKE 'inventory.%' ORDER BY type`)
	apptest.Must(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var typ string
		apptest.Must(t, rows.Scan(&typ))
		out = append(out, typ)
	}
	return out
}

func TestInventory_FollowsADeploymentsLife(t *testing.T) {
	s := newInventorySite(t)
	user, admin := s.Token(t, s.UserA), s.Token(t, s.AdminA)
	body := s.run(t, user, "/api/v1/deployments", map[string]any{"component_id": s.component, "environment_id": s.env, "name": "web",
		"parameters": map[string]any{"name": "web-1"}})
	dep := body["deployment"].(map[string]any)["id"].(string)
	deployOp := body["operation"].(map[string]any)["id"].(string)

	items := s.items(t, dep)
	machine, network := items["simcloud:index:Machine"], items["simcloud:index:Network"]
	if len(items) != 2 || machine.Status != inventory.Active || network.Status != inventory.Active {
		t.Fatalf("a deploy makes an active item of each resource: %+v", items)
	}
	if len(machine.Addresses) != 1 || machine.Name != "web-1" || machine.ProviderID == "" || machine.OperationID.String() != deployOp {
		t.Fatalf("the machine's item: %+v", machine)
	}
	if *machine.TenantID != s.A.ID || *machine.EnvironmentID != s.env || *machine.ComponentID != s.component || machine.ComponentVersion != 1 {
		t.Fatalf("the machine's item is not placed: %+v", machine)
	}
	detail, err := s.Inventory.Get(t.Context(), s.ReaderA, machine.ID)
	apptest.Must(t, err)
	if !slices.ContainsFunc(detail.Related, func(r inventory.Related) bool {
		return r.ID == network.ID && r.Via == "networkId" && r.Outgoing
	}) {
		t.Fatalf("the machine is not on its network: %+v", detail.Related)
	}
	netDetail, err := s.Inventory.Get(t.Context(), s.ReaderA, network.ID)
	apptest.Must(t, err)
	if !slices.ContainsFunc(netDetail.Related, func(r inventory.Related) bool { return r.ID == machine.ID && !r.Outgoing }) {
		t.Fatalf("the network does not hold its machine: %+v", netDetail.Related)
	}

	found, err := s.Inventory.List(t.Context(), s.ReaderA, inventory.Filter{Search: machine.Addresses[0]})
	apptest.Must(t, err)
	if len(found.Items) != 1 || found.Items[0].ID != machine.ID {
		t.Fatalf("a search by the machine's address %s found %+v", machine.Addresses[0], found.Items)
	}
	if _, err := s.Inventory.Get(t.Context(), s.AdminB, machine.ID); err != problem.ErrNotFound {
		t.Fatalf("another tenant's admin reads A's item: %v", err)
	}

	s.run(t, user, "/api/v1/deployments/"+dep+"/update", map[string]any{"parameters": map[string]any{"cores": 4}})
	items = s.items(t, dep)
	if items["simcloud:index:Machine"].Status != inventory.Changed || items["simcloud:index:Network"].Status != inventory.Active {
		t.Fatalf("an update changes the machine alone: %+v", items)
	}

	s.run(t, admin, "/api/v1/deployments/"+dep+"/destroy", nil)
	items = s.items(t, dep)
	for typ, it := range items {
		if it.Status != inventory.Decommissioned {
			t.Fatalf("a destroy leaves the %s %s", typ, it.Status)
		}
	}
	want := []string{"inventory.item.changed", "inventory.item.created", "inventory.item.created",
		"inventory.item.decommissioned", "inventory.item.decommissioned"}
	if got := eventTypes(t, s); !slices.Equal(got, want) {
		t.Fatalf("the inventory told of %q, want %q", got, want)
	}
}
