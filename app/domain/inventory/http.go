package inventory

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"nimbus/app/domain/tenant"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/cursor"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/web"
	"nimbus/views"
)

// Handlers serves the inventory's pages, exports and API.
type Handlers struct {
	svc     *Service
	tenants *tenant.Service
}

// NewHandlers returns the handlers for svc; tenants names the tenants the filter offers.
func NewHandlers(svc *Service, tenants *tenant.Service) *Handlers {
	return &Handlers{svc: svc, tenants: tenants}
}

// filterOf reads a list's filters from the query string, refusing malformed ones by name; form
// is what the page's filter form shows.
func filterOf(c echo.Context) (Filter, FilterForm, error) {
	form := FilterForm{Search: c.QueryParam("q"), Type: c.QueryParam("type"), Tenant: c.QueryParam("tenant"),
		Environment: c.QueryParam("environment"), Status: c.QueryParam("status")}
	f := Filter{Search: form.Search, Type: strings.TrimSpace(form.Type), Environment: strings.TrimSpace(form.Environment),
		Status: Status(form.Status)}
	v := &problem.ValidationError{}
	if form.Tenant != "" {
		id, err := uuid.Parse(form.Tenant)
		if err != nil {
			v.Add("tenant", "uuid", "must be a tenant's ID")
		}
		f.Tenant = id
	}
	f.After, f.Limit = web.ListPosition(c, v)
	return f, form, v.Err()
}

// Page shows the inventory, filtered and paged.
func (h *Handlers) Page(c echo.Context) error {
	ctx, actor := web.Ctx(c), web.Actor(c)
	v := ListView{}
	f, form, err := filterOf(c)
	v.Form = form
	if err == nil {
		var page Page
		page, err = h.svc.List(ctx, actor, f)
		v.Items = page.Items
		v.Pager = web.Pager(c, web.NextPage(c, page.Items, f.Limit, place))
	}
	status := http.StatusOK
	if errs := web.FormErrors(err); errs != nil {
		v.Errors, status = errs, http.StatusUnprocessableEntity
	} else if err != nil {
		return err
	}
	if v.Tenants, err = h.tenantOptions(ctx, actor); err != nil {
		return err
	}
	v.Statuses = []views.Option{{Value: "", Label: "any"}}
	for _, s := range Machine.States() {
		v.Statuses = append(v.Statuses, views.Option{Value: string(s), Label: string(s)})
	}
	v.Export = exportQuery(c.QueryParams())
	return web.Render(c, status, List(web.Page(c, "Inventory"), v))
}

// tenantOptions are the tenants the filter offers: those whose items the actor may see.
func (h *Handlers) tenantOptions(ctx context.Context, actor access.Principal) ([]views.Option, error) {
	ts, err := h.tenants.List(ctx, actor)
	if err != nil {
		return nil, err
	}
	out := []views.Option{{Value: "", Label: "any"}}
	for _, t := range ts {
		if actor.Can(access.InventoryRead, t.ID) {
			out = append(out, views.Option{Value: t.ID.String(), Label: t.Name})
		}
	}
	return out, nil
}

// ItemPage shows one item, where it belongs and what it is related to.
func (h *Handlers) ItemPage(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	ctx, actor := web.Ctx(c), web.Actor(c)
	d, err := h.svc.Get(ctx, actor, id)
	if err != nil {
		return err
	}
	var choices AdoptChoices
	if actor.ProviderAdmin {
		if choices, err = h.svc.adoptChoices(ctx, d); err != nil {
			return err
		}
	}
	page := web.Page(c, d.Name)
	page.Crumbs = []views.Crumb{{Label: "Inventory", URL: "/inventory"}}
	var outputs map[string]any
	_ = json.Unmarshal(d.Outputs, &outputs)
	return web.Render(c, http.StatusOK, ItemPage(page, d, views.Values(outputs), choices))
}

// ListAPI answers GET /api/v1/inventory with a page of items; next continues it.
func (h *Handlers) ListAPI(c echo.Context) error {
	f, _, err := filterOf(c)
	if err != nil {
		return err
	}
	page, err := h.svc.List(web.Ctx(c), web.Actor(c), f)
	if err != nil {
		return err
	}
	out := map[string]any{"items": page.Items}
	if next := web.NextPage(c, page.Items, f.Limit, place); next != "" {
		out["next"] = next
	}
	return c.JSON(http.StatusOK, out)
}

