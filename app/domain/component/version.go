package component

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/domain/governance"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/audit"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// Version is an immutable snapshot of a component's draft, made by publishing.
type Version struct {
	Version int `json:"version"`
	// Release is the name the tag that published the version gave it (1.2.0 for v1.2.0);
	// empty for a version published in Nimbus.
	Release          string          `json:"release,omitempty"`
	Language         string          `json:"language"`
	Code             string          `json:"code,omitempty"`
	InputSchema      json.RawMessage `json:"input_schema,omitempty"`
	OutputSchema     json.RawMessage `json:"output_schema,omitempty"`
	ResolverBindings json.RawMessage `json:"resolver_bindings,omitempty"`
	Changelog        string          `json:"changelog"`
	PublishedBy      string          `json:"published_by"`
	PublishedAt      time.Time       `json:"published_at"`
	Archived         bool            `json:"archived"`
}

// Publish snapshots the draft as the next version. revision is the draft's revision the
// publisher reviewed: a draft changed since is refused, so that what is published is what was
// reviewed. The draft is validated again, under a row lock so two publishes cannot take the
// same number and no change slips in between.
func (s *Service) Publish(ctx context.Context, actor access.Principal, id uuid.UUID, revision int, changelog string) (Version, error) {
	var out Version
	err := db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		latest, err := q.LockComponent(ctx, id)
		if errors.Is(err, pgx.ErrNoRows) {
			return problem.ErrNotFound
		}
		if err != nil {
			return err
		}
		c, err := s.get(ctx, q, actor, id)
		if err != nil {
			return err
		}
		if !can(actor, access.ComponentDefinitionPublish, c.TenantID) {
			return problem.ErrForbidden
		}
		if err := reviewed(c.Revision, revision); err != nil {
			return err
		}
		if err := ValidateChangelog(changelog); err != nil {
			return err
		}
		d := Draft{Name: c.Name, DisplayName: c.DisplayName, Description: c.Description, Language: c.Language,
			Code: c.Code, InputSchema: c.InputSchema, OutputSchema: c.OutputSchema, ResolverBindings: c.ResolverBindings}
		if _, _, err := Validate(&d, s.engine.LanguageHosts(), scopeOf(c)); err != nil {
			return err
		}
		if err := s.enginePassed(ctx, q, c); err != nil {
			return err
		}
		v, err := q.InsertComponentVersion(ctx, dbgen.InsertComponentVersionParams{
			ComponentID: id, Version: latest + 1, Language: c.Language, Code: c.Code, InputSchema: c.InputSchema,
			OutputSchema: c.OutputSchema, ResolverBindings: c.ResolverBindings, Changelog: strings.TrimSpace(changelog),
			PublishedBy: uuid.NullUUID{UUID: actor.UserID, Valid: actor.UserID != uuid.Nil},
		})
		if err != nil {
			return err
		}
		if err := q.SetLatestVersion(ctx, dbgen.SetLatestVersionParams{ID: id, LatestVersion: v.Version}); err != nil {
			return err
		}
		out = Version{Version: int(v.Version), Language: v.Language, Code: v.Code, InputSchema: v.InputSchema,
			OutputSchema: v.OutputSchema, ResolverBindings: v.ResolverBindings, Changelog: v.Changelog,
			PublishedBy: actor.Email, PublishedAt: v.PublishedAt}
		if err := tellPublished(ctx, q, c, v); err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{
			Tenant: tenantOf(c), Action: "component.publish", TargetType: "component", TargetID: id.String(),
			Diff: map[string]any{"name": c.Name, "version": v.Version, "changelog": v.Changelog},
		})
	})
	if err != nil {
		return Version{}, fmt.Errorf("publish component: %w", err)
	}
	return out, nil
}

