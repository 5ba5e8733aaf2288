package resolver

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/lifecycle"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/web"
	"nimbus/views"
)

// EnvironmentPage shows an environment's resolver configurations, its own and its landing
// zone's, with forms for provider admins.
func (h *Handlers) EnvironmentPage(c echo.Context) error {
	return h.renderPage(c, http.StatusOK, "", nil, nil)
}

// ZonePage shows a landing zone's resolver configurations.
func (h *Handlers) ZonePage(c echo.Context) error {
	return h.renderPage(c, http.StatusOK, "", nil, nil)
}

// page is what the resolver page of an environment or a landing zone is made from.
type page struct {
	view    ResolversView
	configs []Config
	pools   func() ([]PoolChoice, error)
	names   uuid.UUID // the environment whose issued names are listed; none for a zone
	preview func(pattern string) (string, error)
}

// pageOf reads the scope the request's path names: /landing-zones/:id/… or /environments/:id/….
func (h *Handlers) pageOf(c echo.Context) (page, error) {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return page{}, err
	}
	ctx, actor := web.Ctx(c), web.Actor(c)
	if strings.HasPrefix(c.Path(), "/landing-zones/") {
		z, err := h.svc.zone(ctx, actor, id)
		if err != nil {
			return page{}, err
		}
		configs, err := h.svc.ZoneConfigs(ctx, actor, id)
		if err != nil {
			return page{}, err
		}
		return page{
			view: ResolversView{Base: "/landing-zones/" + id.String() + "/resolvers",
				Owner: "landing zone " + z.Name, OwnerURL: "/landing-zones/" + id.String(),
				Crumbs:    []views.Crumb{{Label: "Landing zones", URL: "/landing-zones"}, {Label: z.Name, URL: "/landing-zones/" + id.String()}},
				Intro:     "Every environment of this landing zone resolves with these, unless it overrides one. The name preview stands in tenant and env for an environment's own.",
				CanManage: actor.ProviderAdmin && lifecycle.ZoneStatus(z.Status) != lifecycle.ZoneRetired},
			configs: configs,
			pools:   func() ([]PoolChoice, error) { return h.svc.ZonePools(ctx, actor, id) },
			preview: func(p string) (string, error) { return h.svc.NextZoneName(ctx, actor, id, p) },
		}, nil
	}
	env, err := h.svc.environment(ctx, actor, id)
	if err != nil {
		return page{}, err
	}
	configs, err := h.svc.Configs(ctx, actor, id)
	if err != nil {
		return page{}, err
	}
	pg := page{
		view: ResolversView{Base: "/environments/" + id.String() + "/resolvers",
			Owner: env.TenantName + " / " + env.Name, OwnerURL: "/environments/" + id.String(),
			Crumbs:    []views.Crumb{{Label: "Environments", URL: "/environments"}, {Label: env.TenantName + " / " + env.Name, URL: "/environments/" + id.String()}},
			Intro:     "A component input bound to a resolver is filled when it is deployed here, if this environment or its landing zone configures that resolver; elsewhere it is an ordinary input.",
			CanManage: actor.Can(access.ResolverConfigManage, env.TenantID), Inherited: map[string]string{}},
		configs: configs,
		pools:   func() ([]PoolChoice, error) { return h.svc.EnvironmentPools(ctx, actor, id) },
		names:   id,
		preview: func(p string) (string, error) { return h.svc.NextName(ctx, actor, id, p) },
	}
	for _, cfg := range configs {
		if cfg.Inherited {
			pg.view.Inherited[cfg.Type] = env.LandingZoneName
		}
	}
	return pg, nil
}

