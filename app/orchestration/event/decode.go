package event

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/cloudevents/sdk-go/v2/binding"
	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"

	"nimbus/app/kernel/outbox"
	"nimbus/app/kernel/problem"
)

// MaxEvents is the most events one request may carry (a CloudEvents batch, an
// Alertmanager notification's alerts).
const MaxEvents = 500

// Decode reads the events of a request's body in whichever shape it came: a CloudEvent in
// structured or binary mode, or a batch of them; an Alertmanager (or Grafana) webhook
// notification, one event per alert; or plain JSON with a type and a subject. What cannot be
// read is refused with the field and the rule.
func Decode(header http.Header, body []byte, now time.Time) ([]Event, error) {
	msg := cehttp.NewMessage(header, io.NopCloser(bytes.NewReader(body)))
	defer msg.Finish(nil)
	switch msg.ReadEncoding() {
	case binding.EncodingBinary, binding.EncodingStructured:
		ce, err := binding.ToEvent(context.Background(), msg)
		if err != nil {
			return nil, problem.Invalid("body", "cloudevent", "not a CloudEvent: %v", err)
		}
		e, err := fromCloudEvent(*ce)
		if err != nil {
			return nil, err
		}
		return []Event{e}, nil
	case binding.EncodingBatch:
		var batch []cloudevents.Event
		if err := json.Unmarshal(body, &batch); err != nil {
			return nil, problem.Invalid("body", "cloudevent", "not a batch of CloudEvents: %v", err)
		}
		if len(batch) > MaxEvents {
			return nil, problem.Invalid("body", "max", "a batch carries at most %d events", MaxEvents)
		}
		out := make([]Event, 0, len(batch))
		for i, ce := range batch {
			e, err := fromCloudEvent(ce)
			if err != nil {
				return nil, problem.Invalid(fmt.Sprintf("body.%d", i), "cloudevent", "%v", err)
			}
			out = append(out, e)
		}
		return out, nil
	}
	var shape struct {
		Version string          `json:"version"`
		Alerts  json.RawMessage `json:"alerts"`
	}
	if err := json.Unmarshal(body, &shape); err != nil {
		return nil, problem.Invalid("body", "json", "send a CloudEvent, an Alertmanager notification or a JSON object with type and subject")
	}
	if shape.Alerts != nil {
		return fromAlertmanager(body)
	}
	return fromPlain(body, now)
}

// Extensions a CloudEvent may carry to name its target.
const (
	extInstance   = "stackinstance"
	extDeployment = "deployment"
	extResource   = "resource"
)

func fromCloudEvent(ce cloudevents.Event) (Event, error) {
	if err := ce.Validate(); err != nil {
		return Event{}, problem.Invalid("body", "cloudevent", "%v", err)
	}
	e := Event{ID: outbox.Clean(ce.ID(), 200), Type: outbox.Clean(ce.Type(), 200), Subject: outbox.Clean(ce.Subject(), 500), Source: outbox.Clean(ce.Source(), 500)}
	if t := ce.Time(); !t.IsZero() {
		e.Time = &t
	}
	if raw := ce.Data(); len(raw) > 0 {
		var data any
		if json.Unmarshal(raw, &data) == nil {
			e.Data = data
		} else {
			e.Data = string(raw)
		}
	}
	ext := ce.Extensions()
	str := func(name string) string {
		s, _ := ext[name].(string)
		return outbox.Clean(s, 500)
	}
	e.Target = outbox.Target{Instance: str(extInstance), Deployment: str(extDeployment), Resource: str(extResource)}
	return e, nil
}

// An alert of Alertmanager's webhook notification (version 4); Grafana's alerting sends the
// same shape.
type alert struct {
	Status       string            `json:"status"`
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL"`
	Fingerprint  string            `json:"fingerprint"`
}

type notification struct {
	Version     string            `json:"version"`
	Receiver    string            `json:"receiver"`
	Status      string            `json:"status"`
	ExternalURL string            `json:"externalURL"`
	GroupLabels map[string]string `json:"groupLabels"`
	Alerts      []alert           `json:"alerts"`
}

// Labels of an alert that name its target.
const (
	labelInstance   = "stack_instance"
	labelDeployment = "deployment"
	labelResource   = "resource"
)

