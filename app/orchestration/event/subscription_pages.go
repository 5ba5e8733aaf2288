package event

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/web"
	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/views"
)

// SubscriptionsPage answers GET /event-subscriptions: every subscription the viewer manages,
// and for provider admins the form that subscribes to every tenant's events.
func (h *Handlers) SubscriptionsPage(c echo.Context) error {
	return h.renderSubscriptions(c, http.StatusOK, nil, SubscriptionForm{}, nil)
}

// TenantSubscriptionsPage answers GET /tenants/{id}/event-subscriptions: the tenant's
// subscriptions and the form that adds one, for its admins.
func (h *Handlers) TenantSubscriptionsPage(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	return h.renderSubscriptions(c, http.StatusOK, &id, SubscriptionForm{}, nil)
}

// renderSubscriptions shows the subscriptions of tenant (nil: all the viewer manages) with the
// form as typed and, once, the secret of one just made.
func (h *Handlers) renderSubscriptions(c echo.Context, status int, tenant *uuid.UUID, form SubscriptionForm, shown *NewSubscribed) error {
	ctx, actor := web.Ctx(c), web.Actor(c)
	list, err := h.svc.Subscriptions(ctx, actor, tenant)
	if err != nil {
		return err
	}
	v := SubscriptionsView{Form: form, Action: "/event-subscriptions", CanCreate: actor.ProviderAdmin}
	page := web.Page(c, "Event subscriptions")
	if tenant != nil {
		name, err := h.svc.tenantName(ctx, *tenant)
		if err != nil {
			return err
		}
		v.Tenant, v.Action, v.CanCreate = name, "/tenants/"+tenant.String()+"/event-subscriptions", true
		page = page.Under(views.Crumb{Label: "Tenants", URL: "/tenants"}, views.Crumb{Label: name, URL: "/tenants/" + tenant.String()})
	}
	var names map[uuid.UUID]string
	if tenant == nil {
		if names, err = h.svc.tenantNames(ctx, actor); err != nil {
			return err
		}
	}
	for _, s := range list {
		row := subscriptionRow(s)
		if s.TenantID != nil {
			row.Tenant = names[*s.TenantID]
		}
		v.Rows = append(v.Rows, row)
	}
	if shown != nil {
		v.Revealed = &SubscriptionSecret{ID: shown.ID.String(), Name: shown.Name, Secret: shown.Secret}
	}
	return web.Render(c, status, SubscriptionsPage(page, v))
}

// tenantName is the name of a tenant the actor was let see.
func (s *Service) tenantName(ctx context.Context, id uuid.UUID) (string, error) {
	t, err := db.Queries(s.pool).GetTenant(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) { // deleted since it was seen
		return "", problem.ErrNotFound
	}
	return t.Name, err
}

// tenantNames names the tenants the actor sees, by ID.
func (s *Service) tenantNames(ctx context.Context, actor access.Principal) (map[uuid.UUID]string, error) {
	rows, err := db.Queries(s.pool).ListTenants(ctx, dbgen.ListTenantsParams{AllTenants: actor.ProviderAdmin, TenantIds: actor.TenantsWithRole(access.ReadOnly)})
	if err != nil {
		return nil, fmt.Errorf("list tenants: %w", err)
	}
	names := make(map[uuid.UUID]string, len(rows))
	for _, r := range rows {
		names[r.ID] = r.Name
	}
	return names, nil
}

func subscriptionRow(s Subscription) SubscriptionRow {
	row := SubscriptionRow{ID: s.ID.String(), Name: s.Name, Host: hostOf(s.URL), Types: strings.Join(s.Types, ", "), Active: s.Active,
		Failures: s.Failures, DisabledReason: s.DisabledReason, Created: s.CreatedAt}
	if s.TenantID != nil {
		row.TenantID = s.TenantID.String()
	}
	return row
}

// SubscribeForm subscribes, from /event-subscriptions, to every tenant's events.
func (h *Handlers) SubscribeForm(c echo.Context) error {
	return h.subscribeForm(c, nil)
}

// TenantSubscribeForm subscribes, from the tenant's subscriptions page, to its events.
func (h *Handlers) TenantSubscribeForm(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	return h.subscribeForm(c, &id)
}

