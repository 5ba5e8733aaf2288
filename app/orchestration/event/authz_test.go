package event_test

import (
	"context"
	"strings"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/app/orchestration/event"
)

var eventCases = map[string]apptest.AuthzCase{
	"event.Service.Subscribe": {
		Refused: []apptest.Refusal{{Who: apptest.UserA, Want: problem.ErrForbidden}, {Who: apptest.AdminB, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ProviderAdmin, apptest.AdminA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			sub, err := event.NewService(w.Pool, w.Keys).Subscribe(context.Background(), p,
				event.NewSubscription{TenantID: &w.A.ID, Name: "mine-" + strings.ToLower(strings.Split(p.Email, "@")[0]), URL: "https://hooks.example.com/x"})
			if err == nil && sub.Secret == "" {
				t.Error("a new subscription comes without its secret")
			}
			return err
		},
	},
	"event.Service.Subscriptions": {
		Refused: []apptest.Refusal{{Who: apptest.UserA, Want: apptest.ErrHidden}, {Who: apptest.AdminB, Want: apptest.ErrHidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin, apptest.AdminA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			sub := w.Subscription(t)
			list, err := event.NewService(w.Pool, w.Keys).Subscriptions(context.Background(), p, nil)
			return apptest.Shown(list, err, func(s event.Subscription) bool { return s.ID == sub.ID })
		},
	},
	"event.Service.SetSubscriptionActive": {
		Refused: []apptest.Refusal{{Who: apptest.UserA, Want: problem.ErrForbidden}, {Who: apptest.AdminB, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ProviderAdmin, apptest.AdminA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			got, err := event.NewService(w.Pool, w.Keys).SetSubscriptionActive(context.Background(), p, w.Subscription(t).ID, false)
			if err == nil && got.Active {
				t.Error("the subscription is still active")
			}
			return err
		},
	},
	"event.Service.Deliveries": {
		Refused: []apptest.Refusal{{Who: apptest.UserA, Want: problem.ErrForbidden}, {Who: apptest.AdminB, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ProviderAdmin, apptest.AdminA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			_, err := event.NewService(w.Pool, w.Keys).Deliveries(context.Background(), p, w.Subscription(t).ID)
			return err
		},
	},
	"event.Service.Unsubscribe": {
		Refused: []apptest.Refusal{{Who: apptest.UserA, Want: problem.ErrForbidden}, {Who: apptest.AdminB, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.AdminA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			return event.NewService(w.Pool, w.Keys).Unsubscribe(context.Background(), p, w.Subscription(t).ID)
		},
	},
	"event.Service.CreateSource": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			src, err := event.NewService(w.Pool, w.Keys).CreateSource(context.Background(), p, w.DraftZone(t).Zone.ID,
				event.NewSource{Name: "hooks", Kind: event.Webhook})
			if err == nil && src.Secret == "" {
				t.Error("a new webhook source comes without its secret")
			}
			return err
		},
	},
	"event.Service.Sources": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			src := w.EventSource(t)
			list, err := event.NewService(w.Pool, w.Keys).Sources(context.Background(), p, w.DraftZone(t).Zone.ID)
			return apptest.Shown(list, err, func(s event.Source) bool { return s.ID == src.ID })
		},
	},
	"event.Service.RotateSecret": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			src := w.EventSource(t)
			got, err := event.NewService(w.Pool, w.Keys).RotateSecret(context.Background(), p, src.ID)
			if err == nil && (got.Secret == "" || got.Secret == src.Secret) {
				t.Error("the secret was not replaced")
			}
			return err
		},
	},
	"event.Service.SetActive": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			got, err := event.NewService(w.Pool, w.Keys).SetActive(context.Background(), p, w.EventSource(t).ID, false)
			if err == nil && got.Active {
				t.Error("the source is still active")
			}
			return err
		},
	},
	"event.Service.DeleteSource": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			return event.NewService(w.Pool, w.Keys).DeleteSource(context.Background(), p, w.EventSource(t).ID)
		},
	},
	"event.Service.Source": {
		Refused: []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			src := w.EventSource(t)
			got, err := event.NewService(w.Pool, w.Keys).Source(context.Background(), p, src.ID)
			if err == nil && got.ID != src.ID {
				t.Errorf("got source %s, want %s", got.ID, src.ID)
			}
			return err
		},
	},
	"event.Service.Subscription": {
		Refused: []apptest.Refusal{{Who: apptest.UserA, Want: problem.ErrForbidden}, {Who: apptest.AdminB, Want: problem.ErrNotFound}},
		Served:  []apptest.Actor{apptest.ProviderAdmin, apptest.AdminA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			sub := w.Subscription(t)
			got, err := event.NewService(w.Pool, w.Keys).Subscription(context.Background(), p, sub.ID)
			if err == nil && got.ID != sub.ID {
				t.Errorf("got subscription %s, want %s", got.ID, sub.ID)
			}
			return err
		},
	},
	"event.Service.List": {
		Refused: []apptest.Refusal{{Who: apptest.AdminB, Want: apptest.ErrHidden}},
		Served:  []apptest.Actor{apptest.ProviderAdmin, apptest.ReaderA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			id := w.LoggedEvent(t)
			page, err := event.NewService(w.Pool, w.Keys).List(context.Background(), p, event.Filter{})
			return apptest.Shown(page.Events, err, func(l event.Logged) bool { return l.ID == id })
		},
	},
}

// TestAuthz_Methods runs the authorization case of each of the package's data-access methods.
func TestAuthz_Methods(t *testing.T) { apptest.RunAuthz(t, eventCases) }
