// Package poller watches clouds for what changes outside Nimbus — a machine stopped, started
// or deleted by hand — and records each change as an event of the cloud_provider source that
// watches the cloud, for the router to send to the stack instance the machine belongs to.
//
// Each source's last sight of its cloud is kept in Postgres (event_poller_state). A poll asks
// the cloud first, outside any transaction, then compares what it got with that sight and
// writes the changed states and the events they make in one transaction, so a crash between
// looking and saving repeats the poll rather than losing or doubling an event; each event's
// ID is made from the state it replaces, so the same change seen twice is logged once.
package poller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"nimbus/app/kernel/outbox"
	"nimbus/app/orchestration/event"
)

// The power states of a machine that make events; a cloud may report others (paused,
// suspended), which are kept and compared but tell no one.
const (
	Running = "running"
	Stopped = "stopped"
)

// eventTypes are the events a machine's new state makes.
var eventTypes = map[string]string{Running: "vm.started", Stopped: "vm.stopped"}

// deleted is the event of a machine the cloud no longer has.
const deleted = "vm.deleted"

// Cloud is one cloud as a poller reads it.
type Cloud interface {
	// Machines are the cloud's machines now, by the ID a deployment's outputs hold.
	Machines(ctx context.Context) (map[string]Machine, error)
}

// Machine is what a cloud says of one machine.
type Machine struct {
	State string
	// Task is the cloud's record of what last changed the machine, where the cloud keeps one
	// (Proxmox's task log); nil otherwise.
	Task *Task
}

// Task is one entry of a cloud's task log: who did what, and when it ended.
type Task struct {
	ID    string    `json:"id"`
	Type  string    `json:"type"`
	User  string    `json:"user,omitempty"`
	EndAt time.Time `json:"end_at,omitzero"`
}

// Seen is what a source saw of a machine last: its state, and when that state was first seen.
type Seen struct {
	State string
	Since time.Time
}

func (s Seen) equal(o Seen) bool { return s.State == o.State && s.Since.Equal(o.Since) }

// Diff is what one poll writes: the states that are new or changed, the machines that are
// gone, and the events the changes make.
type Diff struct {
	Store  map[string]string
	Forget []string
	Events []event.Event
}

// Compare sets what a source saw last against what its cloud (provider names it) has now, at
// the time given. A machine seen for the first time makes no event: the first poll of a new
// source learns the cloud as it is.
func Compare(provider string, last map[string]Seen, now map[string]Machine, at time.Time) Diff {
	d := Diff{Store: map[string]string{}}
	for id, m := range now {
		before, known := last[id]
		if known && before.State == m.State {
			continue
		}
		d.Store[id] = m.State
		if typ, ok := eventTypes[m.State]; ok && known {
			d.Events = append(d.Events, change(provider, id, typ, before, m.State, m.Task, at))
		}
	}
	for id, before := range last {
		if _, ok := now[id]; !ok {
			d.Forget = append(d.Forget, id)
			d.Events = append(d.Events, change(provider, id, deleted, before, "", nil, at))
		}
	}
	slices.SortFunc(d.Events, func(a, b event.Event) int { return strings.Compare(a.Subject, b.Subject) })
	slices.Sort(d.Forget)
	return d
}

// change is the event of one machine's change. Its ID names the state it replaces by when
// that state was first seen: a poll repeated after a crash, or run twice at once, makes the
// same ID for the same change, and the log keeps one.
func change(provider, id, typ string, before Seen, state string, task *Task, at time.Time) event.Event {
	when := at
	if task != nil && !task.EndAt.IsZero() {
		when = task.EndAt
	}
	data := map[string]any{"provider": provider, "machine": id, "previous": before.State}
	if state != "" {
		data["state"] = state
	}
	if task != nil {
		data["task"] = task
	}
	return event.Event{
		ID:      fmt.Sprintf("%s/%s/%d", id, typ, before.Since.UnixMicro()),
		Type:    typ,
		Subject: id,
		Source:  provider,
		Time:    &when,
		Data:    data,
		Target:  outbox.Target{Resource: id},
	}
}
