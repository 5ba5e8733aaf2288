package stack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/web"
	"nimbus/views"
)

// InstanceRow is one instance of a stack, as the stack's page lists it.
type InstanceRow struct {
	ID                        uuid.UUID
	Name, Environment, Status string
	State                     string
	Version                   int
	CreatedAt                 time.Time
}

// Instances lists the instances of a stack that actor may see; the server wires it to the
// service that deploys them, which itself reads stacks.
type Instances func(ctx context.Context, actor access.Principal, stackID uuid.UUID) ([]InstanceRow, error)

var stacksCrumb = views.Crumb{Label: "Stacks", URL: "/stacks"}

func stackURL(id uuid.UUID) string { return "/stacks/" + id.String() }

// CatalogView is the list of stacks with its filters and what the viewer may do.
type CatalogView struct {
	Filter    Filter
	Stacks    []Stack
	Providers []string
	CanCreate bool
	// ForkTenants are the tenants the viewer may fork provider stacks into.
	ForkTenants []views.Option
}

// CatalogPage answers GET /stacks.
func (h *Handlers) CatalogPage(c echo.Context) error {
	ctx, actor := web.Ctx(c), web.Actor(c)
	f := Filter{Search: c.QueryParam("q"), Provider: c.QueryParam("provider"), Scope: c.QueryParam("scope")}
	list, err := h.svc.List(ctx, actor, f)
	if err != nil {
		return err
	}
	v := CatalogView{Filter: f, Stacks: list, CanCreate: actor.ProviderAdmin || actor.CanSomewhere(access.StackDefinitionCreate)}
	if sem, err := h.components.Semantics(ctx, actor); err == nil {
		v.Providers = sem.Providers
	}
	if v.ForkTenants, err = h.forkTenants(ctx, actor); err != nil {
		return err
	}
	v.ForkTenants = held(v.ForkTenants, actor)
	return web.Render(c, http.StatusOK, CatalogPage(web.Page(c, "Stacks"), v))
}

// forkTenants are the tenants in which actor may create stacks, by name.
func (h *Handlers) forkTenants(ctx context.Context, actor access.Principal) ([]views.Option, error) {
	if !actor.CanSomewhere(access.StackDefinitionCreate) {
		return nil, nil
	}
	owners, err := h.components.Owners(ctx, actor)
	if err != nil {
		return nil, err
	}
	var out []views.Option
	for _, o := range owners {
		if actor.Can(access.StackDefinitionCreate, o.ID) {
			out = append(out, views.Option{Value: o.ID.String(), Label: o.Name})
		}
	}
	return out, nil
}

// held keeps the tenants in which actor holds a role of their own: forking is offered to a
// tenant's admins, not to provider admins on every tenant's behalf.
func held(tenants []views.Option, actor access.Principal) []views.Option {
	var out []views.Option
	for _, t := range tenants {
		if id, err := uuid.Parse(t.Value); err == nil {
			if _, ok := actor.Roles[id]; ok {
				out = append(out, t)
			}
		}
	}
	return out
}

// NewView is the form that creates a stack.
type NewView struct {
	In        New
	Tenant    string
	Providers []string
	Owners    []views.Option
	Errors    views.Errors
}

// NewPage answers GET /stacks/new.
func (h *Handlers) NewPage(c echo.Context) error {
	return h.renderNew(c, http.StatusOK, NewView{In: New{Provider: "simcloud"}}, nil)
}

func (h *Handlers) renderNew(c echo.Context, status int, v NewView, err error) error {
	ctx, actor := web.Ctx(c), web.Actor(c)
	sem, semErr := h.components.Semantics(ctx, actor)
	if semErr != nil {
		return semErr
	}
	v.Providers = sem.Providers
	if actor.ProviderAdmin {
		v.Owners = append(v.Owners, views.Option{Value: "", Label: "Provider (every tenant)"})
	}
	tenants, tErr := h.forkTenants(ctx, actor)
	if tErr != nil {
		return tErr
	}
	for _, t := range tenants {
		v.Owners = append(v.Owners, views.Option{Value: t.Value, Label: "Tenant " + t.Label})
	}
	if len(v.Owners) == 0 {
		return problem.ErrForbidden
	}
	v.Errors = web.FormErrors(err)
	return web.Render(c, status, NewStackPage(web.Page(c, "New stack").Under(stacksCrumb), v))
}

