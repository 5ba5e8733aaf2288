// Package audit records every change as an event written in the same transaction as the
// change itself, and lets admins read them back.
package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/cursor"
	"nimbus/app/kernel/problem"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// Event is one change to record. Diff holds what changed; fields whose names suggest a secret
// are redacted before it is stored.
type Event struct {
	Tenant     uuid.UUID // uuid.Nil when the change belongs to no tenant
	Action     string    // such as "tenant.create"
	TargetType string
	TargetID   string
	Diff       map[string]any
}

// Record writes e on behalf of actor using q, which should be bound to the transaction that
// makes the change.
func Record(ctx context.Context, q *dbgen.Queries, actor access.Principal, e Event) error {
	diff, err := json.Marshal(Redact(e.Diff))
	if err != nil {
		return fmt.Errorf("audit %s: %w", e.Action, err)
	}
	err = q.InsertAuditEvent(ctx, dbgen.InsertAuditEventParams{
		ActorID:    uuid.NullUUID{UUID: actor.UserID, Valid: actor.UserID != uuid.Nil},
		ActorEmail: actor.Email,
		TenantID:   uuid.NullUUID{UUID: e.Tenant, Valid: e.Tenant != uuid.Nil},
		Action:     e.Action,
		TargetType: e.TargetType,
		TargetID:   e.TargetID,
		Diff:       diff,
	})
	if err != nil {
		return fmt.Errorf("audit %s: %w", e.Action, err)
	}
	return nil
}

// Actors that are not signed-in users.
var (
	// System makes changes on its own or for an operator at the command line, such as
	// creating the first admin.
	System = access.Principal{Email: "system"}
	// Anonymous is a visitor who is not signed in, such as one failing to sign in.
	Anonymous = access.Principal{Email: "anonymous"}
)

// redactedValue stands in the log for a value that looked secret.
const redactedValue = "[redacted]"

var secretWords = []string{"password", "passwd", "pass", "secret", "token", "passphrase", "key", "credential"}

// Redact returns a copy of diff with the values of secret-looking keys replaced, at any depth.
func Redact(diff map[string]any) map[string]any {
	if diff == nil {
		return map[string]any{}
	}
	out := make(map[string]any, len(diff))
	for k, v := range diff {
		if isSecretKey(k) {
			out[k] = redactedValue
			continue
		}
		out[k] = redactValue(v)
	}
	return out
}

func redactValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return Redact(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = redactValue(e)
		}
		return out
	}
	return v
}

