package resolver

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/google/uuid"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/audit"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// Image is an entry of the image catalog.
type Image struct {
	ID           uuid.UUID `json:"id"`
	Provider     string    `json:"provider"`
	OSFamily     string    `json:"os_family"`
	OSVersion    string    `json:"os_version"`
	Architecture string    `json:"architecture"`
	ImageID      string    `json:"image_id"`
	ImageName    string    `json:"image_name"`
}

// Images lists the catalog; anyone signed in may read it, since it names no tenant.
func (s *Service) Images(ctx context.Context, _ access.Principal) ([]Image, error) {
	rows, err := db.Queries(s.pool).ListImages(ctx)
	if err != nil {
		return nil, fmt.Errorf("image catalog: %w", err)
	}
	out := make([]Image, len(rows))
	for i, r := range rows {
		out[i] = Image{ID: r.ID, Provider: r.Provider, OSFamily: r.OsFamily, OSVersion: r.OsVersion, Architecture: r.Architecture,
			ImageID: r.ImageID, ImageName: r.ImageName}
	}
	return out, nil
}

// AddImage adds an entry to the catalog. Provider admins keep it.
func (s *Service) AddImage(ctx context.Context, actor access.Principal, in Image) (Image, error) {
	if !actor.ProviderAdmin {
		return Image{}, problem.ErrForbidden
	}
	v := &problem.ValidationError{}
	for _, f := range []struct {
		field string
		value *string
	}{{"provider", &in.Provider}, {"os_family", &in.OSFamily}, {"os_version", &in.OSVersion}, {"image_id", &in.ImageID}} {
		*f.value = strings.TrimSpace(*f.value)
		if *f.value == "" || len(*f.value) > 200 {
			v.Add(f.field, "required", "must be 1–200 characters")
		}
	}
	in.Architecture = strings.TrimSpace(in.Architecture)
	if in.Architecture == "" {
		in.Architecture = "amd64"
	}
	if in.ImageName = strings.TrimSpace(in.ImageName); in.ImageName == "" {
		in.ImageName = in.ImageID
	}
	if err := v.Err(); err != nil {
		return Image{}, err
	}
	err := db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		if _, err := q.GetProviderByName(ctx, in.Provider); err != nil {
			return problem.Invalid("provider", "exists", "no provider named %q", in.Provider)
		}
		if err := fits(ctx, q, in); err != nil {
			return err
		}
		row, err := q.CreateImage(ctx, dbgen.CreateImageParams{Provider: in.Provider, OsFamily: in.OSFamily, OsVersion: in.OSVersion,
			Architecture: in.Architecture, ImageID: in.ImageID, ImageName: in.ImageName})
		if db.IsUniqueViolation(err) {
			return problem.Invalid("os_version", "unique", "the catalog has a %s %s %s image for %s already", in.OSFamily, in.OSVersion, in.Architecture, in.Provider)
		}
		if err != nil {
			return err
		}
		in.ID = row.ID
		return audit.Record(ctx, q, actor, audit.Event{Action: "image.create", TargetType: "image", TargetID: row.ID.String(),
			Diff: map[string]any{"provider": in.Provider, "os_family": in.OSFamily, "os_version": in.OSVersion, "architecture": in.Architecture, "image_id": in.ImageID}})
	})
	if err != nil {
		return Image{}, fmt.Errorf("add image: %w", err)
	}
	return in, nil
}

// DeleteImage removes an entry from the catalog. Provider admins keep it.
func (s *Service) DeleteImage(ctx context.Context, actor access.Principal, id uuid.UUID) error {
	if !actor.ProviderAdmin {
		return problem.ErrForbidden
	}
	return db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		n, err := q.DeleteImage(ctx, id)
		if err != nil {
			return err
		}
		if n == 0 {
			return problem.ErrNotFound
		}
		return audit.Record(ctx, q, actor, audit.Event{Action: "image.delete", TargetType: "image", TargetID: id.String()})
	})
}

// fits refuses an entry that no component of its provider taking its image from the catalog
// would accept: the catalog hands the reference to the component's input as it is, and one
// the input's pattern refuses fails every deploy that resolves it (a Proxmox container
// template, vztmpl, for a virtual machine that boots a cloud image of import content). A
// provider none of whose components takes an image from the catalog takes any reference.
func fits(ctx context.Context, q *dbgen.Queries, in Image) error {
	comps, err := q.CatalogImageComponents(ctx, in.Provider)
	if err != nil {
		return err
	}
	var wants []string
	for _, c := range comps {
		bindings, err := ParseBindings(c.ResolverBindings)
		if err != nil {
			return err
		}
		var schema struct {
			Properties map[string]struct {
				Pattern string `json:"pattern"`
				Default any    `json:"default"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(c.InputSchema, &schema); err != nil {
			return fmt.Errorf("the input schema of %s: %w", c.Name, err)
		}
		for _, b := range bindings {
			if b.Type != "image_catalog" || b.Output != "image_id" {
				continue
			}
			prop := schema.Properties[b.Input]
			re, err := regexp.Compile(prop.Pattern)
			if prop.Pattern == "" || err != nil || re.MatchString(in.ImageID) {
				return nil
			}
			want := fmt.Sprintf("%s's %s matches %s", c.Name, b.Input, prop.Pattern)
			if example, ok := prop.Default.(string); ok && example != "" {
				want += ", such as " + example
			}
			wants = append(wants, want)
		}
	}
	if len(wants) == 0 {
		return nil
	}
	return problem.Invalid("image_id", "pattern", "%s is not an image the %s components that take theirs from the catalog accept: %s",
		in.ImageID, in.Provider, strings.Join(wants, "; "))
}