// CreateForm answers POST /stacks: it creates the stack with an empty draft and opens its editor.
func (h *Handlers) CreateForm(c echo.Context) error {
	v := NewView{In: New{Provider: c.FormValue("provider"), Name: strings.TrimSpace(c.FormValue("name")),
		DisplayName: c.FormValue("display_name"), Description: c.FormValue("description")}, Tenant: c.FormValue("tenant_id")}
	if v.Tenant != "" {
		id, err := uuid.Parse(v.Tenant)
		if err != nil {
			return h.renderNew(c, http.StatusUnprocessableEntity, v, problem.Invalid("tenant_id", "exists", "choose an owner from the list"))
		}
		v.In.TenantID = &id
	}
	if v.In.DisplayName == "" {
		v.In.DisplayName = v.In.Name
	}
	st, err := h.svc.Create(web.Ctx(c), web.Actor(c), v.In)
	if web.FormErrors(err) != nil {
		return h.renderNew(c, http.StatusUnprocessableEntity, v, err)
	}
	if err != nil {
		return err
	}
	web.SetFlash(c, web.FlashSuccess, "Stack "+st.Name+" created. Add its parameters, slots and state machine, then publish it.")
	return web.Redirect(c, stackURL(st.ID)+"/edit")
}

// StackView is a stack's page.
type StackView struct {
	Stack     Stack
	Instances []InstanceRow
	CanEdit   bool
	// ForkTenants are where the viewer may fork this provider stack; none when it may not.
	ForkTenants []views.Option
	Changelog   string
	Errors      views.Errors
	Fork        ForkRequest
}

// ShowPage answers GET /stacks/{id}.
func (h *Handlers) ShowPage(c echo.Context) error {
	return h.renderShow(c, http.StatusOK, StackView{}, nil)
}

func (h *Handlers) renderShow(c echo.Context, status int, v StackView, err error) error {
	id, idErr := web.IDParam(c, "id")
	if idErr != nil {
		return idErr
	}
	ctx, actor := web.Ctx(c), web.Actor(c)
	st, getErr := h.svc.Get(ctx, actor, id)
	if getErr != nil {
		return getErr
	}
	v.Stack, v.CanEdit = st, st.Draft != nil
	if h.instances != nil {
		var listErr error
		if v.Instances, listErr = h.instances(ctx, actor, id); listErr != nil {
			return listErr
		}
	}
	if st.ProviderLevel() && st.LatestVersion > 0 {
		var fErr error
		if v.ForkTenants, fErr = h.forkTenants(ctx, actor); fErr != nil {
			return fErr
		}
		v.ForkTenants = held(v.ForkTenants, actor)
	}
	if v.Fork.Version == 0 {
		v.Fork.Version = st.LatestVersion
	}
	v.Errors = web.FormErrors(err)
	return web.Render(c, status, StackPage(web.Page(c, st.DisplayName).Under(stacksCrumb), v))
}

// PublishForm answers POST /stacks/{id}/publish.
func (h *Handlers) PublishForm(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	changelog := c.FormValue("changelog")
	ver, err := h.svc.Publish(web.Ctx(c), web.Actor(c), id, changelog)
	if web.FormErrors(err) != nil {
		return h.renderShow(c, http.StatusUnprocessableEntity, StackView{Changelog: changelog}, err)
	}
	if err != nil {
		return err
	}
	web.SetFlash(c, web.FlashSuccess, "Published v"+strconv.Itoa(ver.Version)+".")
	return web.Redirect(c, stackURL(id))
}

// ArchiveForm answers POST /stacks/{id}/versions/{n}/archive; a refusal is shown in words.
func (h *Handlers) ArchiveForm(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	n, err := versionParam(c)
	if err != nil {
		return err
	}
	err = h.svc.Archive(web.Ctx(c), web.Actor(c), id, n)
	var v *problem.ValidationError
	switch {
	case errors.As(err, &v):
		web.SetFlash(c, web.FlashError, "Version "+strconv.Itoa(n)+" was not archived: "+v.Fields[0].Message+".")
	case err != nil:
		return err
	default:
		web.SetFlash(c, web.FlashSuccess, "Version "+strconv.Itoa(n)+" archived: it deploys no new instance.")
	}
	return web.Redirect(c, stackURL(id))
}

