// Package outbox is the event log as its writers see it: every event Nimbus takes in or tells
// of is written here first, in the transaction of whatever it is news of, so the event exists
// exactly when the change does. Routing, delivery and the reactions of other parts of Nimbus
// read it afterwards (package event).
package outbox

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/db/dbgen"
)

// Event is one of Nimbus's own events: what it tells of (Type, such as deployment.succeeded or
// stack.state_changed) and what it is about.
type Event struct {
	Type    string
	Subject string
	// Tenant, Environment, Instance and Deployment name what the event is about; zero where
	// it is about none.
	Tenant, Environment, Instance, Deployment uuid.UUID
	Data                                      map[string]any
}

// Target is what an event may name: a stack instance or a deployment by ID, or a resource by
// a value of a deployment's outputs (a machine's id) or a resource's URN.
type Target struct {
	Instance   string `json:"stack_instance,omitempty"`
	Deployment string `json:"deployment,omitempty"`
	Resource   string `json:"resource,omitempty"`
}

// Payload is what the log keeps of an event beside its columns.
type Payload struct {
	Source string `json:"source,omitempty"`
	Data   any    `json:"data,omitempty"`
	Target Target `json:"target,omitzero"`
}

// Emit writes one of Nimbus's own events to the log with q, in the transaction of the change
// it tells of. The event sweep routes it and hands it to the subscriptions moments later.
func Emit(ctx context.Context, q *dbgen.Queries, e Event) error {
	target := Target{}
	if e.Instance != uuid.Nil {
		target.Instance = e.Instance.String()
	} else if e.Deployment != uuid.Nil {
		target.Deployment = e.Deployment.String()
	}
	payload, err := json.Marshal(Payload{Source: "nimbus", Data: Redacted(e.Data), Target: target})
	if err != nil {
		return err
	}
	_, err = q.LogOwnEvent(ctx, dbgen.LogOwnEventParams{Type: e.Type, Subject: e.Subject, Payload: payload,
		Tenant: null(e.Tenant), Environment: null(e.Environment), Instance: null(e.Instance), Deployment: null(e.Deployment)})
	if err != nil {
		return fmt.Errorf("log event %s: %w", e.Type, err)
	}
	return nil
}

// Logged is one of Nimbus's own events as a reaction reads it back from the log: what it was
// written about, and its data as the log keeps it (numbers as float64, IDs as strings).
type Logged struct {
	// EventID is the event's in the log: what a reaction that writes once per event keys on.
	EventID                                   uuid.UUID
	Type, Subject                             string
	Tenant, Environment, Instance, Deployment uuid.UUID
	Data                                      map[string]any
}

// ID reads an ID the event's data holds under key.
func (e Logged) ID(key string) (uuid.UUID, error) {
	s, _ := e.Data[key].(string)
	id, err := uuid.Parse(s)
	if err != nil {
		return uuid.Nil, fmt.Errorf("event %s holds no %s: %w", e.Type, key, err)
	}
	return id, nil
}

// Reaction is what one part of Nimbus does when another's event is logged: how a change
// reaches a part its writer does not import (an operation cancelled withdraws its approval
// request). It runs in tx, the transaction that routes the event, once the writer's has
// committed, and queues the jobs it asks for in tx too (jobs.Running); routing that fails is
// tried again, so a reaction must be safe to run twice.
type Reaction func(ctx context.Context, tx pgx.Tx, e Logged) error

func null(id uuid.UUID) uuid.NullUUID { return uuid.NullUUID{UUID: id, Valid: id != uuid.Nil} }

// secretKey matches the names of values the log does not keep: a sender may put a token or a
// password in a label or a field, and the log is read by many.
var secretKey = regexp.MustCompile(`(?i)secret|passw|token|credential|private.?key|api.?key|authorization`)

// Redacted is data with the values of secret-looking keys replaced, at any depth, and its
// strings made fit to keep.
func Redacted(data any) any {
	switch x := data.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, v := range x {
			if secretKey.MatchString(k) {
				out[k] = "[redacted]"
			} else {
				out[k] = Redacted(v)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, v := range x {
			out[i] = Redacted(v)
		}
		return out
	case string:
		return Clean(x, len(x))
	}
	return data
}

// Clean trims a sender's string to what the log keeps of it: valid UTF-8 without NULs (which
// Postgres's text refuses), at most max bytes, cut between characters.
func Clean(s string, max int) string {
	s = strings.TrimSpace(strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "\uFFFD"))
	if len(s) > max {
		s = s[:max]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	return s
}