// renderPage renders the resolver page; a form of typ that failed with err comes back with
// what was typed (form) and its problems.
func (h *Handlers) renderPage(c echo.Context, status int, typ string, form map[string]string, err error) error {
	pg, perr := h.pageOf(c)
	if perr != nil {
		return perr
	}
	v := pg.view
	v.Configured, v.Errors = map[string]bool{}, map[string]views.Errors{}
	for _, k := range NamingVariables {
		v.Variables = append(v.Variables, views.Option{Value: k.Name, Label: k.Meaning})
	}
	pools, perr := pg.pools()
	if perr != nil {
		return perr
	}
	for _, p := range pools {
		label := p.Name + " (" + p.Prefix + ")"
		if p.Shared {
			label += ", shared by the landing zone"
		}
		v.Pools = append(v.Pools, views.Option{Value: p.ID.String(), Label: label})
	}
	// What each form shows: the saved configuration, then, after a refused save, what was typed.
	values := map[string]string{"length": "24"}
	for _, cfg := range pg.configs {
		v.Configured[cfg.Type] = true
		var m map[string]any
		_ = json.Unmarshal(cfg.Config, &m)
		for _, f := range formFields[cfg.Type] {
			switch x := m[f.name].(type) {
			case string:
				values[f.name] = x
			case float64:
				values[f.name] = strconv.FormatFloat(x, 'f', -1, 64)
			}
		}
	}
	if form != nil {
		v.Errors[typ] = web.FormErrors(err)
		maps.Copy(values, form)
	}
	v.PoolID, v.Bits = values["pool_id"], values["subnet_bits"]
	v.Pattern, v.Domain = values["pattern"], values["domain"]
	v.OSFamily, v.OSVersion, v.Architecture = values["os_family"], values["os_version"], values["architecture"]
	v.SecretLength = values["length"]
	if v.Pattern != "" {
		v.NextName, _ = pg.preview(v.Pattern)
	}
	if pg.names != uuid.Nil {
		names, nerr := h.svc.IssuedNames(web.Ctx(c), web.Actor(c), pg.names)
		if nerr != nil {
			return nerr
		}
		for _, n := range names {
			row := IssuedNameRow{Name: n.Name, FQDN: n.FQDN, Deployment: n.Deployment, Created: n.Created}
			if n.DeploymentID != uuid.Nil {
				row.DeploymentID = n.DeploymentID.String()
			}
			v.Names = append(v.Names, row)
		}
	}
	return web.Render(c, status, Resolvers(web.Page(c, "Resolvers").Under(v.Crumbs...), v))
}

// formFields are the fields of each resolver's form and how each goes into its configuration.
var formFields = map[string][]struct {
	name    string
	integer bool
}{
	"ipam":               {{"pool_id", false}, {"subnet_bits", true}},
	"naming":             {{"pattern", false}, {"domain", false}},
	"image_catalog":      {{"os_family", false}, {"os_version", false}, {"architecture", false}},
	"secret_provisioner": {{"length", true}},
}

// formFieldNames are the errors a resolver's form shows beside its fields.
func formFieldNames(typ string) []string {
	var out []string
	for _, f := range formFields[typ] {
		out = append(out, "config."+f.name)
	}
	return out
}

// SetForm stores a resolver's configuration from its form.
func (h *Handlers) SetForm(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	typ := c.Param("type")
	fields, ok := formFields[typ]
	if !ok {
		return problem.ErrNotFound
	}
	config, typed := map[string]any{}, map[string]string{}
	for _, f := range fields {
		val := strings.TrimSpace(c.FormValue(f.name))
		typed[f.name] = val
		switch {
		case val == "":
		case f.integer:
			n, err := strconv.Atoi(val)
			if err != nil {
				return h.renderPage(c, http.StatusUnprocessableEntity, typ, typed, problem.Invalid("config."+f.name, "integer", "%q is not a whole number", val))
			}
			config[f.name] = n
		default:
			config[f.name] = val
		}
	}
	raw, _ := json.Marshal(config)
	set, back := h.svc.SetConfig, "/environments/"+id.String()+"/resolvers"
	if strings.HasPrefix(c.Path(), "/landing-zones/") {
		set, back = h.svc.SetZoneConfig, "/landing-zones/"+id.String()+"/resolvers"
	}
	if _, err := set(web.Ctx(c), web.Actor(c), id, typ, raw); err != nil {
		if web.FormErrors(err) != nil {
			return h.renderPage(c, http.StatusUnprocessableEntity, typ, typed, err)
		}
		return err
	}
	web.SetFlash(c, web.FlashSuccess, "The "+Label(typ)+" resolver is configured.")
	return web.Redirect(c, back)
}

