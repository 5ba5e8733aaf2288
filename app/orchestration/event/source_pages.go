package event

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"

	"nimbus/app/kernel/problem"
	"nimbus/app/platform/web"
	"nimbus/db"
	"nimbus/views"
)

// SourcesPage answers GET /landing-zones/{id}/event-sources: the zone's sources and the form
// that makes one.
func (h *Handlers) SourcesPage(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	return h.renderSources(c, http.StatusOK, id, SourceForm{Kind: Webhook}, nil)
}

// renderSources shows a zone's sources page with form as typed and, once, a secret just made.
func (h *Handlers) renderSources(c echo.Context, status int, zoneID uuid.UUID, form SourceForm, shown *Revealed) error {
	ctx, actor := web.Ctx(c), web.Actor(c)
	list, err := h.svc.Sources(ctx, actor, zoneID)
	if err != nil {
		return err
	}
	zone, err := h.svc.zoneName(ctx, zoneID)
	if err != nil {
		return err
	}
	rows := make([]SourceRow, len(list))
	for i, s := range list {
		rows[i] = SourceRow{ID: s.ID.String(), Name: s.Name, Kind: s.Kind, Active: s.Active, Created: s.CreatedAt, Config: string(s.Config)}
		if s.URL != "" {
			rows[i].URL = receiverURL(c, s.URL)
		}
	}
	v := SourcesView{ZoneID: zoneID.String(), Zone: zone, Sources: rows, Form: form, Revealed: shown,
		Kinds: []views.Option{{Value: Webhook, Label: "webhook: others send events to it"},
			{Value: CloudProvider, Label: "cloud_provider: Nimbus polls a cloud"},
			{Value: Nimbus, Label: "nimbus: Nimbus's own events"}}}
	page := web.Page(c, "Event sources").Under(views.Crumb{Label: "Landing zones", URL: "/landing-zones"},
		views.Crumb{Label: zone, URL: "/landing-zones/" + zoneID.String()})
	return web.Render(c, status, SourcesPage(page, v))
}

// zoneName is the name of a landing zone the actor was let see.
func (s *Service) zoneName(ctx context.Context, id uuid.UUID) (string, error) {
	z, err := db.Queries(s.pool).GetLandingZone(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) { // deleted since it was seen
		return "", problem.ErrNotFound
	}
	return z.Name, err
}

// receiverURL is where a webhook source takes events, as the browser reached this server.
func receiverURL(c echo.Context, path string) string {
	return c.Scheme() + "://" + c.Request().Host + path
}

// CreateSourceForm makes a source from the zone's sources page and shows a webhook's secret
// this once.
func (h *Handlers) CreateSourceForm(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	form := SourceForm{Name: c.FormValue("name"), Kind: c.FormValue("kind"), Config: strings.TrimSpace(c.FormValue("config"))}
	in := NewSource{Name: form.Name, Kind: form.Kind, Secret: c.FormValue("secret")}
	if form.Config != "" {
		in.Config = json.RawMessage(form.Config)
	}
	created, err := h.svc.CreateSource(web.Ctx(c), web.Actor(c), id, in)
	if errs := web.FormErrors(err); errs != nil {
		form.Errors = underConfig(errs)
		return h.renderSources(c, http.StatusUnprocessableEntity, id, form, nil)
	}
	if err != nil {
		return err
	}
	return h.renderSources(c, http.StatusOK, id, SourceForm{Kind: Webhook}, reveal(c, created, "made"))
}

// underConfig shows the messages about the fields of a source's config (config.url, …) beside
// the config field, each naming its field.
func underConfig(errs views.Errors) views.Errors {
	var keys []string
	for k := range errs {
		if strings.HasPrefix(k, "config.") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		msg := strings.TrimPrefix(k, "config.") + ": " + errs[k]
		if errs["config"] != "" {
			msg = errs["config"] + "; " + msg
		}
		errs["config"] = msg
		delete(errs, k)
	}
	return errs
}

// reveal is what the page shows once of a source just made or given a new secret; nil when it
// has no secret to show (a cloud_provider's was given, not made).
func reveal(c echo.Context, src Created, done string) *Revealed {
	if src.Secret == "" {
		return nil
	}
	return &Revealed{Name: src.Name, Done: done, URL: receiverURL(c, src.URL), Secret: src.Secret}
}

// RotateSecretForm gives a webhook source a new secret from the sources page, and shows it
// this once.
func (h *Handlers) RotateSecretForm(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	created, err := h.svc.RotateSecret(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	return h.renderSources(c, http.StatusOK, created.LandingZoneID, SourceForm{Kind: Webhook}, reveal(c, created, "given a new secret"))
}

// SourceActiveForm turns a source on (active=true) or off from the sources page.
func (h *Handlers) SourceActiveForm(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	active, err := strconv.ParseBool(c.FormValue("active"))
	if err != nil {
		return problem.Invalid("active", "boolean", "must be true or false")
	}
	src, err := h.svc.SetActive(web.Ctx(c), web.Actor(c), id, active)
	if err != nil {
		return err
	}
	msg := "Event source " + src.Name + " turned off: its events are refused."
	if active {
		msg = "Event source " + src.Name + " turned on."
	}
	web.SetFlash(c, web.FlashSuccess, msg)
	return web.Redirect(c, "/landing-zones/"+src.LandingZoneID.String()+"/event-sources")
}

// DeleteSourceForm removes a source from the sources page.
func (h *Handlers) DeleteSourceForm(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	ctx, actor := web.Ctx(c), web.Actor(c)
	src, err := h.svc.Source(ctx, actor, id)
	if err != nil {
		return err
	}
	if err := h.svc.DeleteSource(ctx, actor, id); err != nil {
		return err
	}
	web.SetFlash(c, web.FlashSuccess, "Event source "+src.Name+" deleted; the events it logged stay.")
	return web.Redirect(c, "/landing-zones/"+src.LandingZoneID.String()+"/event-sources")
}