// GetAPI answers GET /api/v1/inventory/{id}.
func (h *Handlers) GetAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	d, err := h.svc.Get(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, struct {
		Item
		Related []Related `json:"related"`
	}{d.Item, d.Related})
}

// csvHeader names the columns of the CSV export.
var csvHeader = []string{"id", "name", "type", "status", "status_at", "provider_id", "addresses", "fqdns", "image",
	"tenant", "environment", "deployment_id", "operation_id", "urn", "created_at"}

// ExportCSV answers every item the filters match, one row each, as a CSV file.
func (h *Handlers) ExportCSV(c echo.Context) error {
	first := true
	var w *csv.Writer
	return h.export(c, func(items []Item) error {
		if first {
			first = false
			c.Response().Header().Set(echo.HeaderContentType, "text/csv; charset=utf-8")
			c.Response().Header().Set("Content-Disposition", `attachment; filename="inventory.csv"`)
			c.Response().WriteHeader(http.StatusOK)
			w = csv.NewWriter(c.Response())
			if err := w.Write(csvHeader); err != nil {
				return err
			}
		}
		for _, it := range items {
			err := w.Write([]string{it.ID.String(), it.Name, it.Type, string(it.Status), it.StatusAt.UTC().Format("2006-01-02T15:04:05Z"),
				it.ProviderID, strings.Join(it.Addresses, " "), strings.Join(it.FQDNs, " "), it.Image, it.TenantName,
				it.EnvironmentName, idOrEmpty(it.DeploymentID), idOrEmpty(it.OperationID), it.URN,
				it.CreatedAt.UTC().Format("2006-01-02T15:04:05Z")})
			if err != nil {
				return err
			}
		}
		w.Flush()
		return w.Error()
	})
}

// ExportJSON answers every item the filters match as one JSON array.
func (h *Handlers) ExportJSON(c echo.Context) error {
	n := 0
	res := c.Response()
	enc := json.NewEncoder(res)
	err := h.export(c, func(items []Item) error {
		if n == 0 {
			res.Header().Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
			res.Header().Set("Content-Disposition", `attachment; filename="inventory.json"`)
			res.WriteHeader(http.StatusOK)
			if _, err := res.Write([]byte("[")); err != nil {
				return err
			}
		}
		for _, it := range items {
			if n > 0 {
				if _, err := res.Write([]byte(",")); err != nil {
					return err
				}
			}
			n++
			if err := enc.Encode(it); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	_, err = res.Write([]byte("]\n"))
	return err
}

// export hands write every item the filters match, a page at a time, the first page even when
// empty; a refusal comes before anything is written, so it is answered as any other.
func (h *Handlers) export(c echo.Context, write func([]Item) error) error {
	f, _, err := filterOf(c)
	if err != nil {
		return err
	}
	f.Limit = cursor.MaxRows
	for {
		page, err := h.svc.List(web.Ctx(c), web.Actor(c), f)
		if err != nil {
			return err
		}
		if err := write(page.Items); err != nil {
			return err
		}
		if page.Next.IsZero() {
			return nil
		}
		f.After = page.Next
	}
}

// exportQuery is the filters of a page's query, for its exports: those given, without the
// page's place and size (an export holds every item the filters match).
func exportQuery(q url.Values) url.Values {
	out := url.Values{}
	for _, k := range []string{"q", "type", "tenant", "environment", "status"} {
		if v := q.Get(k); v != "" {
			out.Set(k, v)
		}
	}
	return out
}

// place is where an item sits in the list, for the next page's cursor.
func place(it Item) cursor.Cursor { return cursor.Cursor{At: it.CreatedAt, ID: it.ID} }

func idOrEmpty(id *uuid.UUID) string {
	if id == nil {
		return ""
	}
	return id.String()
}

// setAside answers a move of an item by a provider admin (Service.Ignore, Service.Unignore):
// the item as it is now in the API, its page again from a form.
func (h *Handlers) setAside(move func(context.Context, access.Principal, uuid.UUID) (Item, error), api bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, err := web.IDParam(c, "id")
		if err != nil {
			return err
		}
		it, err := move(web.Ctx(c), web.Actor(c), id)
		if err != nil {
			return err
		}
		if api {
			return c.JSON(http.StatusOK, it)
		}
		web.SetFlash(c, web.FlashSuccess, it.Name+" is "+string(it.Status)+".")
		return web.Redirect(c, "/inventory/"+id.String())
	}
}
