package server_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"

	"nimbus/app/access"
	"nimbus/app/event"
	"nimbus/app/problem"
)

// eventSource is a webhook source of the draft zone.
func (w *world) eventSource(t *testing.T) event.Created {
	return fixture(w, "eventSource", func() event.Created {
		src, err := event.NewService(w.pool, w.keys).CreateSource(context.Background(), w.admin, w.draftZone(t).zone.ID,
			event.NewSource{Name: "alerts", Kind: event.Webhook})
		must(t, err)
		return src
	})
}

// loggedEvent is an event of the log that reached tenant A.
func (w *world) loggedEvent(t *testing.T) uuid.UUID {
	return fixture(w, "loggedEvent", func() uuid.UUID {
		var id uuid.UUID
		must(t, w.pool.QueryRow(context.Background(), `INSERT INTO event_log (source_kind, event_id, type, payload, tenant_id, outcome)
			VALUES ('webhook', 'e-1', 'alert.firing', '{}', $1, 'unmatched') RETURNING id`, w.a.ID).Scan(&id))
		return id
	})
}

// subscription is tenant A's subscription, made by its admin.
func (w *world) subscription(t *testing.T) event.NewSubscribed {
	return fixture(w, "subscription", func() event.NewSubscribed {
		sub, err := event.NewService(w.pool, w.keys).Subscribe(context.Background(), w.adminA,
			event.NewSubscription{TenantID: &w.a.ID, Name: "hooks", URL: "https://hooks.example.com/nimbus"})
		must(t, err)
		return sub
	})
}

var eventCases = map[string]authzCase{
	"event.Service.Subscribe": {
		refused: []refusal{{userA, problem.ErrForbidden}, {adminB, problem.ErrNotFound}},
		served:  []actor{providerAdmin, adminA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			sub, err := event.NewService(w.pool, w.keys).Subscribe(context.Background(), p,
				event.NewSubscription{TenantID: &w.a.ID, Name: "mine-" + strings.ToLower(strings.Split(p.Email, "@")[0]), URL: "https://hooks.example.com/x"})
			if err == nil && sub.Secret == "" {
				t.Error("a new subscription comes without its secret")
			}
			return err
		},
	},
	"event.Service.Subscriptions": {
		refused: []refusal{{userA, errHidden}, {adminB, errHidden}},
		served:  []actor{providerAdmin, adminA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			sub := w.subscription(t)
			list, err := event.NewService(w.pool, w.keys).Subscriptions(context.Background(), p, nil)
			return shown(list, err, func(s event.Subscription) bool { return s.ID == sub.ID })
		},
	},
	"event.Service.SetSubscriptionActive": {
		refused: []refusal{{userA, problem.ErrForbidden}, {adminB, problem.ErrNotFound}},
		served:  []actor{providerAdmin, adminA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			got, err := event.NewService(w.pool, w.keys).SetSubscriptionActive(context.Background(), p, w.subscription(t).ID, false)
			if err == nil && got.Active {
				t.Error("the subscription is still active")
			}
			return err
		},
	},
	"event.Service.Deliveries": {
		refused: []refusal{{userA, problem.ErrForbidden}, {adminB, problem.ErrNotFound}},
		served:  []actor{providerAdmin, adminA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			_, err := event.NewService(w.pool, w.keys).Deliveries(context.Background(), p, w.subscription(t).ID)
			return err
		},
	},
	"event.Service.Unsubscribe": {
		refused: []refusal{{userA, problem.ErrForbidden}, {adminB, problem.ErrNotFound}},
		served:  []actor{adminA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			return event.NewService(w.pool, w.keys).Unsubscribe(context.Background(), p, w.subscription(t).ID)
		},
	},
	"event.Service.CreateSource": {
		refused: []refusal{{adminA, problem.ErrForbidden}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			src, err := event.NewService(w.pool, w.keys).CreateSource(context.Background(), p, w.draftZone(t).zone.ID,
				event.NewSource{Name: "hooks", Kind: event.Webhook})
			if err == nil && src.Secret == "" {
				t.Error("a new webhook source comes without its secret")
			}
			return err
		},
	},
	"event.Service.Sources": {
		refused: []refusal{{adminA, problem.ErrForbidden}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			src := w.eventSource(t)
			list, err := event.NewService(w.pool, w.keys).Sources(context.Background(), p, w.draftZone(t).zone.ID)
			return shown(list, err, func(s event.Source) bool { return s.ID == src.ID })
		},
	},
	"event.Service.RotateSecret": {
		refused: []refusal{{adminA, problem.ErrForbidden}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			src := w.eventSource(t)
			got, err := event.NewService(w.pool, w.keys).RotateSecret(context.Background(), p, src.ID)
			if err == nil && (got.Secret == "" || got.Secret == src.Secret) {
				t.Error("the secret was not replaced")
			}
			return err
		},
	},
	"event.Service.SetActive": {
		refused: []refusal{{adminA, problem.ErrForbidden}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			got, err := event.NewService(w.pool, w.keys).SetActive(context.Background(), p, w.eventSource(t).ID, false)
			if err == nil && got.Active {
				t.Error("the source is still active")
			}
			return err
		},
	},
	"event.Service.DeleteSource": {
		refused: []refusal{{adminA, problem.ErrForbidden}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			return event.NewService(w.pool, w.keys).DeleteSource(context.Background(), p, w.eventSource(t).ID)
		},
	},
	"event.Service.Source": {
		refused: []refusal{{adminA, problem.ErrNotFound}},
		served:  []actor{providerAdmin},
		call: func(t *testing.T, w *world, p access.Principal) error {
			src := w.eventSource(t)
			got, err := event.NewService(w.pool, w.keys).Source(context.Background(), p, src.ID)
			if err == nil && got.ID != src.ID {
				t.Errorf("got source %s, want %s", got.ID, src.ID)
			}
			return err
		},
	},
	"event.Service.Subscription": {
		refused: []refusal{{userA, problem.ErrForbidden}, {adminB, problem.ErrNotFound}},
		served:  []actor{providerAdmin, adminA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			sub := w.subscription(t)
			got, err := event.NewService(w.pool, w.keys).Subscription(context.Background(), p, sub.ID)
			if err == nil && got.ID != sub.ID {
				t.Errorf("got subscription %s, want %s", got.ID, sub.ID)
			}
			return err
		},
	},
	"event.Service.List": {
		refused: []refusal{{adminB, errHidden}},
		served:  []actor{providerAdmin, readerA},
		call: func(t *testing.T, w *world, p access.Principal) error {
			id := w.loggedEvent(t)
			page, err := event.NewService(w.pool, w.keys).List(context.Background(), p, event.Filter{})
			return shown(page.Events, err, func(l event.Logged) bool { return l.ID == id })
		},
	},
}
