// Package inventory is what exists, where and whose: a configuration item for every resource
// Nimbus manages, kept by the end of each operation that changes one (see Record), with the
// relations between them, searched and exported by the people who may see them.
package inventory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/cursor"
	"nimbus/app/kernel/problem"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// Status is where an item stands (see Machine).
type Status string

// The statuses of an item.
const (
	Active         Status = "active"
	Changed        Status = "changed"
	Decommissioned Status = "decommissioned"
	Unmanaged      Status = "unmanaged"
	Missing        Status = "missing"
	Ignored        Status = "ignored"
)

// Item is one configuration item as its page, the list and the API show it.
type Item struct {
	ID               uuid.UUID         `json:"id"`
	URN              string            `json:"urn"`
	Type             string            `json:"type"`
	ProviderID       string            `json:"provider_id"`
	Name             string            `json:"name"`
	Addresses        []string          `json:"addresses"`
	FQDNs            []string          `json:"fqdns"`
	Image            string            `json:"image"`
	Outputs          json.RawMessage   `json:"outputs"`
	Refs             map[string]string `json:"refs"`
	TenantID         *uuid.UUID        `json:"tenant_id"`
	TenantName       string            `json:"tenant_name"`
	EnvironmentID    *uuid.UUID        `json:"environment_id"`
	EnvironmentName  string            `json:"environment_name"`
	LandingZoneID    *uuid.UUID        `json:"landing_zone_id"`
	StackInstanceID  *uuid.UUID        `json:"stack_instance_id"`
	Slot             string            `json:"slot,omitempty"`
	ComponentID      *uuid.UUID        `json:"component_id"`
	ComponentVersion int32             `json:"component_version,omitempty"`
	DeploymentID     *uuid.UUID        `json:"deployment_id"`
	Status           Status            `json:"status"`
	// StatusAt is when the item took its status; OperationID the operation that moved it there.
	StatusAt           time.Time  `json:"status_at"`
	OperationID        *uuid.UUID `json:"operation_id"`
	CreatedOperationID *uuid.UUID `json:"created_operation_id"`
	CreatedAt          time.Time  `json:"created_at"`
	UpdatedAt          time.Time  `json:"updated_at"`
}

// Detail is an item with the names of what it belongs to and the items it is related to.
type Detail struct {
	Item
	DeploymentName, ComponentName, ZoneName string
	Related                                 []Related
}

// Related is an item another names by its provider's id: Via is the output that names it
// (networkId: the item is on that network); Outgoing says the item named it, rather than
// being named.
type Related struct {
	ID       uuid.UUID
	Name     string
	Type     string
	Status   Status
	Via      string
	Outgoing bool
}

// Filter narrows a listing; empty fields do not filter.
type Filter struct {
	// Search is part of an address, a name, a host name, an image or the provider's id.
	Search      string
	Type        string
	Tenant      uuid.UUID
	Environment string // an environment's name
	// Status is one status; none lists every item but the ignored ones, which are set aside
	// for that.
	Status Status
	After  cursor.Cursor
	Limit  int
}

// Page is one page of items, newest first; Next continues it, zero at the end.
type Page struct {
	Items []Item
	Next  cursor.Cursor
}

// Service reads the inventory for the people who may see it.
type Service struct{ pool *pgxpool.Pool }

// NewService returns a Service reading from pool.
func NewService(pool *pgxpool.Pool) *Service { return &Service{pool: pool} }

// minSearch is the shortest search the trigram index serves; a shorter one would read every
// item.
const minSearch = 3

// List returns a page of the items the actor may see: every one for a provider admin, those of
// their tenants for anyone else.
func (s *Service) List(ctx context.Context, actor access.Principal, f Filter) (Page, error) {
	if !actor.CanSomewhere(access.InventoryRead) {
		return Page{}, problem.ErrForbidden
	}
	v := &problem.ValidationError{}
	search := strings.ToLower(strings.TrimSpace(f.Search))
	if search != "" && len([]rune(search)) < minSearch {
		v.Add("q", "min", "must be at least %d characters", minSearch)
	}
	if f.Status != "" && !slices.Contains(Machine.States(), f.Status) {
		v.Add("status", "oneof", "must be one of %s", statusNames())
	}
	if err := v.Err(); err != nil {
		return Page{}, err
	}
	f.Limit = cursor.Rows(f.Limit)
	p := dbgen.ListInventoryItemsParams{AllTenants: actor.ProviderAdmin, TenantIds: actor.TenantsWith(access.InventoryRead),
		Search: optional(escapeLike(search)), Type: optional(f.Type), Environment: optional(f.Environment),
		Status: optional(string(f.Status)), Hidden: []string{string(Ignored)}, Before: f.After.Before(), BeforeID: f.After.BeforeID(), MaxRows: int32(f.Limit + 1)}
	if p.TenantIds == nil {
		p.TenantIds = []uuid.UUID{}
	}
	if f.Tenant != uuid.Nil {
		p.TenantID = uuid.NullUUID{UUID: f.Tenant, Valid: true}
	}
	q := db.Queries(s.pool)
	if p.Search != nil {
		ids, common, err := searchHits(ctx, q, p)
		switch {
		case err != nil:
			return Page{}, err
		case !common && len(ids) == 0:
			return Page{Items: []Item{}}, nil
		case !common:
			// The page is among these items, which already match the term.
			p.Ids, p.Search = ids, nil
		}
	}
	rows, err := q.ListInventoryItems(ctx, p)
	if err != nil {
		return Page{}, fmt.Errorf("list inventory: %w", err)
	}
	page := Page{Items: make([]Item, 0, len(rows))}
	for _, r := range rows {
		page.Items = append(page.Items, itemOf(r.InventoryItem, r.TenantName, r.EnvironmentName))
	}
	if len(page.Items) > f.Limit {
		page.Items = page.Items[:f.Limit]
		last := page.Items[f.Limit-1]
		page.Next = cursor.Cursor{At: last.CreatedAt, ID: last.ID}
	}
	return page, nil
}