// ForkForm answers POST /stacks/{id}/fork and opens the fork's page.
func (h *Handlers) ForkForm(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	in := ForkRequest{Name: c.FormValue("name")}
	in.Version, _ = strconv.Atoi(c.FormValue("version"))
	tenants, err := h.forkTenants(web.Ctx(c), web.Actor(c))
	if err != nil {
		return err
	}
	tenant := c.FormValue("tenant_id")
	if tenants = held(tenants, web.Actor(c)); tenant == "" && len(tenants) == 1 {
		tenant = tenants[0].Value
	}
	in.TenantID, _ = uuid.Parse(tenant)
	fork, err := h.svc.Fork(web.Ctx(c), web.Actor(c), id, in)
	if web.FormErrors(err) != nil {
		return h.renderShow(c, http.StatusUnprocessableEntity, StackView{Fork: in}, err)
	}
	if err != nil {
		return err
	}
	web.SetFlash(c, web.FlashSuccess, "Forked into "+fork.TenantName+" as "+fork.Name+".")
	return web.Redirect(c, stackURL(fork.ID))
}

// DiffView compares two versions side by side: what changed by name, and both definitions.
type DiffView struct {
	Stack     Stack
	Diff      Diff
	FromLabel string
	ToLabel   string
	Old, New  string
}

// DiffPage answers GET /stacks/{id}/diff?from=&to=, or for a fork ?against=parent&to=.
func (h *Handlers) DiffPage(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	ctx, actor := web.Ctx(c), web.Actor(c)
	st, err := h.svc.Get(ctx, actor, id)
	if err != nil {
		return err
	}
	number := func(name string) int {
		n, _ := strconv.Atoi(c.QueryParam(name))
		return n
	}
	cmp := Compare{From: number("from"), To: number("to"), Parent: c.QueryParam("against") == "parent"}
	if cmp.Parent {
		cmp.From = number("version")
		if cmp.From == 0 && st.ForkedFrom != nil {
			cmp.From = st.ForkedFrom.LatestVersion
		}
	}
	d, err := h.svc.Diff(ctx, actor, id, cmp)
	if err != nil {
		return err
	}
	v := DiffView{Stack: st, Diff: d, FromLabel: "v" + strconv.Itoa(d.From.Version), ToLabel: "v" + strconv.Itoa(d.To.Version)}
	if cmp.Parent {
		v.FromLabel = st.ForkedFrom.Name + " " + v.FromLabel
		v.ToLabel = st.Name + " " + v.ToLabel
	}
	for _, side := range []struct {
		at     DiffSide
		target *string
	}{{d.From, &v.Old}, {d.To, &v.New}} {
		ver, err := h.svc.Version(ctx, actor, side.at.StackID, side.at.Version)
		if err != nil {
			return err
		}
		b, _ := json.MarshalIndent(ver.Definition, "", "  ")
		*side.target = string(b)
	}
	page := web.Page(c, "Compare "+v.FromLabel+" with "+v.ToLabel).Under(stacksCrumb, views.Crumb{Label: st.DisplayName, URL: stackURL(id)})
	return web.Render(c, http.StatusOK, DiffPage(page, v))
}

// diffURL compares version from with version to of the stack.
func diffURL(id uuid.UUID, q url.Values) string { return stackURL(id) + "/diff?" + q.Encode() }

// parentDiffURL compares the parent's latest version with the fork's latest.
func parentDiffURL(st Stack) string {
	return diffURL(st.ID, url.Values{"against": {"parent"}, "version": {strconv.Itoa(st.ForkedFrom.LatestVersion)}})
}

// problemsAt lists the messages of the problems whose field is path or lies under it;
// except, when given, leaves out those under path+except.
func problemsAt(all []problem.FieldError, path string, except ...string) []string {
	var out []string
	for _, p := range all {
		if p.Field != path && !strings.HasPrefix(p.Field, path+".") {
			continue
		}
		if slices.ContainsFunc(except, func(e string) bool { return strings.HasPrefix(p.Field, path+e) }) {
			continue
		}
		out = append(out, p.Message)
	}
	return out
}

// problemsExactly lists the messages of the problems about path itself.
func problemsExactly(all []problem.FieldError, path string) []string {
	var out []string
	for _, p := range all {
		if p.Field == path {
			out = append(out, p.Message)
		}
	}
	return out
}

func scopeWords(st Stack) string {
	if st.ProviderLevel() {
		return "provider (offered to every tenant)"
	}
	return "tenant " + st.TenantName
}

func fmtVersion(n int) string {
	if n == 0 {
		return "not published"
	}
	return fmt.Sprintf("v%d", n)
}