// reviewed refuses a publish of a draft other than the one reviewed: at revision, which must
// be given.
func reviewed(draft, revision int) error {
	switch {
	case revision < 1:
		return problem.Invalid("revision", "required", "give the revision of the draft you reviewed (the draft is at revision %d)", draft)
	case revision != draft:
		return problem.Invalid("revision", "current",
			"the draft is at revision %d; you reviewed revision %d: review the changes and publish again", draft, revision)
	}
	return nil
}

// packages names the Pulumi packages of providers whose package is not named as they are.
var packages = map[string]string{"proxmox": "proxmoxve"}

// PackageOf names the Pulumi package, and so the resource provider plugin, behind a Nimbus
// provider.
func PackageOf(provider string) string {
	if p, ok := packages[provider]; ok {
		return p
	}
	return provider
}

// scopeOf is what a component's program may reach.
func scopeOf(c Component) Scope {
	return Scope{ProviderLevel: c.ProviderLevel(), Package: PackageOf(c.Provider)}
}

// enginePassed refuses to publish a draft the engine could check here but has not passed
// (see checkGate).
func (s *Service) enginePassed(ctx context.Context, q *dbgen.Queries, c Component) error {
	rule, why, err := s.checkGate(ctx, q, c)
	if err != nil || rule == "" {
		return err
	}
	return problem.Invalid("check", rule, "%s", why)
}

// checkGate says what the engine's checks leave between the draft and its publishing: the
// latest check must be of exactly this program and input schema, and must have succeeded. It
// returns the rule broken and why, or "" when nothing stands in the way. Providers whose plugin
// is not installed are validated statically only.
func (s *Service) checkGate(ctx context.Context, q *dbgen.Queries, c Component) (rule, why string, err error) {
	if !s.engine.HasProvider(PackageOf(c.Provider)) {
		return "", "", nil
	}
	chk, err := q.LatestCheck(ctx, c.ID)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && (chk.Code != c.Code || string(chk.InputSchema) != string(c.InputSchema)) {
		return "required", "Check the saved draft with the engine first: only a draft the engine has passed is published.", nil
	}
	if err != nil {
		return "", "", err
	}
	switch CheckStatus(chk.Status) {
	case CheckSucceeded:
		return "", "", nil
	case CheckFailed:
		return "passed", "The engine's check of this draft failed: fix the draft and check it again.", nil
	}
	return "pending", "The engine is still checking this draft: publish once the check has passed.", nil
}

// PublishGate says why the draft of c, a component the caller has read on behalf of someone
// who may publish it, cannot be published yet as the engine's checks of it go, or "" when they
// do not stand in the way.
func (s *Service) PublishGate(ctx context.Context, c Component) (string, error) {
	_, why, err := s.checkGate(ctx, db.Queries(s.pool), c)
	if err != nil {
		return "", fmt.Errorf("publish gate: %w", err)
	}
	return why, nil
}

// Versions lists a component's versions, newest first, without their code.
func (s *Service) Versions(ctx context.Context, actor access.Principal, id uuid.UUID) ([]Version, error) {
	if _, err := s.Get(ctx, actor, id); err != nil {
		return nil, err
	}
	rows, err := db.Queries(s.pool).ListComponentVersions(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("list versions: %w", err)
	}
	out := make([]Version, len(rows))
	for i, r := range rows {
		out[i] = Version{Version: int(r.Version), Release: r.Release, Language: r.Language, Changelog: r.Changelog,
			PublishedBy: deref(r.PublishedByEmail), PublishedAt: r.PublishedAt, Archived: r.ArchivedAt != nil}
	}
	return out, nil
}

