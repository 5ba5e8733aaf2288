// Package component manages components: versioned Pulumi programs with a typed contract, each
// bound to one provider and one semantic type, owned by the provider (visible to every tenant)
// or by one tenant.
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
	"github.com/jackc/pgx/v5/pgxpool"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/app/kernel/secrets"
	"nimbus/app/platform/audit"
	"nimbus/app/platform/gitremote"
	"nimbus/db"
	"nimbus/db/dbgen"
	"nimbus/jobs"
)

// Component is a component with its editable draft.
type Component struct {
	ID               uuid.UUID       `json:"id"`
	TenantID         *uuid.UUID      `json:"tenant_id"`
	TenantName       string          `json:"tenant_name,omitempty"`
	Provider         string          `json:"provider"`
	SemanticType     string          `json:"semantic_type"`
	Name             string          `json:"name"`
	DisplayName      string          `json:"display_name"`
	Description      string          `json:"description"`
	Language         string          `json:"language"`
	Code             string          `json:"code"`
	InputSchema      json.RawMessage `json:"input_schema"`
	OutputSchema     json.RawMessage `json:"output_schema"`
	ResolverBindings json.RawMessage `json:"resolver_bindings"`
	LatestVersion    int             `json:"latest_version"`
	// Revision counts the changes to the draft; a publish names the revision it reviewed. Only
	// those who may edit the draft see it.
	Revision  int       `json:"revision,omitempty"`
	System    bool      `json:"system"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// ProviderLevel reports whether every tenant sees the component.
func (c Component) ProviderLevel() bool { return c.TenantID == nil }

func fromRow(r dbgen.GetComponentRow) Component {
	c := Component{
		ID: r.ID, Provider: r.Provider, SemanticType: r.SemanticType, Name: r.Name, DisplayName: r.DisplayName,
		Description: r.Description, Language: r.Language, Code: r.Code, InputSchema: r.InputSchema,
		OutputSchema: r.OutputSchema, ResolverBindings: r.ResolverBindings, LatestVersion: int(r.LatestVersion),
		Revision: int(r.Revision), System: r.IsSystem, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
	if r.TenantID.Valid {
		id := r.TenantID.UUID
		c.TenantID = &id
	}
	if r.TenantName != nil {
		c.TenantName = *r.TenantName
	}
	return c
}

// New is what it takes to create a component: its draft, where it belongs, and what it is.
type New struct {
	Draft
	TenantID     *uuid.UUID `json:"tenant_id"`
	Provider     string     `json:"provider"`
	SemanticType string     `json:"semantic_type"`
	System       bool       `json:"-"`
	SystemOnly   bool       `json:"-"` // deployed by Nimbus alone: see builtinEntry
}

// Patch changes parts of a draft; nil fields stay as they are.
type Patch struct {
	DisplayName      *string          `json:"display_name"`
	Description      *string          `json:"description"`
	Language         *string          `json:"language"`
	Code             *string          `json:"code"`
	InputSchema      *json.RawMessage `json:"input_schema"`
	OutputSchema     *json.RawMessage `json:"output_schema"`
	ResolverBindings *json.RawMessage `json:"resolver_bindings"`
}

// Engine is what the Pulumi toolchain on this server can run.
type Engine interface {
	// LanguageHosts reports, per language, whether its host is installed.
	LanguageHosts() map[string]bool
	// HasProvider reports whether the resource provider plugin is installed, so that programs
	// using it can be checked here.
	HasProvider(plugin string) bool
}

// Service reads and changes components on behalf of a principal.
type Service struct {
	pool   *pgxpool.Pool
	engine Engine
	jobs   jobs.Queue
	// checksPerMinute is how many checks one tenant may ask for in a minute.
	checksPerMinute int
	// keys and git link components to repositories (see Linking).
	keys *secrets.Keyring
	git  gitremote.Fetcher
}

// NewService returns a Service; engine says what can run here, and queue queues checks. A
// tenant may ask for DefaultChecksPerMinute checks a minute unless LimitCheckRequests says
// otherwise.
func NewService(pool *pgxpool.Pool, engine Engine, queue jobs.Queue) *Service {
	return &Service{pool: pool, engine: engine, jobs: queue, checksPerMinute: DefaultChecksPerMinute}
}

func canRead(actor access.Principal, tenant *uuid.UUID) bool {
	if tenant == nil {
		return actor.CanSomewhere(access.ComponentDefinitionRead)
	}
	return actor.Can(access.ComponentDefinitionRead, *tenant)
}

func can(actor access.Principal, perm access.Permission, tenant *uuid.UUID) bool {
	if tenant == nil {
		return actor.ProviderAdmin
	}
	return actor.Can(perm, *tenant)
}

// Get returns a component the actor may see; any other is not found.
func (s *Service) Get(ctx context.Context, actor access.Principal, id uuid.UUID) (Component, error) {
	return s.get(ctx, db.Queries(s.pool), actor, id)
}

func (s *Service) get(ctx context.Context, q *dbgen.Queries, actor access.Principal, id uuid.UUID) (Component, error) {
	row, err := q.GetComponent(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return Component{}, problem.ErrNotFound
	}
	if err != nil {
		return Component{}, fmt.Errorf("get component: %w", err)
	}
	c := fromRow(row)
	if !canRead(actor, c.TenantID) {
		return Component{}, problem.ErrNotFound
	}
	if can(actor, access.ComponentDefinitionUpdate, c.TenantID) {
		return c, nil
	}
	// Those who may not edit a component see what was published, never the draft.
	if c.LatestVersion == 0 {
		return Component{}, problem.ErrNotFound
	}
	v, err := q.GetComponentVersion(ctx, dbgen.GetComponentVersionParams{ComponentID: id, Version: int32(c.LatestVersion)})
	if err != nil {
		return Component{}, fmt.Errorf("get component: %w", err)
	}
	c.Language, c.Code, c.InputSchema, c.OutputSchema, c.ResolverBindings = v.Language, v.Code, v.InputSchema, v.OutputSchema, v.ResolverBindings
	c.Revision = 0
	return c, nil
}

// Create adds a component with its first draft. Provider-level components are for provider
// admins; tenant admins create them in their tenant.
func (s *Service) Create(ctx context.Context, actor access.Principal, in New) (Component, error) {
	if in.TenantID != nil && !actor.Member(*in.TenantID) {
		return Component{}, problem.Invalid("tenant_id", "exists", "no tenant with this ID that you can see")
	}
	if !can(actor, access.ComponentDefinitionCreate, in.TenantID) {
		return Component{}, problem.ErrForbidden
	}
	in.Name = strings.TrimSpace(in.Name)
	if len(in.ResolverBindings) == 0 {
		in.ResolverBindings = json.RawMessage(`{}`)
	}
	v := &problem.ValidationError{}
	q := db.Queries(s.pool)
	if in.TenantID != nil {
		// Provider admins are members everywhere; the tenant must still exist. Checked again,
		// and held, where the component is recorded.
		if _, err := q.GetTenant(ctx, *in.TenantID); errors.Is(err, pgx.ErrNoRows) {
			return Component{}, problem.Invalid("tenant_id", "exists", "no tenant with this ID that you can see")
		} else if err != nil {
			return Component{}, err
		}
	}
	provider, err := q.GetProviderByName(ctx, in.Provider)
	if errors.Is(err, pgx.ErrNoRows) {
		v.Add("provider", "exists", "no provider named %q; see the providers page", in.Provider)
	} else if err != nil {
		return Component{}, err
	}
	semType, err := q.GetSemanticTypeByName(ctx, in.SemanticType)
	if errors.Is(err, pgx.ErrNoRows) {
		v.Add("semantic_type", "exists", "no semantic type named %q; see the providers page", in.SemanticType)
	} else if err != nil {
		return Component{}, err
	}
	if _, _, err := Validate(&in.Draft, s.engine.LanguageHosts(), Scope{ProviderLevel: in.TenantID == nil, Package: PackageOf(in.Provider)}); err != nil {
		var ve *problem.ValidationError
		if !errors.As(err, &ve) {
			return Component{}, err
		}
		v.Fields = append(v.Fields, ve.Fields...)
	}
	if err := v.Err(); err != nil {
		return Component{}, err
	}
	tenant := uuid.NullUUID{}
	if in.TenantID != nil {
		tenant = uuid.NullUUID{UUID: *in.TenantID, Valid: true}
	}
	var id uuid.UUID
	err = db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		if tenant.Valid {
			if _, err := q.ShareTenant(ctx, tenant.UUID); errors.Is(err, pgx.ErrNoRows) {
				return problem.Invalid("tenant_id", "exists", "no tenant with this ID that you can see")
			} else if err != nil {
				return err
			}
		}
		taken, err := q.ComponentNameTaken(ctx, dbgen.ComponentNameTakenParams{ProviderID: provider.ID, Name: in.Name, TenantID: tenant})
		if err != nil {
			return err
		}
		if taken {
			return problem.Invalid("name", "unique", "a %s component named %q already exists here", in.Provider, in.Name)
		}
		id, err = q.CreateComponent(ctx, dbgen.CreateComponentParams{
			TenantID: tenant, ProviderID: provider.ID, SemanticTypeID: semType.ID, Name: in.Name,
			DisplayName: in.DisplayName, Description: in.Description, Language: in.Language, Code: in.Code,
			InputSchema: in.InputSchema, OutputSchema: in.OutputSchema, ResolverBindings: in.ResolverBindings,
			IsSystem: in.System, CreatedBy: uuid.NullUUID{UUID: actor.UserID, Valid: actor.UserID != uuid.Nil},
		})
		if db.IsUniqueViolation(err) {
			return problem.Invalid("name", "unique", "a %s component named %q already exists here", in.Provider, in.Name)
		}
		if err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{
			Tenant: tenant.UUID, Action: "component.create", TargetType: "component", TargetID: id.String(),
			Diff: map[string]any{"name": in.Name, "provider": in.Provider, "semantic_type": in.SemanticType, "language": in.Language},
		})
	})
	if err != nil {
		return Component{}, fmt.Errorf("create component: %w", err)
	}
	return s.Get(ctx, actor, id)
}

// Update changes the draft. The whole draft must still be valid.
func (s *Service) Update(ctx context.Context, actor access.Principal, id uuid.UUID, p Patch) (Component, error) {
	err := db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		if _, err := q.LockComponent(ctx, id); errors.Is(err, pgx.ErrNoRows) {
			return problem.ErrNotFound
		} else if err != nil {
			return err
		}
		c, err := s.get(ctx, q, actor, id)
		if err != nil {
			return err
		}
		if !can(actor, access.ComponentDefinitionUpdate, c.TenantID) {
			return problem.ErrForbidden
		}
		if p.Code != nil && *p.Code != c.Code {
			if err := notLinked(ctx, q, id); err != nil {
				return err
			}
		}
		d := Draft{Name: c.Name, DisplayName: c.DisplayName, Description: c.Description, Language: c.Language,
			Code: c.Code, InputSchema: c.InputSchema, OutputSchema: c.OutputSchema, ResolverBindings: c.ResolverBindings}
		var changed []string
		set := func(name string, dst *string, src *string) {
			if src != nil && *src != *dst {
				*dst, changed = *src, append(changed, name)
			}
		}
		setJSON := func(name string, dst *json.RawMessage, src *json.RawMessage) {
			if src != nil && string(*src) != string(*dst) {
				*dst, changed = *src, append(changed, name)
			}
		}
		set("display_name", &d.DisplayName, p.DisplayName)
		set("description", &d.Description, p.Description)
		set("language", &d.Language, p.Language)
		set("code", &d.Code, p.Code)
		setJSON("input_schema", &d.InputSchema, p.InputSchema)
		setJSON("output_schema", &d.OutputSchema, p.OutputSchema)
		setJSON("resolver_bindings", &d.ResolverBindings, p.ResolverBindings)
		if len(changed) == 0 {
			return nil
		}
		if _, _, err := Validate(&d, s.engine.LanguageHosts(), scopeOf(c)); err != nil {
			return err
		}
		err = q.UpdateComponentDraft(ctx, dbgen.UpdateComponentDraftParams{
			ID: id, DisplayName: d.DisplayName, Description: d.Description, Language: d.Language, Code: d.Code,
			InputSchema: d.InputSchema, OutputSchema: d.OutputSchema, ResolverBindings: d.ResolverBindings,
		})
		if err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{
			Tenant: tenantOf(c), Action: "component.update", TargetType: "component", TargetID: id.String(),
			Diff: map[string]any{"name": c.Name, "changed": changed},
		})
	})
	if err != nil {
		return Component{}, fmt.Errorf("update component: %w", err)
	}
	return s.Get(ctx, actor, id)
}

// Delete removes a component from view; its versions stay for the deployments that pin them.
func (s *Service) Delete(ctx context.Context, actor access.Principal, id uuid.UUID) error {
	return db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		c, err := s.get(ctx, q, actor, id)
		if err != nil {
			return err
		}
		if !can(actor, access.ComponentDefinitionDelete, c.TenantID) {
			return problem.ErrForbidden
		}
		if err := q.SoftDeleteComponent(ctx, id); err != nil {
			return fmt.Errorf("delete component: %w", err)
		}
		return audit.Record(ctx, q, actor, audit.Event{
			Tenant: tenantOf(c), Action: "component.delete", TargetType: "component", TargetID: id.String(), Diff: map[string]any{"name": c.Name},
		})
	})
}

func tenantOf(c Component) uuid.UUID {
	if c.TenantID == nil {
		return uuid.Nil
	}
	return *c.TenantID
}

// Semantics is the semantic layer: providers, semantic types, and how providers realise them.
type Semantics struct {
	Providers     []string
	SemanticTypes []string
	ResourceTypes []ResourceType
}

// ResourceType is how a provider realises a semantic type: the provider's resource type.
type ResourceType struct {
	ID           uuid.UUID `json:"id"`
	PulumiType   string    `json:"pulumi_type"`
	Description  string    `json:"description"`
	Provider     string    `json:"provider"`
	SemanticType string    `json:"semantic_type"`
}

// Semantics returns the semantic layer to anyone who may read components.
func (s *Service) Semantics(ctx context.Context, actor access.Principal) (Semantics, error) {
	if !actor.CanSomewhere(access.ComponentDefinitionRead) {
		return Semantics{}, problem.ErrForbidden
	}
	q := db.Queries(s.pool)
	providers, err := q.ListProviders(ctx)
	if err != nil {
		return Semantics{}, fmt.Errorf("list providers: %w", err)
	}
	types, err := q.ListSemanticTypes(ctx)
	if err != nil {
		return Semantics{}, fmt.Errorf("list semantic types: %w", err)
	}
	rts, err := q.ListProviderResourceTypes(ctx)
	if err != nil {
		return Semantics{}, fmt.Errorf("list provider resource types: %w", err)
	}
	out := Semantics{ResourceTypes: make([]ResourceType, len(rts))}
	for i, r := range rts {
		out.ResourceTypes[i] = ResourceType(r)
	}
	for _, p := range providers {
		out.Providers = append(out.Providers, p.Name)
	}
	for _, t := range types {
		out.SemanticTypes = append(out.SemanticTypes, t.Name)
	}
	return out, nil
}

// Owner is a tenant a component can be created in.
type Owner struct {
	ID   uuid.UUID
	Name string
}

// Owners lists the tenants in which the actor may create components.
func (s *Service) Owners(ctx context.Context, actor access.Principal) ([]Owner, error) {
	rows, err := db.Queries(s.pool).ListTenants(ctx, dbgen.ListTenantsParams{AllTenants: actor.ProviderAdmin, TenantIds: actor.TenantsWithRole(access.ReadOnly)})
	if err != nil {
		return nil, fmt.Errorf("list owners: %w", err)
	}
	var out []Owner
	for _, r := range rows {
		if actor.Can(access.ComponentDefinitionCreate, r.ID) {
			out = append(out, Owner{ID: r.ID, Name: r.Name})
		}
	}
	return out, nil
}
