package notification_test

import (
	"context"
	"testing"

	"nimbus/app/apptest"
	"nimbus/app/domain/notification"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
)

// others are everyone but A's user, whose inbox the cases read: nobody reads another's, the
// provider admin included.
var others = []apptest.Actor{apptest.ProviderAdmin, apptest.AdminA, apptest.ReaderA, apptest.AdminB, apptest.Stranger}

func refused(want error) []apptest.Refusal {
	out := make([]apptest.Refusal, len(others))
	for i, a := range others {
		out[i] = apptest.Refusal{Who: a, Want: want}
	}
	return out
}

var inboxCases = map[string]apptest.AuthzCase{
	"notification.Service.List": {
		Refused: refused(apptest.ErrHidden),
		Served:  []apptest.Actor{apptest.UserA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			n := w.Notice(t)
			list, err := w.Notices.List(context.Background(), p, notification.Filter{})
			return apptest.Shown(list, err, func(x notification.Notification) bool { return x.ID == n.ID })
		},
	},
	"notification.Service.Unread": {
		Refused: refused(apptest.ErrHidden),
		Served:  []apptest.Actor{apptest.UserA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			w.Notice(t)
			n, err := w.Notices.Unread(context.Background(), p)
			if err == nil && n == 0 {
				return apptest.ErrHidden
			}
			return err
		},
	},
	"notification.Service.MarkRead": {
		Refused: refused(problem.ErrNotFound),
		Served:  []apptest.Actor{apptest.UserA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			_, err := w.Notices.MarkRead(context.Background(), p, w.Notice(t).ID)
			return err
		},
	},
	"notification.Service.MarkAllRead": {
		Refused: refused(apptest.ErrIgnored),
		Served:  []apptest.Actor{apptest.UserA},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			w.Notice(t)
			n, err := w.Notices.MarkAllRead(context.Background(), p)
			if err == nil && n == 0 {
				return apptest.ErrIgnored
			}
			return err
		},
	},
	"notification.Service.Preferences": {
		Open:   "everyone reads their own preferences, and only theirs",
		Served: []apptest.Actor{apptest.ProviderAdmin, apptest.UserA, apptest.Stranger},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			_, err := w.Notices.Preferences(context.Background(), p)
			return err
		},
	},
	"notification.Service.SetPreferences": {
		Open:   "everyone sets their own preferences, and only theirs",
		Served: []apptest.Actor{apptest.ProviderAdmin, apptest.AdminB, apptest.Stranger},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			return w.Notices.SetPreferences(context.Background(), p, notification.Preferences{Digest: true,
				Kinds: []notification.Choice{{Kind: "approval.requested"}}})
		},
		// What the others set is theirs: A's user keeps the defaults.
		Then: func(t *testing.T, w *apptest.World) {
			p, err := w.Notices.Preferences(context.Background(), w.UserA)
			apptest.Must(t, err)
			if p.Digest || !p.Kinds[0].Inbox {
				t.Errorf("A's user's preferences changed: %+v", p)
			}
		},
	},
}

// tenantPeople are everyone but the provider admin: mail is the operator's to set up.
var tenantPeople = []apptest.Refusal{{Who: apptest.AdminA, Want: problem.ErrForbidden}, {Who: apptest.UserA, Want: problem.ErrForbidden},
	{Who: apptest.AdminB, Want: problem.ErrForbidden}, {Who: apptest.Stranger, Want: problem.ErrForbidden}}

func mail(w *apptest.World) *notification.MailService {
	return notification.NewMailService(w.Pool, w.Keys)
}

var mailCases = map[string]apptest.AuthzCase{
	"notification.MailService.Settings": {
		Refused: tenantPeople,
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			_, err := mail(w).Settings(context.Background(), p)
			return err
		},
	},
	"notification.MailService.SetSettings": {
		Refused: tenantPeople,
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			return mail(w).SetSettings(context.Background(), p, notification.MailInput{Host: "smtp.example.com", Port: "587", TLS: "starttls",
				FromAddress: "nimbus@example.com", BaseURL: "https://nimbus.example.com"})
		},
		Then: func(t *testing.T, w *apptest.World) {
			s, err := mail(w).Settings(context.Background(), w.Admin)
			apptest.Must(t, err)
			if !s.Set || s.Host != "smtp.example.com" {
				t.Errorf("settings %+v", s)
			}
		},
	},
	"notification.MailService.Test": {
		Refused: tenantPeople,
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			err := mail(w).Test(context.Background(), p, "ops@example.com")
			if problem.FieldOf(err) == "host" {
				return nil // served: told that no server is set up
			}
			return err
		},
	},
	"notification.MailService.Failed": {
		Refused: tenantPeople,
		Served:  []apptest.Actor{apptest.ProviderAdmin},
		Call: func(t *testing.T, w *apptest.World, p access.Principal) error {
			_, err := mail(w).Failed(context.Background(), p)
			return err
		},
	},
}

// TestAuthz_Methods runs the authorization case of each of the package's data-access methods.
func TestAuthz_Methods(t *testing.T) { apptest.RunAuthz(t, inboxCases, mailCases) }
