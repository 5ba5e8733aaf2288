package stack

import (
	"bytes"
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
	"nimbus/app/platform/audit"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// Stack is a stack definition with its draft and, for a fork, where it came from.
type Stack struct {
	ID            uuid.UUID  `json:"id"`
	TenantID      *uuid.UUID `json:"tenant_id"`
	TenantName    string     `json:"tenant_name,omitempty"`
	Provider      string     `json:"provider"`
	Name          string     `json:"name"`
	DisplayName   string     `json:"display_name"`
	Description   string     `json:"description"`
	LatestVersion int        `json:"latest_version"`
	// Draft is what the editor changes; only those who may edit the stack see it.
	Draft *Definition `json:"draft,omitempty"`
	// Problems are what keeps the draft from being published, for the editor to show.
	Problems   []problem.FieldError `json:"problems,omitempty"`
	ForkedFrom *Parent              `json:"forked_from,omitempty"`
	Versions   []Version            `json:"versions,omitempty"`
	CreatedAt  time.Time            `json:"created_at"`
	UpdatedAt  time.Time            `json:"updated_at"`

	providerID uuid.UUID
}

// Parent is the provider stack a fork was copied from, and whether it has moved on since.
type Parent struct {
	ID            uuid.UUID `json:"id"`
	Name          string    `json:"name"`
	Version       int       `json:"version"`
	LatestVersion int       `json:"latest_version"`
	Newer         bool      `json:"newer"`
}

// ProviderLevel reports whether the stack is the provider's, offered to every tenant.
func (s Stack) ProviderLevel() bool { return s.TenantID == nil }

func (s Stack) owner() Owner { return Owner{TenantID: s.TenantID, ProviderID: s.providerID} }

func (s Stack) tenant() uuid.UUID {
	if s.TenantID == nil {
		return uuid.Nil
	}
	return *s.TenantID
}

// New is what it takes to create a stack: where it belongs, what it is, and its first draft.
type New struct {
	TenantID    *uuid.UUID      `json:"tenant_id"`
	Provider    string          `json:"provider"`
	Name        string          `json:"name"`
	DisplayName string          `json:"display_name"`
	Description string          `json:"description"`
	Draft       json.RawMessage `json:"draft"`
}

// Draft is an edit of a stack: what it is called and its whole draft definition.
type Draft struct {
	DisplayName string          `json:"display_name"`
	Description string          `json:"description"`
	Draft       json.RawMessage `json:"draft"`
}

// Service reads and changes stack definitions on behalf of a principal.
type Service struct{ pool *pgxpool.Pool }

// NewService returns a Service.
func NewService(pool *pgxpool.Pool) *Service { return &Service{pool: pool} }

func canRead(actor access.Principal, tenant *uuid.UUID) bool {
	if tenant == nil {
		return actor.CanSomewhere(access.StackDefinitionRead)
	}
	return actor.Can(access.StackDefinitionRead, *tenant)
}

// can reports whether actor may do perm to a stack of tenant; a provider stack is its
// provider admins' alone.
func can(actor access.Principal, perm access.Permission, tenant *uuid.UUID) bool {
	if tenant == nil {
		return actor.ProviderAdmin
	}
	return actor.Can(perm, *tenant)
}

// parseDraft reads a draft's JSON strictly: a field that is not part of a definition, or of
// the wrong kind, is refused under "draft".
func parseDraft(raw json.RawMessage) (Definition, error) {
	var def Definition
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return Definition{Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&def); err != nil {
		return def, problem.Invalid("draft", "shape", "the draft is not a stack definition: %s", draftWords(err))
	}
	if len(def.Parameters) == 0 {
		def.Parameters = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return def, nil
}

// draftWords says what is wrong with a draft's JSON without Go's type names.
func draftWords(err error) string {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		return fmt.Sprintf("%s must be %s, not %s", typeErr.Field, jsonKind(typeErr.Type.Kind().String()), typeErr.Value)
	}
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) {
		return fmt.Sprintf("it is not valid JSON (at byte %d)", syntax.Offset)
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

func jsonKind(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "int", "int32", "int64", "float64":
		return "a number"
	case "bool":
		return "true or false"
	case "slice":
		return "a list"
	case "struct", "map":
		return "an object"
	case "array": // a component's ID
		return "an ID"
	}
	return kind
}

// Get returns a stack the actor may see, with its versions; any other is not found. Those who
// may not edit it see it once published, without its draft.
func (s *Service) Get(ctx context.Context, actor access.Principal, id uuid.UUID) (Stack, error) {
	q := db.Queries(s.pool)
	st, err := s.get(ctx, q, actor, id)
	if err != nil {
		return Stack{}, err
	}
	if st.Versions, err = versions(ctx, q, id); err != nil {
		return Stack{}, err
	}
	if st.Draft != nil {
		if st.Problems, err = Check(ctx, q, *st.Draft, st.owner()); err != nil {
			return Stack{}, err
		}
	}
	return st, nil
}

func (s *Service) get(ctx context.Context, q *dbgen.Queries, actor access.Principal, id uuid.UUID) (Stack, error) {
	r, err := q.GetStack(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return Stack{}, problem.ErrNotFound
	}
	if err != nil {
		return Stack{}, fmt.Errorf("get stack %s: %w", id, err)
	}
	st := Stack{
		ID: r.ID, Provider: r.Provider, Name: r.Name, DisplayName: r.DisplayName, Description: r.Description,
		LatestVersion: int(r.LatestVersion), CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, providerID: r.ProviderID,
	}
	if r.TenantID.Valid {
		t := r.TenantID.UUID
		st.TenantID = &t
	}
	if r.TenantName != nil {
		st.TenantName = *r.TenantName
	}
	if !canRead(actor, st.TenantID) {
		return Stack{}, problem.ErrNotFound
	}
	if can(actor, access.StackDefinitionUpdate, st.TenantID) {
		var def Definition
		if err := json.Unmarshal(r.Draft, &def); err != nil {
			return Stack{}, fmt.Errorf("draft of stack %s: %w", id, err)
		}
		st.Draft = &def
	} else if st.LatestVersion == 0 {
		return Stack{}, problem.ErrNotFound
	}
	if r.ForkedFromID.Valid {
		st.ForkedFrom = &Parent{ID: r.ForkedFromID.UUID, Version: int(r.ForkedFromVersion.Int32), LatestVersion: int(r.ParentLatestVersion)}
		if r.ParentName != nil {
			st.ForkedFrom.Name = *r.ParentName
		}
		st.ForkedFrom.Newer = st.ForkedFrom.LatestVersion > st.ForkedFrom.Version
	}
	return st, nil
}

// Create adds a stack with its first draft, which is kept even with problems (they are
// returned with it). Provider stacks are for provider admins; tenant admins create their
// tenant's own.
func (s *Service) Create(ctx context.Context, actor access.Principal, in New) (Stack, error) {
	if in.TenantID != nil && !actor.Member(*in.TenantID) {
		return Stack{}, problem.Invalid("tenant_id", "exists", "no tenant with this ID that you can see")
	}
	perm := access.StackDefinitionCreate
	if in.TenantID == nil {
		perm = access.StackDefinitionPublish
	}
	if !can(actor, perm, in.TenantID) {
		return Stack{}, problem.ErrForbidden
	}
	in.Name = strings.TrimSpace(in.Name)
	v := &problem.ValidationError{}
	if !stackName.MatchString(in.Name) {
		v.Add("name", "pattern", "a stack's name starts with a lowercase letter and holds only lowercase letters, digits and - (2 to 63)")
	}
	def, err := parseDraft(in.Draft)
	if err != nil {
		return Stack{}, err
	}
	q := db.Queries(s.pool)
	provider, err := q.GetProviderByName(ctx, in.Provider)
	if errors.Is(err, pgx.ErrNoRows) {
		v.Add("provider", "exists", "no provider named %q; see the providers page", in.Provider)
	} else if err != nil {
		return Stack{}, err
	}
	if err := v.Err(); err != nil {
		return Stack{}, err
	}
	id, err := s.create(ctx, actor, in, def, provider.ID, nil)
	if err != nil {
		return Stack{}, fmt.Errorf("create stack: %w", err)
	}
	return s.Get(ctx, actor, id)
}

// create records a new stack in one transaction with its audit event; parent is the version a
// fork was copied from.
func (s *Service) create(ctx context.Context, actor access.Principal, in New, def Definition, provider uuid.UUID, parent *Parent) (uuid.UUID, error) {
	draft, err := json.Marshal(def)
	if err != nil {
		return uuid.Nil, err
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
		taken, err := q.StackNameTaken(ctx, dbgen.StackNameTakenParams{TenantID: tenant, Name: in.Name})
		if err != nil {
			return err
		}
		if taken {
			return problem.Invalid("name", "unique", "a stack named %q already exists here", in.Name)
		}
		p := dbgen.CreateStackParams{
			TenantID: tenant, ProviderID: provider, Name: in.Name, DisplayName: in.DisplayName, Description: in.Description,
			Draft: draft, CreatedBy: uuid.NullUUID{UUID: actor.UserID, Valid: actor.UserID != uuid.Nil},
		}
		diff := map[string]any{"name": in.Name, "provider": in.Provider}
		action := "stack.create"
		if parent != nil {
			p.ForkedFromID = uuid.NullUUID{UUID: parent.ID, Valid: true}
			p.ForkedFromVersion.Int32, p.ForkedFromVersion.Valid = int32(parent.Version), true
			diff["forked_from"], diff["forked_from_version"], action = parent.ID.String(), parent.Version, "stack.fork"
		}
		id, err = q.CreateStack(ctx, p)
		if db.IsUniqueViolation(err) {
			return problem.Invalid("name", "unique", "a stack named %q already exists here", in.Name)
		}
		if err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{Tenant: tenant.UUID, Action: action, TargetType: "stack", TargetID: id.String(), Diff: diff})
	})
	return id, err
}