// hitCap is how many matches of a search are collected through the trigram index and sorted
// at most. A rarer term's page is found that way whatever the age of its matches; a commoner
// one is met as often as not among the newest items, walked newest first.
const hitCap = 20_000

// searchHits returns the ids of the page of items p's search finds, or common when the term
// has hitCap matches or more, which walking the items newest first finds sooner.
func searchHits(ctx context.Context, q *dbgen.Queries, p dbgen.ListInventoryItemsParams) (ids []uuid.UUID, common bool, err error) {
	hits, err := q.InventorySearchHits(ctx, dbgen.InventorySearchHitsParams{AllTenants: p.AllTenants, TenantIds: p.TenantIds,
		Search: *p.Search, Type: p.Type, TenantID: p.TenantID, Environment: p.Environment, Status: p.Status, Hidden: p.Hidden,
		Before: p.Before, BeforeID: p.BeforeID, HitCap: hitCap, MaxRows: p.MaxRows})
	if err != nil {
		return nil, false, fmt.Errorf("search inventory: %w", err)
	}
	if len(hits) > 0 && hits[0].Found >= hitCap {
		return nil, true, nil
	}
	for _, h := range hits {
		ids = append(ids, h.ID)
	}
	return ids, false, nil
}

// Get returns an item with its relations; one the actor may not see is not found.
func (s *Service) Get(ctx context.Context, actor access.Principal, id uuid.UUID) (Detail, error) {
	q := db.Queries(s.pool)
	r, err := q.GetInventoryItem(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return Detail{}, problem.ErrNotFound
	}
	if err != nil {
		return Detail{}, fmt.Errorf("get inventory item %s: %w", id, err)
	}
	if !visible(actor, r.InventoryItem) {
		return Detail{}, problem.ErrNotFound
	}
	d := Detail{Item: itemOf(r.InventoryItem, r.TenantName, r.EnvironmentName), DeploymentName: r.DeploymentName,
		ComponentName: r.ComponentName, ZoneName: r.ZoneName}
	related, err := q.InventoryRelated(ctx, id)
	if err != nil {
		return Detail{}, fmt.Errorf("relations of inventory item %s: %w", id, err)
	}
	for _, x := range related {
		d.Related = append(d.Related, Related{ID: x.ID, Name: x.Name, Type: x.Type, Status: Status(x.Status), Via: x.Via, Outgoing: x.Outgoing})
	}
	return d, nil
}

// visible reports whether the actor may see the item: a provider admin sees every one, a
// member of its tenant with the right to read the inventory sees the tenant's.
func visible(actor access.Principal, it dbgen.InventoryItem) bool {
	if actor.ProviderAdmin {
		return true
	}
	return it.TenantID.Valid && actor.Can(access.InventoryRead, it.TenantID.UUID)
}

func itemOf(r dbgen.InventoryItem, tenant, environment string) Item {
	refs := map[string]string{}
	_ = json.Unmarshal(r.Refs, &refs)
	it := Item{ID: r.ID, URN: r.Urn, Type: r.Type, ProviderID: r.ProviderID, Name: r.Name, Addresses: r.Addresses, FQDNs: r.Fqdns,
		Image: r.Image, Outputs: r.Outputs, Refs: refs, TenantID: ptr(r.TenantID), TenantName: tenant,
		EnvironmentID: ptr(r.EnvironmentID), EnvironmentName: environment, LandingZoneID: ptr(r.LandingZoneID),
		StackInstanceID: ptr(r.StackInstanceID), ComponentID: ptr(r.ComponentID), DeploymentID: ptr(r.DeploymentID),
		Status: Status(r.Status), StatusAt: r.StatusAt, OperationID: ptr(r.OperationID), CreatedOperationID: ptr(r.CreatedOperationID),
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	if r.Slot != nil {
		it.Slot = *r.Slot
	}
	if r.ComponentVersion.Valid {
		it.ComponentVersion = r.ComponentVersion.Int32
	}
	return it
}

func ptr(id uuid.NullUUID) *uuid.UUID {
	if !id.Valid {
		return nil
	}
	return &id.UUID
}

func optional(s string) *string {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	return &s
}

// escapeLike makes a search match itself: % and _ are no wildcards in what people type.
func escapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

func statusNames() string {
	var out []string
	for _, s := range Machine.States() {
		out = append(out, string(s))
	}
	return strings.Join(out, ", ")
}
