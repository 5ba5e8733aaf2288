package ipam

import (
	"cmp"
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"nimbus/app/kernel/problem"
	"nimbus/app/platform/web"
	"nimbus/views"
)

// ListPage shows the pools the viewer may see, and the new-pool form to provider admins.
func (h *Handlers) ListPage(c echo.Context) error {
	return h.renderList(c, http.StatusOK, nil, nil)
}

func (h *Handlers) renderList(c echo.Context, status int, in *NewPool, err error) error {
	ctx, actor := web.Ctx(c), web.Actor(c)
	pools, lerr := h.svc.List(ctx, actor, Filter{})
	if lerr != nil {
		return lerr
	}
	rows := make([]PoolRow, len(pools))
	for i, p := range pools {
		rows[i] = rowOf(p)
	}
	sort := views.SortOf(c.Request().URL.Path, c.QueryParams(), "", "tenant", "scope", "name", "prefix", "used")
	views.SortRows(rows, sort, map[string]func(a, b PoolRow) int{
		"tenant": func(a, b PoolRow) int { return views.Fold(a.Tenant, b.Tenant) },
		"scope":  func(a, b PoolRow) int { return views.Fold(a.Scope, b.Scope) },
		"name":   func(a, b PoolRow) int { return views.Fold(a.Name, b.Name) },
		"prefix": func(a, b PoolRow) int { return comparePrefix(a.Prefix, b.Prefix) },
		"used":   func(a, b PoolRow) int { return a.Used - b.Used },
	})
	var form *PoolForm
	if actor.ProviderAdmin {
		zones, envs, err2 := h.svc.Scopes(ctx, actor)
		if err2 != nil {
			return err2
		}
		form = &PoolForm{Errors: web.FormErrors(err)}
		for _, z := range zones {
			form.Zones = append(form.Zones, views.Option(z))
		}
		for _, e := range envs {
			form.Environments = append(form.Environments, views.Option(e))
		}
		if in != nil {
			form.Scope, form.Name, form.Prefix, form.Reserved = scopeValue(*in), in.Name, in.Prefix, strings.Join(in.Reserved, ", ")
			for _, field := range []string{"environment_id", "landing_zone_id"} {
				if msg := form.Errors[field]; msg != "" {
					form.Errors["scope"] = msg
				}
			}
			for field, msg := range form.Errors {
				if strings.HasPrefix(field, "reserved[") {
					form.Errors["reserved"] = msg
				}
			}
		}
	}
	return web.Render(c, status, Pools(web.Page(c, "IP pools"), rows, sort, form))
}

func rowOf(p Pool) PoolRow {
	where, url := "landing zone "+p.LandingZone, ""
	if p.LandingZoneID != nil {
		url = "/landing-zones/" + p.LandingZoneID.String()
	}
	if p.EnvironmentID != nil {
		where, url = p.Tenant+" / "+p.Environment, "/environments/"+p.EnvironmentID.String()
	}
	r := PoolRow{ID: p.ID.String(), Name: p.Name, Prefix: p.Prefix.String(), Scope: where, ScopeURL: url, Tenant: p.Tenant,
		Gateway: p.Gateway.String(), Used: p.Used, Utilisation: p.Utilisation}
	if p.TenantID != nil {
		r.TenantID = p.TenantID.String()
	}
	return r
}

// comparePrefix orders prefixes by address, then by size.
func comparePrefix(a, b string) int {
	pa, erra := netip.ParsePrefix(a)
	pb, errb := netip.ParsePrefix(b)
	if erra != nil || errb != nil {
		return strings.Compare(a, b)
	}
	if c := pa.Addr().Compare(pb.Addr()); c != 0 {
		return c
	}
	return pa.Bits() - pb.Bits()
}

// usage says how full a pool is: "6% used — 14 of 254 addresses", and how many of those are
// reserved.
func usage(p Pool) string {
	n := func(f float64) string { return strconv.FormatFloat(f, 'f', 0, 64) }
	out := fmt.Sprintf("%.0f%% used — %s of %s addresses", p.Utilisation*100, n(p.Taken), n(p.Addresses))
	if p.ReservedAddresses > 0 {
		out += fmt.Sprintf(", %s of them reserved", n(p.ReservedAddresses))
	}
	return out
}

// CreateForm adds a pool from the form; reserved ranges are separated by commas.
func (h *Handlers) CreateForm(c echo.Context) error {
	in := NewPool{Name: c.FormValue("name"), Prefix: c.FormValue("prefix")}
	for _, r := range strings.Split(c.FormValue("reserved"), ",") {
		if r = strings.TrimSpace(r); r != "" {
			in.Reserved = append(in.Reserved, r)
		}
	}
	kind, raw, _ := strings.Cut(c.FormValue("scope"), ":")
	id, err := uuid.Parse(raw)
	switch {
	case err != nil:
		return h.renderList(c, http.StatusUnprocessableEntity, &in, problem.Invalid("scope", "required", "choose a landing zone or an environment"))
	case kind == "landing_zone":
		in.LandingZoneID = id
	default:
		in.EnvironmentID = id
	}
	p, err := h.svc.CreatePool(web.Ctx(c), web.Actor(c), in)
	if web.FormErrors(err) != nil {
		return h.renderList(c, http.StatusUnprocessableEntity, &in, err)
	}
	if err != nil {
		return err
	}
	web.SetFlash(c, web.FlashSuccess, "Pool "+p.Name+" ("+p.Prefix.String()+") added.")
	return web.Redirect(c, "/ipam/pools/"+p.ID.String())
}

// scopeValue is the scope select's value for a pool's landing zone or environment.
func scopeValue(in NewPool) string {
	if in.LandingZoneID != uuid.Nil {
		return "landing_zone:" + in.LandingZoneID.String()
	}
	return "environment:" + in.EnvironmentID.String()
}

// ShowPage shows a pool: how full it is, and who holds what.
func (h *Handlers) ShowPage(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	p, err := h.svc.Get(web.Ctx(c), web.Actor(c), id)
	if err != nil {
		return err
	}
	v := PoolView{PoolRow: rowOf(p), Usage: usage(p)}
	for _, r := range p.Reserved {
		v.Reserved = append(v.Reserved, ReservedRow{Range: r.String(), Addresses: strconv.FormatFloat(covered([]netip.Prefix{r}), 'f', 0, 64)})
	}
	for _, a := range p.Allocations {
		row := AllocationRow{Prefix: a.Prefix.String(), Kind: a.Kind, Deployment: a.Deployment, Input: cmp.Or(a.Inputs, a.Input), Moving: a.Replaces != nil, Created: a.CreatedAt}
		if a.Kind == "address" {
			row.Prefix = a.Prefix.Addr().String()
		}
		if a.DeploymentID != nil {
			row.DeploymentID = a.DeploymentID.String()
		}
		v.Allocations = append(v.Allocations, row)
	}
	page := web.Page(c, p.Name).Under(views.Crumb{Label: "IP pools", URL: "/ipam"})
	if v.ScopeURL != "" {
		page = page.Under(views.Crumb{Label: "IP pools", URL: "/ipam"}, views.Crumb{Label: v.Scope, URL: v.ScopeURL})
	}
	return web.Render(c, http.StatusOK, PoolPage(page, v))
}
