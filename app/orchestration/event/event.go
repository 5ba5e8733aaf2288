// Package event holds the events Nimbus takes in: their sources (per landing zone), the
// receiver that authenticates and decodes them (CloudEvents, Alertmanager's webhook, plain
// JSON), the event log every accepted event is written to first, and the router that finds
// each event's target and sends the trigger a routing rule names to its stack instance.
package event

import (
	"nimbus/app/kernel/outbox"
	"time"
)

// Event is an event as Nimbus keeps it, whatever shape it came in.
type Event struct {
	// ID is the sender's own id: the same id from the same source is one event.
	ID      string
	Type    string
	Subject string
	// Source is the sender's name for where the event happened (a CloudEvent's source).
	Source string
	Time   *time.Time
	// Data is the event's body: the alert, the CloudEvent's data, the plain JSON's data.
	Data any
	// Target is what the event names, when it names something.
	Target outbox.Target
}

// Fields is the event as a routing rule's filter reads it.
func (e Event) Fields() map[string]any {
	f := map[string]any{"id": e.ID, "type": e.Type, "subject": e.Subject, "source": e.Source, "data": e.Data}
	if e.Time != nil {
		f["time"] = e.Time.UTC().Format(time.RFC3339Nano)
	} else {
		f["time"] = ""
	}
	if f["data"] == nil {
		f["data"] = map[string]any{}
	}
	return f
}
