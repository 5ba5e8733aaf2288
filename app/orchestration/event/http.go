package event

import (
	"net/http"
	"strconv"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"nimbus/app/kernel/cursor"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/web"
)

// Handlers serves the event sources and the event log.
type Handlers struct {
	svc      *Service
	receiver *Receiver
}

// NewHandlers returns the handlers of svc and the receiver of webhooks.
func NewHandlers(svc *Service, receiver *Receiver) *Handlers {
	return &Handlers{svc: svc, receiver: receiver}
}

// SubscriptionsAPI answers GET /api/v1/event-subscriptions[?tenant_id=].
func (h *Handlers) SubscriptionsAPI(c echo.Context) error {
	var tenant *uuid.UUID
	if raw := c.QueryParam("tenant_id"); raw != "" {
		id, err := uuid.Parse(raw)
		if err != nil {
			return problem.Invalid("tenant_id", "uuid", "must be an ID")
		}
		tenant = &id
	}
	list, err := h.svc.Subscriptions(web.Ctx(c), web.Actor(c), tenant)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"subscriptions": list})
}

// SubscribeAPI answers POST /api/v1/event-subscriptions with the subscription and its signing
// secret, shown this once.
func (h *Handlers) SubscribeAPI(c echo.Context) error {
	var in NewSubscription
	if err := web.DecodeJSON(c, &in); err != nil {
		return err
	}
	out, err := h.svc.Subscribe(web.Ctx(c), web.Actor(c), in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, out)
}

// UpdateSubscriptionAPI answers PATCH /api/v1/event-subscriptions/{id} {"active": bool}.
func (h *Handlers) UpdateSubscriptionAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	var in struct {
		Active *bool `json:"active"`
	}
	if err := web.DecodeJSON(c, &in); err != nil {
		return err
	}
	if in.Active == nil {
		return problem.Invalid("active", "required", "say whether the subscription takes events")
	}
	out, err := h.svc.SetSubscriptionActive(web.Ctx(c), web.Actor(c), id, *in.Active)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// UnsubscribeAPI answers DELETE /api/v1/event-subscriptions/{id}.
func (h *Handlers) UnsubscribeAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	if err := h.svc.Unsubscribe(web.Ctx(c), web.Actor(c), id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// DeliveriesAPI answers GET /api/v1/event-subscriptions/{id}/deliveries: the latest, with
// every attempt.
func (h *Handlers) DeliveriesAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	list, err := h.svc.Deliveries(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"deliveries": list})
}

// ListAPI answers GET /api/v1/events: the log, newest first, filtered by tenant_id,
// environment_id, stack_instance_id, landing_zone_id, type and outcome; next pages on (as
// after=).
func (h *Handlers) ListAPI(c echo.Context) error {
	f := Filter{Type: c.QueryParam("type"), Outcome: c.QueryParam("outcome")}
	v := &problem.ValidationError{}
	for name, dst := range map[string]*uuid.UUID{"tenant_id": &f.Tenant, "environment_id": &f.Environment,
		"stack_instance_id": &f.Instance, "landing_zone_id": &f.Zone} {
		if raw := c.QueryParam(name); raw != "" {
			id, err := uuid.Parse(raw)
			if err != nil {
				v.Add(name, "uuid", "must be an ID")
			}
			*dst = id
		}
	}
	after, err := cursor.Parse(c.QueryParam("after"))
	if err != nil {
		v.Add("after", "cursor", "must be the next token of an earlier page")
	}
	f.After = after
	if raw := c.QueryParam("limit"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > cursor.MaxRows {
			v.Add("limit", "range", "must be a whole number from 1 to %d", cursor.MaxRows)
		}
		f.Limit = n
	}
	if err := v.Err(); err != nil {
		return err
	}
	page, err := h.svc.List(web.Ctx(c), web.Actor(c), f)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, page)
}

// SourcesAPI answers GET /api/v1/landing-zones/{id}/event-sources.
func (h *Handlers) SourcesAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	list, err := h.svc.Sources(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"event_sources": list})
}

// CreateSourceAPI answers POST /api/v1/landing-zones/{id}/event-sources with the source and,
// for a webhook, its secret: shown this once.
func (h *Handlers) CreateSourceAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	var in NewSource
	if err := web.DecodeJSON(c, &in); err != nil {
		return err
	}
	out, err := h.svc.CreateSource(web.Ctx(c), web.Actor(c), id, in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, out)
}

// UpdateSourceAPI answers PATCH /api/v1/event-sources/{id} {"active": bool}.
func (h *Handlers) UpdateSourceAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	var in struct {
		Active *bool `json:"active"`
	}
	if err := web.DecodeJSON(c, &in); err != nil {
		return err
	}
	if in.Active == nil {
		return problem.Invalid("active", "required", "say whether the source takes events")
	}
	out, err := h.svc.SetActive(web.Ctx(c), web.Actor(c), id, *in.Active)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// RotateSecretAPI answers POST /api/v1/event-sources/{id}/secret with a new secret, shown
// this once; the old one stops working.
func (h *Handlers) RotateSecretAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	out, err := h.svc.RotateSecret(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// DeleteSourceAPI answers DELETE /api/v1/event-sources/{id}.
func (h *Handlers) DeleteSourceAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	if err := h.svc.DeleteSource(web.Ctx(c), web.Actor(c), id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