// fromAlertmanager makes one event per alert: alert.firing or alert.resolved. Its id is the
// alert's fingerprint, status and start, so the same alert notified again (Alertmanager repeats
// a firing alert until it resolves) is the same event.
func fromAlertmanager(body []byte) ([]Event, error) {
	var n notification
	if err := json.Unmarshal(body, &n); err != nil {
		return nil, problem.Invalid("body", "alertmanager", "not an Alertmanager notification: %v", err)
	}
	if len(n.Alerts) > MaxEvents {
		return nil, problem.Invalid("body.alerts", "max", "a notification carries at most %d alerts", MaxEvents)
	}
	out := make([]Event, 0, len(n.Alerts))
	for i, a := range n.Alerts {
		if a.Status != "firing" && a.Status != "resolved" {
			return nil, problem.Invalid(fmt.Sprintf("body.alerts.%d.status", i), "enum", "must be firing or resolved")
		}
		id := a.Fingerprint
		if id == "" {
			id = digest(a.Labels)
		}
		start := a.StartsAt
		data := map[string]any{"status": a.Status, "labels": stringMap(a.Labels), "annotations": stringMap(a.Annotations),
			"startsAt": a.StartsAt, "endsAt": a.EndsAt, "generatorURL": a.GeneratorURL, "fingerprint": a.Fingerprint,
			"receiver": n.Receiver, "externalURL": n.ExternalURL}
		plain, err := roundTrip(data)
		if err != nil {
			return nil, err
		}
		out = append(out, Event{
			ID: outbox.Clean(id+":"+a.Status+":"+start.UTC().Format(time.RFC3339Nano), 200), Type: "alert." + a.Status,
			Subject: outbox.Clean(a.Labels["alertname"], 500), Source: outbox.Clean(n.ExternalURL, 500), Time: &start, Data: plain,
			Target: outbox.Target{Instance: outbox.Clean(a.Labels[labelInstance], 500), Deployment: outbox.Clean(a.Labels[labelDeployment], 500),
				Resource: outbox.Clean(a.Labels[labelResource], 500)},
		})
	}
	return out, nil
}

// plain is an event in Nimbus's own plain shape.
type plain struct {
	ID      string     `json:"id"`
	Type    string     `json:"type"`
	Subject string     `json:"subject"`
	Time    *time.Time `json:"time"`
	Data    any        `json:"data"`
	outbox.Target
}

// fromPlain reads a JSON object with a type and a subject; without an id, its id is a digest
// of the body and of the five minutes it came in, so the same body sent again at once (a
// sender's retry) is one event, and sent again later, another.
func fromPlain(body []byte, now time.Time) ([]Event, error) {
	var p plain
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, problem.Invalid("body", "json", "%v", err)
	}
	v := &problem.ValidationError{}
	if strings.TrimSpace(p.Type) == "" {
		v.Add("type", "required", "name the event's type, such as vm.stopped")
	}
	if strings.TrimSpace(p.Subject) == "" && p.Target == (outbox.Target{}) {
		v.Add("subject", "required", "name what the event is about: a subject, stack_instance, deployment or resource")
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	id := p.ID
	if id == "" {
		sum := sha256.Sum256(fmt.Appendf(body[:len(body):len(body)], "@%d", now.Truncate(SignatureWindow).Unix()))
		id = hex.EncodeToString(sum[:16])
	}
	return []Event{{ID: outbox.Clean(id, 200), Type: outbox.Clean(p.Type, 200), Subject: outbox.Clean(p.Subject, 500), Time: p.Time, Data: p.Data,
		Target: outbox.Target{Instance: outbox.Clean(p.Instance, 500), Deployment: outbox.Clean(p.Deployment, 500), Resource: outbox.Clean(p.Resource, 500)}}}, nil
}

func stringMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// roundTrip gives data the plain shape JSON reads back (times as strings), as filters see it.
func roundTrip(data any) (any, error) {
	raw, err := json.Marshal(data)
	if err != nil {
		return nil, err
	}
	var out any
	return out, json.Unmarshal(raw, &out)
}

// digest names a set of labels when an alert comes without its fingerprint.
func digest(labels map[string]string) string {
	raw, _ := json.Marshal(labels) // a map's keys are written sorted
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:8])
}