// UpdateDraft replaces the draft, its display name and description. The draft is kept even
// with problems, which are returned with the stack.
func (s *Service) UpdateDraft(ctx context.Context, actor access.Principal, id uuid.UUID, d Draft) (Stack, error) {
	def, err := parseDraft(d.Draft)
	if err != nil {
		// Who may not see the stack learns nothing from how their draft was written.
		st, gerr := s.get(ctx, db.Queries(s.pool), actor, id)
		if gerr != nil {
			return Stack{}, gerr
		}
		if !can(actor, access.StackDefinitionUpdate, st.TenantID) {
			return Stack{}, problem.ErrForbidden
		}
		return Stack{}, err
	}
	raw, err := json.Marshal(def)
	if err != nil {
		return Stack{}, err
	}
	err = db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		st, err := s.editable(ctx, q, actor, id)
		if err != nil {
			return err
		}
		if err := q.UpdateStackDraft(ctx, dbgen.UpdateStackDraftParams{ID: id, DisplayName: d.DisplayName, Description: d.Description, Draft: raw}); err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{
			Tenant: st.tenant(), Action: "stack.update", TargetType: "stack", TargetID: id.String(), Diff: map[string]any{"name": st.Name},
		})
	})
	if err != nil {
		return Stack{}, fmt.Errorf("update stack %s: %w", id, err)
	}
	return s.Get(ctx, actor, id)
}

