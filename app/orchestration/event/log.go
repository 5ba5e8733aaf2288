package event

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/cursor"
	"nimbus/app/kernel/problem"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// Logged is one event of the log as people and the API see it.
type Logged struct {
	ID          uuid.UUID       `json:"id"`
	Source      string          `json:"source,omitempty"`
	SourceKind  string          `json:"source_kind"`
	EventID     string          `json:"event_id"`
	Type        string          `json:"type"`
	Subject     string          `json:"subject,omitempty"`
	OccurredAt  *time.Time      `json:"occurred_at,omitempty"`
	ReceivedAt  time.Time       `json:"received_at"`
	Payload     json.RawMessage `json:"payload"`
	TenantID    *uuid.UUID      `json:"tenant_id,omitempty"`
	Environment *uuid.UUID      `json:"environment_id,omitempty"`
	Instance    *uuid.UUID      `json:"stack_instance_id,omitempty"`
	InstanceNm  string          `json:"stack_instance,omitempty"`
	Deployment  *uuid.UUID      `json:"deployment_id,omitempty"`
	Outcome     string          `json:"outcome"`
	Detail      string          `json:"detail,omitempty"`
	// Rule is the position (from 1) of the rule that took the event in its instance's version.
	Rule    int        `json:"rule,omitempty"`
	Trigger string     `json:"trigger,omitempty"`
	Run     *uuid.UUID `json:"run_id,omitempty"`
	// RunStatus is how the transition the event triggered went: queued, running, succeeded,
	// failed, or refused when the state no longer took it on its turn.
	RunStatus string     `json:"run_status,omitempty"`
	RoutedAt  *time.Time `json:"routed_at,omitempty"`
}

// Filter narrows the log; each field left zero takes all.
type Filter struct {
	Tenant, Environment, Instance, Zone uuid.UUID
	Type, Outcome                       string
	After                               cursor.Cursor
	Limit                               int
}

// Page is a page of the log, newest first; Next continues it, when there is more.
type Page struct {
	Events []Logged `json:"events"`
	Next   string   `json:"next,omitempty"`
}

var outcomes = []string{Pending, Unrouted, Unmatched, Refused, Signalled}

// List reads the log: the events of the tenants in which the actor may read it; provider
// admins see every event, those that reached no tenant too.
func (s *Service) List(ctx context.Context, actor access.Principal, f Filter) (Page, error) {
	if f.Outcome != "" && !slices.Contains(outcomes, f.Outcome) {
		return Page{}, problem.Invalid("outcome", "enum", "must be one of pending, unrouted, unmatched, refused, signalled")
	}
	f.Limit = cursor.Rows(f.Limit)
	p := dbgen.EventLogParams{Tenant: null(f.Tenant), Environment: null(f.Environment), Instance: null(f.Instance), Zone: null(f.Zone),
		BeforeAt: f.After.Before(), BeforeID: f.After.BeforeID(), Provider: actor.ProviderAdmin,
		Tenants: actor.TenantsWith(access.EventsLogRead), Lim: int32(f.Limit + 1)}
	if f.Type != "" {
		p.Type = &f.Type
	}
	if f.Outcome != "" {
		p.Outcome = &f.Outcome
	}
	rows, err := db.Queries(s.pool).EventLog(ctx, p)
	if err != nil {
		return Page{}, fmt.Errorf("read the event log: %w", err)
	}
	var page Page
	if len(rows) > f.Limit {
		rows = rows[:f.Limit]
		last := rows[len(rows)-1]
		page.Next = cursor.Cursor{At: last.ReceivedAt, ID: last.ID}.String()
	}
	page.Events = make([]Logged, len(rows))
	for i, r := range rows {
		page.Events[i] = logged(r)
	}
	return page, nil
}

func logged(r dbgen.EventLogRow) Logged {
	l := Logged{ID: r.ID, Source: deref(r.SourceName), SourceKind: r.SourceKind, EventID: r.EventID, Type: r.Type, Subject: r.Subject,
		OccurredAt: r.OccurredAt, ReceivedAt: r.ReceivedAt, Payload: json.RawMessage(r.Payload), TenantID: ptr(r.TenantID),
		Environment: ptr(r.EnvironmentID), Instance: ptr(r.InstanceID), InstanceNm: deref(r.InstanceName), Deployment: ptr(r.DeploymentID),
		Outcome: r.Outcome, Detail: r.Detail, Trigger: deref(r.Trigger), Run: ptr(r.RunID), RunStatus: deref(r.RunStatus), RoutedAt: r.RoutedAt}
	if r.RulePosition.Valid {
		l.Rule = int(r.RulePosition.Int32) + 1
	}
	return l
}

func null(id uuid.UUID) uuid.NullUUID { return uuid.NullUUID{UUID: id, Valid: id != uuid.Nil} }

func ptr(id uuid.NullUUID) *uuid.UUID {
	if !id.Valid {
		return nil
	}
	return &id.UUID
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