// subscribeForm makes a subscription of tenant and shows its secret this once.
func (h *Handlers) subscribeForm(c echo.Context, tenant *uuid.UUID) error {
	form := SubscriptionForm{Name: c.FormValue("name"), URL: strings.TrimSpace(c.FormValue("url")), Types: c.FormValue("types")}
	types := strings.FieldsFunc(form.Types, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\r' || r == '\t' })
	out, err := h.svc.Subscribe(web.Ctx(c), web.Actor(c), NewSubscription{TenantID: tenant, Name: form.Name, URL: form.URL, Types: types})
	if errs := web.FormErrors(err); errs != nil {
		form.Errors = underTypes(errs, types)
		return h.renderSubscriptions(c, http.StatusUnprocessableEntity, tenant, form, nil)
	}
	if err != nil {
		return err
	}
	return h.renderSubscriptions(c, http.StatusOK, tenant, SubscriptionForm{}, &out)
}

// underTypes shows the messages about single types (types.0, …) beside the types field, each
// naming the type it is about.
func underTypes(errs views.Errors, types []string) views.Errors {
	var found []string
	for i, t := range types {
		key := "types." + strconv.Itoa(i)
		if msg, ok := errs[key]; ok {
			found = append(found, strconv.Quote(t)+": "+msg)
			delete(errs, key)
		}
	}
	if len(found) > 0 {
		errs["types"] = strings.Join(found, "; ")
	}
	return errs
}

// SubscriptionPage answers GET /event-subscriptions/{id}: the subscription with its latest
// deliveries, newest first, and every attempt of each.
func (h *Handlers) SubscriptionPage(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	ctx, actor := web.Ctx(c), web.Actor(c)
	sub, err := h.svc.Subscription(ctx, actor, id)
	if err != nil {
		return err
	}
	deliveries, err := h.svc.Deliveries(ctx, actor, id)
	if err != nil {
		return err
	}
	v := SubscriptionView{Row: subscriptionRow(sub), List: subscriptionsOf(sub.TenantID)}
	page := web.Page(c, sub.Name)
	if sub.TenantID != nil {
		if v.Tenant, err = h.svc.tenantName(ctx, *sub.TenantID); err != nil {
			return err
		}
	}
	page = page.Under(views.Crumb{Label: "Event subscriptions", URL: v.List})
	for _, d := range deliveries {
		row := DeliveryRow{Type: d.Type, Subject: d.Subject, Status: d.Status, Created: d.CreatedAt, Finished: d.FinishedAt}
		for _, a := range slices.Backward(d.Attempts) {
			row.Attempts = append(row.Attempts, a)
		}
		v.Deliveries = append(v.Deliveries, row)
	}
	return web.Render(c, http.StatusOK, SubscriptionPage(page, v))
}

// SubscriptionActiveForm turns a subscription on (active=true) or off from its page.
func (h *Handlers) SubscriptionActiveForm(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	active, err := strconv.ParseBool(c.FormValue("active"))
	if err != nil {
		return problem.Invalid("active", "boolean", "must be true or false")
	}
	sub, err := h.svc.SetSubscriptionActive(web.Ctx(c), web.Actor(c), id, active)
	if err != nil {
		return err
	}
	msg := "Subscription " + sub.Name + " turned off: it is sent nothing."
	if active {
		msg = "Subscription " + sub.Name + " turned on; its failures are forgotten."
	}
	web.SetFlash(c, web.FlashSuccess, msg)
	return web.Redirect(c, "/event-subscriptions/"+id.String())
}

// UnsubscribeForm removes a subscription from its page.
func (h *Handlers) UnsubscribeForm(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	ctx, actor := web.Ctx(c), web.Actor(c)
	sub, err := h.svc.Subscription(ctx, actor, id)
	if err != nil {
		return err
	}
	if err := h.svc.Unsubscribe(ctx, actor, id); err != nil {
		return err
	}
	web.SetFlash(c, web.FlashSuccess, "Subscription "+sub.Name+" deleted.")
	return web.Redirect(c, subscriptionsOf(sub.TenantID))
}

// subscriptionsOf is the page listing the subscriptions of tenant (nil: every tenant's).
func subscriptionsOf(tenant *uuid.UUID) string {
	if tenant == nil {
		return "/event-subscriptions"
	}
	return "/tenants/" + tenant.String() + "/event-subscriptions"
}