func isSecretKey(k string) bool {
	k = strings.ToLower(k)
	for _, w := range secretWords {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// Filter narrows a listing; empty fields do not filter.
type Filter struct {
	Actor    string // part of the actor's email
	Action   string // action prefix, such as "tenant." or "user.create"
	Target   string // target ID or type
	Since    *time.Time
	Until    *time.Time
	BeforeID int64 // keyset paging: events older than this ID
	Limit    int
}

// Page is one page of events, newest first; NextBefore is the BeforeID for the next page or 0.
type Page struct {
	Events     []Entry
	NextBefore int64
}

// Entry is one event of the log as its page and the API show it: who did what to which
// target, in which tenant, and what changed.
type Entry struct {
	ID         int64           `json:"id"`
	CreatedAt  time.Time       `json:"created_at"`
	ActorID    uuid.NullUUID   `json:"actor_id"`
	ActorEmail string          `json:"actor_email"`
	TenantID   uuid.NullUUID   `json:"tenant_id"`
	Action     string          `json:"action"`
	TargetType string          `json:"target_type"`
	TargetID   string          `json:"target_id"`
	Diff       json.RawMessage `json:"diff"`
}

// Service reads the audit log for a principal.
type Service struct {
	pool *pgxpool.Pool
}

// NewService returns a Service reading from pool.
func NewService(pool *pgxpool.Pool) *Service { return &Service{pool: pool} }

// List returns the events the actor may read: all for provider admins, those of the tenants
// they administer for tenant admins.
func (s *Service) List(ctx context.Context, actor access.Principal, f Filter) (Page, error) {
	if !actor.CanSomewhere(access.AuditRead) {
		return Page{}, problem.ErrForbidden
	}
	f.Limit = cursor.Rows(f.Limit)
	params := dbgen.ListAuditEventsParams{
		AllTenants: actor.ProviderAdmin,
		TenantIds:  actor.TenantsWith(access.AuditRead),
		Actor:      optional(f.Actor),
		Action:     optional(f.Action),
		Target:     optional(f.Target),
		Since:      f.Since,
		Until:      f.Until,
		MaxRows:    int32(f.Limit + 1),
	}
	if params.TenantIds == nil {
		params.TenantIds = []uuid.UUID{}
	}
	if f.BeforeID > 0 {
		params.BeforeID = &f.BeforeID
	}
	rows, err := db.Queries(s.pool).ListAuditEvents(ctx, params)
	if err != nil {
		return Page{}, fmt.Errorf("list audit events: %w", err)
	}
	events := make([]Entry, len(rows))
	for i, r := range rows {
		events[i] = Entry(r)
	}
	page := Page{Events: events}
	if len(events) > f.Limit {
		page.Events = events[:f.Limit]
		page.NextBefore = page.Events[f.Limit-1].ID
	}
	return page, nil
}

func optional(s string) *string {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	return &s
}

// Target is an object an event names, as the log names and links it.
type Target struct {
	Type, ID string
	// Name is what the object is called now; empty when it is gone or has no name.
	Name string
	// Deleted marks an object kept, under its name, after it was deleted.
	Deleted bool
}

// Names is what the log shows of one event: the target it changed and the tenant it
// belongs to (an empty ID for none).
type Names struct {
	Target, Tenant Target
}

// names names the targets and tenants of events, in their order. Names are read now, so a
// renamed object shows its new name and a deleted one none.
func (s *Service) names(ctx context.Context, events []Entry) ([]Names, error) {
	out := make([]Names, len(events))
	params := dbgen.AuditTargetNamesParams{TargetTypes: []string{}, TargetIds: []string{}}
	asked := map[Target]bool{}
	ask := func(t Target) {
		// Only IDs the lookup can read: one that is not a UUID (nor a pair of them) stays
		// unnamed rather than failing the page. Each once: a page of a tenant's events names
		// its tenant fifty times.
		if validTargetID(t.ID) && !asked[t] {
			asked[t] = true
			params.TargetTypes = append(params.TargetTypes, t.Type)
			params.TargetIds = append(params.TargetIds, t.ID)
		}
	}
	for i, e := range events {
		out[i].Target = Target{Type: e.TargetType, ID: e.TargetID}
		ask(out[i].Target)
		if e.TenantID.Valid {
			out[i].Tenant = Target{Type: "tenant", ID: e.TenantID.UUID.String()}
			ask(out[i].Tenant)
		}
	}
	if len(params.TargetIds) == 0 {
		return out, nil
	}
	rows, err := db.Queries(s.pool).AuditTargetNames(ctx, params)
	if err != nil {
		return nil, fmt.Errorf("name audit targets: %w", err)
	}
	names := make(map[[2]string]dbgen.AuditTargetNamesRow, len(rows))
	for _, r := range rows {
		names[[2]string{r.TargetType, r.TargetID}] = r
	}
	for i := range out {
		for _, t := range []*Target{&out[i].Target, &out[i].Tenant} {
			r := names[[2]string{t.Type, t.ID}]
			t.Name, t.Deleted = r.Name, r.Deleted
		}
	}
	return out, nil
}

func validTargetID(id string) bool {
	for _, part := range strings.SplitN(id, "/", 2) {
		if len(part) != 36 || uuid.Validate(part) != nil {
			return false
		}
	}
	return true
}
