package inventory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"nimbus/app/kernel/lifecycle"
	"nimbus/app/kernel/outbox"
	"nimbus/db/dbgen"
)

// This file alone writes inventory_items (TestMachines_OnlyTheWriterMovesAStatus keeps it so):
// the items an operation's end records, in that end's transaction.

// Machine is an item's life. A managed resource is active once made, changed by each operation
// that changes it, decommissioned when deleted, and active again when an operation makes it
// anew under the same URN; discovery flags it missing when the cloud no longer holds it, until
// an operation settles it. What discovery finds that Nimbus does not manage is unmanaged until
// it is ignored, or gone, or until an operation takes the resource over (an adoption, or a
// deploy that made it while a poll looked): then it is active, the deployment's.
var Machine = lifecycle.Machine[Status]{
	Name: "inventory item", Table: "inventory_items", Column: "status", Writer: "app/domain/inventory/transition.go", Start: Active,
	Moves: map[Status][]Status{
		Active:         {Changed, Decommissioned, Missing},
		Changed:        {Changed, Decommissioned, Missing},
		Decommissioned: {Active},
		Missing:        {Active, Changed, Decommissioned},
		Unmanaged:      {Ignored, Decommissioned, Active},
		Ignored:        {Unmanaged, Decommissioned, Active},
	},
}

// Resource is what an operation left of one resource of its stack: the engine's last step on
// it (create, update, same, replace, delete...) and, unless that deleted it, the provider's id
// and its plain outputs.
type Resource struct {
	URN, Type, Name, Op string
	ProviderID          string
	Outputs             map[string]any
}

// Ending is an operation that changed a deployment's resources, as it ends: Destroyed when it
// deleted them all.
type Ending struct {
	Operation, Deployment uuid.UUID
	Destroyed             bool
	Resources             []Resource
}

