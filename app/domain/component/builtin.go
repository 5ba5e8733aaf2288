package component

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"reflect"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/domain/component/builtin"
	"nimbus/app/platform/audit"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// builtinChangelog is the changelog of every built-in component's first version, and
// upgradedChangelog of each version a newer Nimbus ships.
const (
	builtinChangelog  = "Shipped with Nimbus"
	upgradedChangelog = "Updated by a newer Nimbus"
)

// builtinHosts are the language hosts built-in programs are validated against: they are all
// YAML, and shipping them must not depend on which hosts this server has installed.
var builtinHosts = map[string]bool{"yaml": true}

// builtinEntry is one line of builtin/components.json.
type builtinEntry struct {
	Name             string          `json:"name"`
	DisplayName      string          `json:"display_name"`
	Description      string          `json:"description"`
	Provider         string          `json:"provider"`
	SemanticType     string          `json:"semantic_type"`
	ResolverBindings json.RawMessage `json:"resolver_bindings"`
	// SystemOnly marks a part Nimbus deploys itself (the tenant factory's): tenants are not
	// offered it.
	SystemOnly bool `json:"system_only"`
}

// Builtins returns the system components Nimbus ships with, as read from package builtin:
// provider-level, marked System, and not yet validated.
func Builtins() ([]New, error) {
	manifest, err := fs.ReadFile(builtin.FS, "components.json")
	if err != nil {
		return nil, fmt.Errorf("built-in components: %w", err)
	}
	var entries []builtinEntry
	if err := json.Unmarshal(manifest, &entries); err != nil {
		return nil, fmt.Errorf("built-in components: components.json: %w", err)
	}
	out := make([]New, 0, len(entries))
	for _, e := range entries {
		read := func(suffix string) ([]byte, error) {
			b, err := fs.ReadFile(builtin.FS, e.Name+suffix)
			if err != nil {
				return nil, fmt.Errorf("built-in component %s: %w", e.Name, err)
			}
			return b, nil
		}
		code, err := read(".yaml")
		if err != nil {
			return nil, err
		}
		inputs, err := read(".inputs.json")
		if err != nil {
			return nil, err
		}
		outputs, err := read(".outputs.json")
		if err != nil {
			return nil, err
		}
		bindings := e.ResolverBindings
		if len(bindings) == 0 {
			bindings = json.RawMessage(`{}`)
		}
		out = append(out, New{
			Draft: Draft{Name: e.Name, DisplayName: e.DisplayName, Description: e.Description, Language: "yaml",
				Code: string(code), InputSchema: inputs, OutputSchema: outputs, ResolverBindings: bindings},
			Provider: e.Provider, SemanticType: e.SemanticType, System: true, SystemOnly: e.SystemOnly,
		})
	}
	return out, nil
}

// EnsureBuiltins publishes every built-in component this Nimbus does not have yet and returns
// the names of those it created. Each is created and published as version 1 in one
// transaction, so a crash never leaves one half made, and a second call creates nothing. One
// an older Nimbus shipped gets what this one ships as its next version (upgradeBuiltin).
//
// A built-in component is skipped when its provider has, or ever had, a provider-level
// component of the same name: one a provider admin made under that name wins, and one a
// provider admin deleted stays deleted rather than coming back at the next start.
//
// The work is done by audit.System. It does not go through Create and Publish, which ask for a
// provider admin and use a transaction each; it needs no job queue either.
func EnsureBuiltins(ctx context.Context, s *Service) (created []string, err error) {
	all, err := Builtins()
	if err != nil {
		return nil, err
	}
	for _, b := range all {
		made, err := ensureBuiltin(ctx, s, b)
		if err != nil {
			return created, fmt.Errorf("built-in component %s: %w", b.Name, err)
		}
		if made {
			created = append(created, b.Name)
		}
	}
	return created, nil
}