// Version returns one version with its code and schemas.
func (s *Service) Version(ctx context.Context, actor access.Principal, id uuid.UUID, n int) (Version, error) {
	if _, err := s.Get(ctx, actor, id); err != nil {
		return Version{}, err
	}
	r, err := db.Queries(s.pool).GetComponentVersion(ctx, dbgen.GetComponentVersionParams{ComponentID: id, Version: int32(n)})
	if errors.Is(err, pgx.ErrNoRows) {
		return Version{}, problem.ErrNotFound
	}
	if err != nil {
		return Version{}, fmt.Errorf("get version: %w", err)
	}
	return Version{Version: int(r.Version), Release: r.Release, Language: r.Language, Code: r.Code, InputSchema: r.InputSchema,
		OutputSchema: r.OutputSchema, ResolverBindings: r.ResolverBindings, Changelog: r.Changelog,
		PublishedBy: deref(r.PublishedByEmail), PublishedAt: r.PublishedAt, Archived: r.ArchivedAt != nil}, nil
}

// ArchiveVersion withdraws a version from new deployments; refused while a deployment uses it.
func (s *Service) ArchiveVersion(ctx context.Context, actor access.Principal, id uuid.UUID, n int) error {
	return db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		c, err := s.get(ctx, q, actor, id)
		if err != nil {
			return err
		}
		if !can(actor, access.ComponentDefinitionPublish, c.TenantID) {
			return problem.ErrForbidden
		}
		inUse, err := q.VersionInUse(ctx, dbgen.VersionInUseParams{ComponentID: id, Version: int32(n)})
		if err != nil {
			return fmt.Errorf("archive version: %w", err)
		}
		if inUse {
			return problem.Invalid("version", "in_use", "v%d is deployed; destroy or upgrade those deployments before archiving it", n)
		}
		// A stack's published version deploys it again whenever an instance is made.
		pinned, err := q.StacksPinningVersion(ctx, dbgen.StacksPinningVersionParams{ComponentID: id.String(), Version: int32(n)})
		if err != nil {
			return fmt.Errorf("archive version: %w", err)
		}
		if len(pinned) > 0 {
			return problem.Invalid("version", "in_use", "v%d is a slot of stacks %s; archive those stack versions first", n, strings.Join(pinned, ", "))
		}
		n64, err := q.ArchiveComponentVersion(ctx, dbgen.ArchiveComponentVersionParams{ComponentID: id, Version: int32(n)})
		if err != nil {
			return fmt.Errorf("archive version: %w", err)
		}
		if n64 == 0 {
			return problem.ErrNotFound
		}
		return audit.Record(ctx, q, actor, audit.Event{
			Tenant: tenantOf(c), Action: "component.archive_version", TargetType: "component", TargetID: id.String(),
			Diff: map[string]any{"name": c.Name, "version": n},
		})
	})
}

// Filter narrows the catalog; empty fields do not filter.
type Filter struct {
	Search        string
	Provider      string
	SemanticType  string
	Scope         string // "provider", "tenant" or ""
	PublishedOnly bool
	Page          int // from 1
	PerPage       int
}

