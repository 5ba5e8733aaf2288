package poller

import (
	"nimbus/app/kernel/outbox"
	"reflect"
	"testing"
	"time"
)

func TestCompare(t *testing.T) {
	at := time.Date(2026, 11, 27, 2, 0, 0, 0, time.UTC)
	since := at.Add(-time.Hour)
	seen := func(state string) Seen { return Seen{State: state, Since: since} }
	for _, tc := range []struct {
		name       string
		last       map[string]Seen
		now        map[string]Machine
		wantStore  map[string]string
		wantForget []string
		wantEvents []string // type and subject
	}{
		{name: "first sight makes no event", now: map[string]Machine{"m-1": {State: Running}, "m-2": {State: Stopped}},
			wantStore: map[string]string{"m-1": Running, "m-2": Stopped}},
		{name: "nothing changed", last: map[string]Seen{"m-1": seen(Running)}, now: map[string]Machine{"m-1": {State: Running}},
			wantStore: map[string]string{}},
		{name: "stopped", last: map[string]Seen{"m-1": seen(Running), "m-2": seen(Running)},
			now:       map[string]Machine{"m-1": {State: Stopped}, "m-2": {State: Running}},
			wantStore: map[string]string{"m-1": Stopped}, wantEvents: []string{"vm.stopped m-1"}},
		{name: "started", last: map[string]Seen{"m-1": seen(Stopped)}, now: map[string]Machine{"m-1": {State: Running}},
			wantStore: map[string]string{"m-1": Running}, wantEvents: []string{"vm.started m-1"}},
		{name: "deleted, running or stopped", last: map[string]Seen{"m-1": seen(Running), "m-2": seen(Stopped)},
			wantStore: map[string]string{}, wantForget: []string{"m-1", "m-2"}, wantEvents: []string{"vm.deleted m-1", "vm.deleted m-2"}},
		{name: "a state that tells no one is kept", last: map[string]Seen{"101": seen(Running)}, now: map[string]Machine{"101": {State: "paused"}},
			wantStore: map[string]string{"101": "paused"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Compare("simcloud", tc.last, tc.now, at)
			if !reflect.DeepEqual(d.Store, tc.wantStore) || !reflect.DeepEqual(d.Forget, tc.wantForget) {
				t.Errorf("store %v, forget %v; want %v, %v", d.Store, d.Forget, tc.wantStore, tc.wantForget)
			}
			var got []string
			for _, e := range d.Events {
				got = append(got, e.Type+" "+e.Subject)
				if e.Target != (outbox.Target{Resource: e.Subject}) || e.Source != "simcloud" || !e.Time.Equal(at) {
					t.Errorf("event %+v: want the machine as its resource, the provider as its source, the poll's time", e)
				}
			}
			if !reflect.DeepEqual(got, tc.wantEvents) {
				t.Errorf("events %v, want %v", got, tc.wantEvents)
			}
		})
	}
}

func TestCompare_TheSameChangeHasTheSameID(t *testing.T) {
	at := time.Date(2026, 11, 27, 2, 0, 0, 0, time.UTC)
	last := map[string]Seen{"m-1": {State: Running, Since: at.Add(-time.Hour)}}
	now := map[string]Machine{"m-1": {State: Stopped}}
	// A poll repeated after a crash before it saved sees the same change a minute later.
	first, again := Compare("simcloud", last, now, at), Compare("simcloud", last, now, at.Add(time.Minute))
	if first.Events[0].ID != again.Events[0].ID {
		t.Fatalf("ids %q and %q: a change seen twice would be logged twice", first.Events[0].ID, again.Events[0].ID)
	}
	// Stopped again after a start is another change, with another ID.
	later := Compare("simcloud", map[string]Seen{"m-1": {State: Running, Since: at.Add(2 * time.Minute)}}, now, at.Add(3*time.Minute))
	if later.Events[0].ID == first.Events[0].ID {
		t.Fatalf("two stops share the id %q", first.Events[0].ID)
	}
}

func TestCompare_ATaskDatesItsChange(t *testing.T) {
	at := time.Date(2026, 11, 27, 2, 0, 0, 0, time.UTC)
	task := &Task{ID: "UPID:pve1:1:qmstop", Type: "qmstop", User: "root@pam", EndAt: at.Add(-30 * time.Second)}
	d := Compare("proxmox", map[string]Seen{"101": {State: Running}}, map[string]Machine{"101": {State: Stopped, Task: task}}, at)
	e := d.Events[0]
	if !e.Time.Equal(task.EndAt) || e.Data.(map[string]any)["task"] != task {
		t.Fatalf("event %+v: want the task's end as its time and the task in its data", e)
	}
}