func ensureBuiltin(ctx context.Context, s *Service, b New) (made bool, err error) {
	if _, _, err := Validate(&b.Draft, builtinHosts, Scope{ProviderLevel: true, Package: PackageOf(b.Provider)}); err != nil {
		return false, err // a broken file in package builtin; its tests catch this first
	}
	actor := audit.System
	err = db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		// Two servers starting at once take turns, so the second sees what the first made.
		if err := q.LockBuiltins(ctx); err != nil {
			return err
		}
		provider, err := q.GetProviderByName(ctx, b.Provider)
		if err != nil {
			return fmt.Errorf("provider %q: %w", b.Provider, err)
		}
		semType, err := q.GetSemanticTypeByName(ctx, b.SemanticType)
		if err != nil {
			return fmt.Errorf("semantic type %q: %w", b.SemanticType, err)
		}
		existed, err := q.ProviderComponentEverExisted(ctx, dbgen.ProviderComponentEverExistedParams{ProviderID: provider.ID, Name: b.Name})
		if err != nil {
			return err
		}
		if existed {
			return upgradeBuiltin(ctx, q, provider.ID, b)
		}
		id, err := q.CreateComponent(ctx, dbgen.CreateComponentParams{
			ProviderID: provider.ID, SemanticTypeID: semType.ID, Name: b.Name, DisplayName: b.DisplayName,
			Description: b.Description, Language: b.Language, Code: b.Code, InputSchema: b.InputSchema,
			OutputSchema: b.OutputSchema, ResolverBindings: b.ResolverBindings, IsSystem: true, SystemOnly: b.SystemOnly,
		})
		if err != nil {
			return err
		}
		err = audit.Record(ctx, q, actor, audit.Event{
			Action: "component.create", TargetType: "component", TargetID: id.String(),
			Diff: map[string]any{"name": b.Name, "provider": b.Provider, "semantic_type": b.SemanticType, "language": b.Language, "system": true},
		})
		if err != nil {
			return err
		}
		v, err := q.InsertComponentVersion(ctx, dbgen.InsertComponentVersionParams{
			ComponentID: id, Version: 1, Language: b.Language, Code: b.Code, InputSchema: b.InputSchema,
			OutputSchema: b.OutputSchema, ResolverBindings: b.ResolverBindings, Changelog: builtinChangelog,
			PublishedBy: uuid.NullUUID{},
		})
		if err != nil {
			return err
		}
		if err := q.SetLatestVersion(ctx, dbgen.SetLatestVersionParams{ID: id, LatestVersion: v.Version}); err != nil {
			return err
		}
		made = true
		return audit.Record(ctx, q, actor, audit.Event{
			Action: "component.publish", TargetType: "component", TargetID: id.String(),
			Diff: map[string]any{"name": b.Name, "version": v.Version, "changelog": v.Changelog},
		})
	})
	if db.IsUniqueViolation(err) {
		// A provider admin created one of this name between our check and our insert; theirs wins.
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return made, nil
}

// upgradeBuiltin publishes what this Nimbus ships of a built-in component as its next version
// when its latest differs, so that an installation made by an older Nimbus gets the newer
// program and schemas (deployments move to it by an upgrade, as to any version). A component a
// provider admin deleted, or published a version of since, is theirs and left alone; its
// draft follows only when nobody edited it.
func upgradeBuiltin(ctx context.Context, q *dbgen.Queries, provider uuid.UUID, b New) error {
	c, err := q.ShippedComponent(ctx, dbgen.ShippedComponentParams{ProviderID: provider, Name: b.Name})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil || c.PublishedBy.Valid {
		return err
	}
	if c.Code == b.Code && sameJSON(c.InputSchema, b.InputSchema) && sameJSON(c.OutputSchema, b.OutputSchema) &&
		sameJSON(c.ResolverBindings, b.ResolverBindings) {
		return nil
	}
	v, err := q.InsertComponentVersion(ctx, dbgen.InsertComponentVersionParams{
		ComponentID: c.ID, Version: c.Version + 1, Language: b.Language, Code: b.Code, InputSchema: b.InputSchema,
		OutputSchema: b.OutputSchema, ResolverBindings: b.ResolverBindings, Changelog: upgradedChangelog,
	})
	if err != nil {
		return err
	}
	if err := q.SetLatestVersion(ctx, dbgen.SetLatestVersionParams{ID: c.ID, LatestVersion: v.Version}); err != nil {
		return err
	}
	untouched := c.DraftCode == c.Code && sameJSON(c.DraftInputSchema, c.InputSchema) && sameJSON(c.DraftOutputSchema, c.OutputSchema) &&
		sameJSON(c.DraftResolverBindings, c.ResolverBindings)
	if untouched {
		err := q.UpdateComponentDraft(ctx, dbgen.UpdateComponentDraftParams{ID: c.ID, DisplayName: c.DisplayName, Description: c.Description,
			Language: b.Language, Code: b.Code, InputSchema: b.InputSchema, OutputSchema: b.OutputSchema, ResolverBindings: b.ResolverBindings})
		if err != nil {
			return err
		}
	}
	return audit.Record(ctx, q, audit.System, audit.Event{
		Action: "component.publish", TargetType: "component", TargetID: c.ID.String(),
		Diff: map[string]any{"name": b.Name, "version": v.Version, "changelog": v.Changelog},
	})
}

// sameJSON reports whether two JSON documents hold the same value, however they are spaced:
// Postgres keeps jsonb in its own layout.
func sameJSON(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}