// Summary is a component as the catalog lists it.
type Summary struct {
	ID            uuid.UUID `json:"id"`
	Name          string    `json:"name"`
	DisplayName   string    `json:"display_name"`
	Description   string    `json:"description"`
	Provider      string    `json:"provider"`
	SemanticType  string    `json:"semantic_type"`
	Language      string    `json:"language"`
	LatestVersion int       `json:"latest_version"`
	TenantName    string    `json:"tenant_name,omitempty"`
	Deployments   int       `json:"deployments"` // live deployments of any version in the viewer's tenants
	System        bool      `json:"system"`
	// Denied is set for admins when governance denies the component to the viewer's tenants.
	Denied    bool      `json:"denied,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Catalog is one page of the catalog and how many match in all.
type Catalog struct {
	Components []Summary `json:"components"`
	Total      int       `json:"total"`
	Page       int       `json:"page"`
	PerPage    int       `json:"per_page"`
}

// List returns the components the actor may see that match f.
func (s *Service) List(ctx context.Context, actor access.Principal, f Filter) (Catalog, error) {
	if !actor.CanSomewhere(access.ComponentDefinitionRead) {
		return Catalog{}, problem.ErrForbidden
	}
	v := &problem.ValidationError{}
	if f.Scope != "" && f.Scope != "provider" && f.Scope != "tenant" {
		v.Add("scope", "one_of", "must be provider or tenant")
	}
	if f.Page < 1 {
		f.Page = 1
	}
	if f.Page > 10000 {
		v.Add("page", "max", "must be at most 10000; narrow the search instead")
	}
	if f.PerPage < 1 || f.PerPage > 100 {
		f.PerPage = 24
	}
	if err := v.Err(); err != nil {
		return Catalog{}, err
	}
	tenants := append([]uuid.UUID{}, actor.TenantsWith(access.ComponentDefinitionRead)...)
	editable := append([]uuid.UUID{}, actor.TenantsWith(access.ComponentDefinitionUpdate)...)
	q := db.Queries(s.pool)
	denied, err := governance.Denied(ctx, q, tenants)
	if err != nil {
		return Catalog{}, fmt.Errorf("governance: %w", err)
	}
	// Admins see what is denied, marked, so they can allow it again; users do not.
	seeDenied := actor.ProviderAdmin || len(editable) > 0
	hidden := []uuid.UUID{}
	if !seeDenied {
		for id, d := range denied {
			if d {
				hidden = append(hidden, id)
			}
		}
	}
	// Tenants are offered the components of the providers their environments deploy to.
	served := dbgen.ProvidersOfTenantsRow{AnyProvider: true, Providers: []string{}}
	if !actor.ProviderAdmin {
		if served, err = q.ProvidersOfTenants(ctx, tenants); err != nil {
			return Catalog{}, fmt.Errorf("providers: %w", err)
		}
	}
	anyProvider := served.AnyProvider || len(served.Providers) == 0 // no environment yet: nothing to go by
	filter := dbgen.CountComponentsParams{
		AllTenants: actor.ProviderAdmin, TenantIds: tenants, EditableTenantIds: editable, HiddenIds: hidden,
		AllProviders: anyProvider, Providers: served.Providers, Search: optional(f.Search), Provider: optional(f.Provider),
		SemanticType: optional(f.SemanticType), Scope: optional(f.Scope), PublishedOnly: f.PublishedOnly,
	}
	total, err := q.CountComponents(ctx, filter)
	if err != nil {
		return Catalog{}, fmt.Errorf("count components: %w", err)
	}
	out := Catalog{Components: []Summary{}, Total: int(total), Page: f.Page, PerPage: f.PerPage}
	if total <= int64((f.Page-1)*f.PerPage) {
		return out, nil
	}
	rows, err := q.ListComponents(ctx, dbgen.ListComponentsParams{
		AllTenants: filter.AllTenants, TenantIds: filter.TenantIds, EditableTenantIds: filter.EditableTenantIds, HiddenIds: filter.HiddenIds,
		AllProviders: filter.AllProviders, Providers: filter.Providers, Search: filter.Search, Provider: filter.Provider,
		SemanticType: filter.SemanticType, Scope: filter.Scope, PublishedOnly: filter.PublishedOnly,
		// Deployments are counted where the viewer may list them.
		DeploymentTenantIds: append([]uuid.UUID{}, actor.TenantsWith(access.EnvironmentRead)...),
		MaxRows:             int32(f.PerPage), Skip: int32((f.Page - 1) * f.PerPage),
	})
	if err != nil {
		return Catalog{}, fmt.Errorf("list components: %w", err)
	}
	out.Components = make([]Summary, len(rows))
	for i, r := range rows {
		out.Components[i] = Summary{ID: r.ID, Name: r.Name, DisplayName: r.DisplayName, Description: r.Description,
			Provider: r.Provider, SemanticType: r.SemanticType, Language: r.Language, LatestVersion: int(r.LatestVersion),
			TenantName: deref(r.TenantName), Deployments: int(r.Deployments), System: r.IsSystem, UpdatedAt: r.UpdatedAt,
			Denied: denied[r.ID]}
	}
	return out, nil
}

func optional(s string) *string {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	return &s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