// editable locks the stack and returns it when actor may change it: a provider stack when
// actor is a provider admin, a tenant's own when actor is its tenant admin. Editing, deleting,
// publishing and archiving all ask the same.
func (s *Service) editable(ctx context.Context, q *dbgen.Queries, actor access.Principal, id uuid.UUID) (Stack, error) {
	if _, err := q.LockStack(ctx, id); errors.Is(err, pgx.ErrNoRows) {
		return Stack{}, problem.ErrNotFound
	} else if err != nil {
		return Stack{}, err
	}
	st, err := s.get(ctx, q, actor, id)
	if err != nil {
		return Stack{}, err
	}
	if !can(actor, access.StackDefinitionUpdate, st.TenantID) {
		return Stack{}, problem.ErrForbidden
	}
	return st, nil
}

// Delete removes a stack from view; refused while an instance of it is not destroyed.
func (s *Service) Delete(ctx context.Context, actor access.Principal, id uuid.UUID) error {
	return db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		st, err := s.editable(ctx, q, actor, id)
		if err != nil {
			return err
		}
		live, err := q.StackLiveInstances(ctx, dbgen.StackLiveInstancesParams{StackID: id})
		if err != nil {
			return err
		}
		if live > 0 {
			return problem.Invalid("instances", "in_use", "%d instances of this stack are not destroyed; destroy them first", live)
		}
		if err := q.SoftDeleteStack(ctx, id); err != nil {
			return fmt.Errorf("delete stack %s: %w", id, err)
		}
		return audit.Record(ctx, q, actor, audit.Event{
			Tenant: st.tenant(), Action: "stack.delete", TargetType: "stack", TargetID: id.String(), Diff: map[string]any{"name": st.Name},
		})
	})
}

// Filter narrows a list of stacks.
type Filter struct {
	// Search matches the name or the display name.
	Search   string
	Provider string
	// Scope is "provider" (provider stacks), "tenant" (tenants' own) or "" (both).
	Scope string
}

// Filtered reports whether the filter narrows the list at all.
func (f Filter) Filtered() bool { return f.Search != "" || f.Provider != "" || f.Scope != "" }

// maxListed bounds a list of stacks.
const maxListed = 500

// List returns the stacks the actor may see, newest change first: provider stacks and those
// of the actor's tenants; those the actor may not edit once published.
func (s *Service) List(ctx context.Context, actor access.Principal, f Filter) ([]Stack, error) {
	if f.Scope != "" && f.Scope != "provider" && f.Scope != "tenant" {
		return nil, problem.Invalid("scope", "enum", "scope is provider or tenant")
	}
	if !actor.ProviderAdmin && len(actor.Roles) == 0 {
		return []Stack{}, nil // provider stacks are offered to tenants' members
	}
	rows, err := db.Queries(s.pool).ListStacks(ctx, dbgen.ListStacksParams{
		AllTenants: actor.ProviderAdmin, TenantIds: actor.TenantsWith(access.StackDefinitionRead),
		EditableTenantIds: actor.TenantsWith(access.StackDefinitionUpdate),
		Search:            f.Search, Provider: f.Provider, Scope: f.Scope, MaxRows: maxListed,
	})
	if err != nil {
		return nil, fmt.Errorf("list stacks: %w", err)
	}
	out := make([]Stack, len(rows))
	for i, r := range rows {
		st := Stack{ID: r.ID, Provider: r.Provider, Name: r.Name, DisplayName: r.DisplayName, Description: r.Description,
			LatestVersion: int(r.LatestVersion), CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
		if r.TenantID.Valid {
			t := r.TenantID.UUID
			st.TenantID = &t
		}
		if r.TenantName != nil {
			st.TenantName = *r.TenantName
		}
		if r.ForkedFromID.Valid {
			st.ForkedFrom = &Parent{ID: r.ForkedFromID.UUID, Version: int(r.ForkedFromVersion.Int32)}
		}
		out[i] = st
	}
	return out, nil
}
