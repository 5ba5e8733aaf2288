// Package event holds the events Nimbus takes in: their sources (per landing zone), the
// receiver that authenticates and decodes them (CloudEvents, Alertmanager's webhook, plain
// JSON), the event log every accepted event is written to first, and the router that finds
// each event's target and sends the trigger a routing rule names to its stack instance.
package event

import (
	"regexp"
	"strings"
	"time"
	"unicode/utf8"
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
	Target Target
}

// Target is what an event may name: a stack instance or a deployment by ID, or a resource by
// a value of a deployment's outputs (a machine's id) or a resource's URN.
type Target struct {
	Instance   string `json:"stack_instance,omitempty"`
	Deployment string `json:"deployment,omitempty"`
	Resource   string `json:"resource,omitempty"`
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

// secretKey matches the names of values an event log does not keep: a sender may put a
// token or a password in a label or a field, and the log is read by many.
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
		return clean(x, len(x))
	}
	return data
}

// clean trims a sender's string to what the log keeps of it: valid UTF-8 without NULs (which
// Postgres's text refuses), at most max bytes, cut between characters.
func clean(s string, max int) string {
	s = strings.TrimSpace(strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "\uFFFD"))
	if len(s) > max {
		s = s[:max]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	return s
}