// NextNameFragment answers the naming form's pattern field as it is typed with the name it
// would give next, or what is wrong with it.
func (h *Handlers) NextNameFragment(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	next := h.svc.NextName
	if strings.HasPrefix(c.Path(), "/landing-zones/") {
		next = h.svc.NextZoneName
	}
	name, err := next(web.Ctx(c), web.Actor(c), id, c.QueryParam("pattern"))
	if err != nil {
		errs := web.FormErrors(err)
		if len(errs) == 0 {
			return err
		}
		msgs := make([]string, 0, len(errs))
		for _, msg := range errs {
			msgs = append(msgs, msg)
		}
		slices.Sort(msgs)
		return c.String(http.StatusOK, "— "+strings.Join(msgs, "; "))
	}
	return c.String(http.StatusOK, name)
}

// ImagesPage shows the image catalog, and the form that adds to it to provider admins.
func (h *Handlers) ImagesPage(c echo.Context) error {
	return h.renderImages(c, http.StatusOK, Image{}, nil)
}

func (h *Handlers) renderImages(c echo.Context, status int, in Image, err error) error {
	ctx, actor := web.Ctx(c), web.Actor(c)
	images, ierr := h.svc.Images(ctx, actor)
	if ierr != nil {
		return ierr
	}
	rows := make([]ImageRow, len(images))
	for i, img := range images {
		rows[i] = ImageRow{ID: img.ID.String(), Provider: img.Provider, OSFamily: img.OSFamily, OSVersion: img.OSVersion,
			Architecture: img.Architecture, ImageID: img.ImageID, ImageName: img.ImageName}
	}
	var names []string
	if actor.ProviderAdmin {
		var perr error
		if names, perr = h.svc.ImageProviders(ctx, actor); perr != nil {
			return perr
		}
	}
	form := ImageRow{Provider: in.Provider, OSFamily: in.OSFamily, OSVersion: in.OSVersion, Architecture: in.Architecture,
		ImageID: in.ImageID, ImageName: in.ImageName}
	return web.Render(c, status, Images(web.Page(c, "Image catalog"), rows, actor.ProviderAdmin, names, form, web.FormErrors(err)))
}

// AddImageForm adds an image from the form.
func (h *Handlers) AddImageForm(c echo.Context) error {
	in := Image{Provider: c.FormValue("provider"), OSFamily: c.FormValue("os_family"), OSVersion: c.FormValue("os_version"),
		Architecture: c.FormValue("architecture"), ImageID: c.FormValue("image_id"), ImageName: c.FormValue("image_name")}
	img, err := h.svc.AddImage(web.Ctx(c), web.Actor(c), in)
	if web.FormErrors(err) != nil {
		return h.renderImages(c, http.StatusUnprocessableEntity, in, err)
	}
	if err != nil {
		return err
	}
	web.SetFlash(c, web.FlashSuccess, img.ImageName+" added to the catalog.")
	return web.Redirect(c, "/images")
}

// DeleteImageForm removes an image.
func (h *Handlers) DeleteImageForm(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	if err := h.svc.DeleteImage(web.Ctx(c), web.Actor(c), id); err != nil {
		return err
	}
	web.SetFlash(c, web.FlashSuccess, "Image removed from the catalog.")
	return web.Redirect(c, "/images")
}

// ImagesAPI answers GET /api/v1/images.
func (h *Handlers) ImagesAPI(c echo.Context) error {
	images, err := h.svc.Images(web.Ctx(c), web.Actor(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"images": images})
}

// AddImageAPI answers POST /api/v1/images with 201 and the entry.
func (h *Handlers) AddImageAPI(c echo.Context) error {
	var in Image
	if err := web.DecodeJSON(c, &in); err != nil {
		return err
	}
	img, err := h.svc.AddImage(web.Ctx(c), web.Actor(c), in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, img)
}

// DeleteImageAPI answers DELETE /api/v1/images/{id} with 204.
func (h *Handlers) DeleteImageAPI(c echo.Context) error {
	id, err := web.IDParam(c, "id")
	if err != nil {
		return err
	}
	if err := h.svc.DeleteImage(web.Ctx(c), web.Actor(c), id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