// Record keeps the deployment's items in step with what the operation left, in q's
// transaction, the one that records the operation's end: a resource made is a new active item,
// one the operation changed is changed, one it deleted (all of them, for a destroy) is
// decommissioned; each move is told of as inventory.item.created, changed or decommissioned.
func Record(ctx context.Context, q *dbgen.Queries, e Ending) error {
	place, err := q.DeploymentPlace(ctx, e.Deployment)
	if err != nil {
		return fmt.Errorf("inventory of deployment %s: %w", e.Deployment, err)
	}
	items, err := q.LockDeploymentItems(ctx, nullID(e.Deployment))
	if err != nil {
		return fmt.Errorf("inventory of deployment %s: %w", e.Deployment, err)
	}
	byURN := make(map[string]dbgen.InventoryItem, len(items))
	for _, it := range items {
		byURN[it.Urn] = it
	}
	if e.Destroyed {
		for _, it := range items {
			if err := decommission(ctx, q, it, e.Operation); err != nil {
				return err
			}
		}
		return nil
	}
	for _, r := range e.Resources {
		if strings.HasPrefix(r.Type, "pulumi:") {
			continue // the stack itself and its providers are Nimbus's, not the tenant's
		}
		it, known := byURN[r.URN]
		switch {
		case deletes(r.Op):
			if known {
				err = decommission(ctx, q, it, e.Operation)
			}
		case !known:
			err = create(ctx, q, place, r, e)
		default:
			err = update(ctx, q, place, it, r, e.Operation)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// deletes reports whether the engine's step deleted the resource for good; the delete that
// ends a replacement leaves the resource that replaced it.
func deletes(op string) bool { return op == "delete" || op == "discard" }

// changes reports whether the engine's step changed a resource that existed.
func changes(op string) bool {
	return slices.Contains([]string{"update", "replace", "create-replacement", "delete-replaced", "import"}, op)
}

func create(ctx context.Context, q *dbgen.Queries, place dbgen.DeploymentPlaceRow, r Resource, e Ending) error {
	f := fieldsOf(r)
	found, err := discovered(ctx, q, r.Type, r.ProviderID)
	if err != nil {
		return err
	}
	if len(found) > 0 {
		return takeOver(ctx, q, place, found, r, f, e)
	}
	row, err := q.CreateInventoryItem(ctx, dbgen.CreateInventoryItemParams{Urn: r.URN, Type: r.Type, ProviderID: r.ProviderID,
		Name: f.name, Addresses: f.addresses, Fqdns: f.fqdns, Image: f.image, Outputs: f.outputs, Refs: f.refs, Search: f.search,
		TenantID: nullID(place.TenantID), EnvironmentID: nullID(place.EnvironmentID), LandingZoneID: place.LandingZoneID,
		StackInstanceID: place.StackInstanceID, Slot: place.Slot, ComponentID: nullID(place.ComponentID),
		ComponentVersion: pgtype.Int4{Int32: place.Version, Valid: true}, DeploymentID: nullID(e.Deployment), Status: string(Machine.Start), OperationID: nullID(e.Operation)})
	if err != nil {
		return fmt.Errorf("record inventory item %s: %w", r.URN, err)
	}
	return tell(ctx, q, "inventory.item.created", row)
}

// discovered are the items discovery made of a resource no deployment claimed, locked for the
// operation that now manages it to take over.
func discovered(ctx context.Context, q *dbgen.Queries, typ, providerID string) ([]dbgen.InventoryItem, error) {
	if providerID == "" {
		return nil, nil
	}
	found, err := q.UnmanagedItemsOf(ctx, dbgen.UnmanagedItemsOfParams{Type: typ, ProviderID: providerID,
		Statuses: []string{string(Unmanaged), string(Ignored)}})
	if err != nil {
		return nil, fmt.Errorf("items discovered as %s: %w", providerID, err)
	}
	return found, nil
}

// takeOver makes the first item discovery made of a resource the deployment's, active, as the
// operation that adopted the resource (or made it while a poll looked) left it; it keeps its
// ID, so its page and what an outside CMDB holds of it follow it. Another item of the same
// resource, from another zone's look, is let go.
func takeOver(ctx context.Context, q *dbgen.Queries, place dbgen.DeploymentPlaceRow, found []dbgen.InventoryItem, r Resource, f fields, e Ending) error {
	it := found[0]
	if err := Machine.Check("inventory item "+it.Name, Status(it.Status), Active); err != nil {
		return err
	}
	row, err := q.AdoptInventoryItem(ctx, dbgen.AdoptInventoryItemParams{ID: it.ID, Urn: r.URN, Type: r.Type, Name: f.name,
		Addresses: f.addresses, Fqdns: f.fqdns, Image: f.image, Outputs: f.outputs, Refs: f.refs, Search: f.search,
		TenantID: nullID(place.TenantID), EnvironmentID: nullID(place.EnvironmentID), LandingZoneID: place.LandingZoneID,
		StackInstanceID: place.StackInstanceID, Slot: place.Slot, ComponentID: nullID(place.ComponentID),
		ComponentVersion: pgtype.Int4{Int32: place.Version, Valid: true}, DeploymentID: nullID(e.Deployment), Status: string(Active),
		OperationID: nullID(e.Operation), Sources: Machine.SourceNames(Active)})
	if err != nil {
		return fmt.Errorf("adopt inventory item %s: %w", it.ID, err)
	}
	if err := tell(ctx, q, "inventory.item.created", row); err != nil {
		return err
	}
	for _, other := range found[1:] {
		if err := move(ctx, q, other, Decommissioned, uuid.NullUUID{}, "inventory.item.decommissioned"); err != nil {
			return err
		}
	}
	return nil
}

// Sighting is what a look at a landing zone's cloud found of one type of resource: the
// provider's ids of those it holds. Known are ids among them that are never unmanaged: the
// cloud's own (kube-system), and what Nimbus made without an item recording it.
type Sighting struct {
	Zone  uuid.UUID
	Type  string
	IDs   []string
	Known []string
}

// Discover holds the zone's items of the sighting's type to what its cloud holds, in q's
// transaction, the one that records the look: an item Nimbus manages that the cloud no longer
// holds is missing (inventory.item.missing), and active again once it is back; what the cloud
// holds that no item claims becomes an unmanaged item of the zone (inventory.item.discovered),
// decommissioned once the cloud no longer holds it.
func Discover(ctx context.Context, q *dbgen.Queries, s Sighting) error {
	items, err := q.LockZoneItems(ctx, dbgen.LockZoneItemsParams{LandingZoneID: nullID(s.Zone), Type: s.Type})
	if err != nil {
		return fmt.Errorf("inventory of zone %s: %w", s.Zone, err)
	}
	held := make(map[string]bool, len(s.IDs))
	for _, id := range s.IDs {
		held[id] = true
	}
	for _, it := range items {
		var to Status
		news := ""
		switch Status(it.Status) {
		case Active, Changed:
			to, news = Missing, "inventory.item.missing"
		case Missing:
			to, news = Active, "inventory.item.changed"
		case Unmanaged, Ignored:
			to, news = Decommissioned, "inventory.item.decommissioned"
		}
		// A missing item moves when the cloud holds it again; the others when it no longer does.
		if news == "" || held[it.ProviderID] != (to == Active) {
			continue
		}
		if err := move(ctx, q, it, to, uuid.NullUUID{}, news); err != nil {
			return err
		}
	}
	claimed, err := q.ClaimedProviderIDs(ctx, dbgen.ClaimedProviderIDsParams{Type: s.Type, Ids: s.IDs, Gone: string(Decommissioned)})
	if err != nil {
		return fmt.Errorf("inventory of zone %s: %w", s.Zone, err)
	}
	for _, id := range s.IDs {
		if slices.Contains(claimed, id) || slices.Contains(s.Known, id) {
			continue
		}
		row, err := q.DiscoverInventoryItem(ctx, dbgen.DiscoverInventoryItemParams{Type: s.Type, ProviderID: id,
			LandingZoneID: nullID(s.Zone), Status: string(Unmanaged)})
		if err != nil {
			return fmt.Errorf("record discovered %s: %w", id, err)
		}
		if err := tell(ctx, q, "inventory.item.discovered", row); err != nil {
			return err
		}
	}
	return nil
}

// update takes what the operation left of a resource the inventory knows; a step that changed
// it (or made it anew) moves its status, one that left it the same keeps it.
func update(ctx context.Context, q *dbgen.Queries, place dbgen.DeploymentPlaceRow, it dbgen.InventoryItem, r Resource, op uuid.UUID) error {
	if it.OperationID.Valid && it.OperationID.UUID == op {
		return nil // this operation's end recorded it already: its record step ran again
	}
	from, to := Status(it.Status), Status(it.Status)
	news := ""
	switch {
	case from == Decommissioned:
		to, news = Active, "inventory.item.created"
	case changes(r.Op):
		to, news = Changed, "inventory.item.changed"
	case from == Missing:
		to, news = Active, "inventory.item.changed"
	}
	if to != from {
		if err := Machine.Check("inventory item "+it.Name, from, to); err != nil {
			return err
		}
	}
	f := fieldsOf(r)
	if r.ProviderID == "" { // a step that reported nothing of the resource leaves it as it was
		f = fields{name: it.Name, addresses: it.Addresses, fqdns: it.Fqdns, image: it.Image, outputs: it.Outputs, refs: it.Refs, search: it.Search}
		r.ProviderID = it.ProviderID
	}
	row, err := q.UpdateInventoryItem(ctx, dbgen.UpdateInventoryItemParams{ID: it.ID, Found: it.Status, Status: string(to),
		Type: r.Type, ProviderID: r.ProviderID, Name: f.name, Addresses: f.addresses, Fqdns: f.fqdns, Image: f.image,
		Outputs: f.outputs, Refs: f.refs, Search: f.search, StackInstanceID: place.StackInstanceID, Slot: place.Slot,
		ComponentID: nullID(place.ComponentID), ComponentVersion: pgtype.Int4{Int32: place.Version, Valid: true}, OperationID: nullID(op)})
	if errors.Is(err, pgx.ErrNoRows) {
		return &lifecycle.IllegalMove{Machine: Machine.Name, Name: it.Name, From: it.Status, To: string(to)}
	}
	if err != nil || news == "" {
		return err
	}
	return tell(ctx, q, news, row)
}

// setAside moves an item discovery found to ignored, or back to unmanaged (see Service.Ignore),
// in q's transaction; discovery leaves an ignored item as it is while the cloud holds it.
func setAside(ctx context.Context, q *dbgen.Queries, it dbgen.InventoryItem, to Status) (dbgen.InventoryItem, error) {
	if err := Machine.Check("inventory item "+it.Name, Status(it.Status), to); err != nil {
		return dbgen.InventoryItem{}, err
	}
	row, err := q.MoveInventoryItem(ctx, dbgen.MoveInventoryItemParams{ID: it.ID, Status: string(to), Sources: Machine.SourceNames(to)})
	if err != nil {
		return row, fmt.Errorf("move inventory item %s to %s: %w", it.ID, to, err)
	}
	return row, tell(ctx, q, "inventory.item.changed", row)
}

func decommission(ctx context.Context, q *dbgen.Queries, it dbgen.InventoryItem, op uuid.UUID) error {
	if Status(it.Status) == Decommissioned {
		return nil
	}
	return move(ctx, q, it, Decommissioned, nullID(op), "inventory.item.decommissioned")
}

// move moves an item's status alone, by the operation op (none for discovery), and tells of it
// as news.
func move(ctx context.Context, q *dbgen.Queries, it dbgen.InventoryItem, to Status, op uuid.NullUUID, news string) error {
	if err := Machine.Check("inventory item "+it.Name, Status(it.Status), to); err != nil {
		return err
	}
	row, err := q.MoveInventoryItem(ctx, dbgen.MoveInventoryItemParams{ID: it.ID, Status: string(to), OperationID: op,
		Sources: Machine.SourceNames(to)})
	if err != nil {
		return fmt.Errorf("move inventory item %s to %s: %w", it.ID, to, err)
	}
	return tell(ctx, q, news, row)
}

// tell writes the event of an item's move, for the subscriptions an outside CMDB follows by.
func tell(ctx context.Context, q *dbgen.Queries, typ string, it dbgen.InventoryItem) error {
	return outbox.Emit(ctx, q, outbox.Event{Type: typ, Subject: it.Name, Tenant: it.TenantID.UUID, Environment: it.EnvironmentID.UUID,
		Instance: it.StackInstanceID.UUID, Deployment: it.DeploymentID.UUID, Data: map[string]any{
			"item_id": it.ID.String(), "urn": it.Urn, "type": it.Type, "provider_id": it.ProviderID, "name": it.Name,
			"addresses": it.Addresses, "fqdns": it.Fqdns, "image": it.Image, "status": it.Status,
			"operation_id": idText(it.OperationID), "deployment_id": idText(it.DeploymentID)}})
}

// fields are what an item keeps of a resource's outputs, for people to read and search by.
type fields struct {
	name             string
	addresses, fqdns []string
	image            string
	outputs, refs    json.RawMessage
	search           string
}

// fieldsOf reads a resource's outputs the way people look for it: its display name, the IP
// addresses and host names among its values, its image, and the ids by which it names other
// resources (an output ending in Id, such as networkId).
func fieldsOf(r Resource) fields {
	f := fields{name: r.Name, addresses: []string{}, fqdns: []string{}}
	refs := map[string]string{}
	for _, k := range sortedKeys(r.Outputs) {
		s, ok := r.Outputs[k].(string)
		if !ok || s == "" || s == "[secret]" {
			continue
		}
		lower := strings.ToLower(k)
		switch {
		case lower == "name":
			f.name = s
		case lower == "image":
			f.image = s
		case isAddress(s):
			f.addresses = append(f.addresses, s)
		case (strings.Contains(lower, "fqdn") || strings.Contains(lower, "hostname") || strings.Contains(lower, "dns")) && isHostName(s):
			f.fqdns = append(f.fqdns, s)
		case k != "id" && (strings.HasSuffix(k, "Id") || strings.HasSuffix(lower, "_id")):
			refs[k] = s
		}
	}
	f.outputs, _ = json.Marshal(r.Outputs)
	if r.Outputs == nil {
		f.outputs = json.RawMessage("{}")
	}
	f.refs, _ = json.Marshal(refs)
	words := slices.Concat([]string{f.name, r.Name, r.ProviderID, f.image}, f.addresses, f.fqdns)
	f.search = strings.ToLower(strings.Join(slices.DeleteFunc(words, func(s string) bool { return s == "" }), " "))
	return f
}

func isAddress(s string) bool {
	_, err := netip.ParseAddr(s)
	return err == nil
}

func isHostName(s string) bool {
	return strings.Contains(s, ".") && !strings.ContainsAny(s, " /:@")
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func nullID(id uuid.UUID) uuid.NullUUID { return uuid.NullUUID{UUID: id, Valid: id != uuid.Nil} }

func idText(id uuid.NullUUID) string {
	if !id.Valid {
		return ""
	}
	return id.UUID.String()
}
