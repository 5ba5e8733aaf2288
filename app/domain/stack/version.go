package stack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/audit"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// Version is a published version of a stack: when and why it was published, and whether it
// is archived (it deploys no new instance).
type Version struct {
	Version     int        `json:"version"`
	Changelog   string     `json:"changelog"`
	PublishedBy string     `json:"published_by,omitempty"`
	PublishedAt time.Time  `json:"published_at"`
	ArchivedAt  *time.Time `json:"archived_at,omitempty"`
	// Definition is the version's, with its day-2 operations; only when one version is asked for.
	Definition *Definition `json:"definition,omitempty"`
}

func versions(ctx context.Context, q *dbgen.Queries, id uuid.UUID) ([]Version, error) {
	rows, err := q.ListStackVersions(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("list versions of stack %s: %w", id, err)
	}
	out := make([]Version, len(rows))
	for i, r := range rows {
		out[i] = Version{Version: int(r.Version), Changelog: r.Changelog, PublishedAt: r.PublishedAt, ArchivedAt: r.ArchivedAt}
		if r.PublishedBy != nil {
			out[i].PublishedBy = *r.PublishedBy
		}
	}
	return out, nil
}

// Publish snapshots the draft as the stack's next version. A provider stack is published by
// provider admins, a tenant's own by its tenant admins; a draft with problems is refused with
// all of them.
func (s *Service) Publish(ctx context.Context, actor access.Principal, id uuid.UUID, changelog string) (Version, error) {
	var n int
	err := db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		st, err := s.editable(ctx, q, actor, id)
		if err != nil {
			return err
		}
		changelog = strings.TrimSpace(changelog)
		if changelog == "" {
			return problem.Invalid("changelog", "required", "say what changed in this version")
		}
		problems, err := Check(ctx, q, *st.Draft, st.owner())
		if err != nil {
			return err
		}
		if len(problems) > 0 {
			return &problem.ValidationError{Fields: problems}
		}
		n, err = record(ctx, q, actor, id, *st.Draft, changelog)
		if err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{
			Tenant: st.tenant(), Action: "stack.publish", TargetType: "stack", TargetID: id.String(),
			Diff: map[string]any{"name": st.Name, "version": n, "changelog": changelog},
		})
	})
	if err != nil {
		return Version{}, fmt.Errorf("publish stack %s: %w", id, err)
	}
	return s.Version(ctx, actor, id, n)
}

// record writes def as the stack's next version: the definition without its operations, and
// each operation as a row.
func record(ctx context.Context, q *dbgen.Queries, actor access.Principal, id uuid.UUID, def Definition, changelog string) (int, error) {
	ops, routes := def.Operations, def.Routes
	def.Operations, def.Routes = nil, nil
	raw, err := json.Marshal(def)
	if err != nil {
		return 0, err
	}
	n, err := q.CreateStackVersion(ctx, dbgen.CreateStackVersionParams{
		StackID: id, Definition: raw, Changelog: changelog, PublishedBy: uuid.NullUUID{UUID: actor.UserID, Valid: actor.UserID != uuid.Nil},
	})
	if err != nil {
		return 0, err
	}
	for i, op := range ops {
		actions, err := json.Marshal(op.Actions)
		if err != nil {
			return 0, err
		}
		schema := op.InputSchema
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		err = q.CreateStackOperation(ctx, dbgen.CreateStackOperationParams{
			StackID: id, Version: n, Name: op.Name, DisplayName: op.DisplayName, Description: op.Description, InputSchema: schema,
			RequiredStates: op.RequiredStates, Actions: actions, TriggersTransition: op.TriggersTransition, Position: int32(i),
		})
		if err != nil {
			return 0, err
		}
	}
	for i, r := range routes {
		err := q.CreateEventRule(ctx, dbgen.CreateEventRuleParams{StackID: id, Version: n, Position: int32(i), SourceKind: r.Source,
			EventType: r.Type, Filter: r.Filter, Trigger: r.Trigger})
		if err != nil {
			return 0, err
		}
	}
	return int(n), nil
}

// Versions lists the stack's published versions, newest first.
func (s *Service) Versions(ctx context.Context, actor access.Principal, id uuid.UUID) ([]Version, error) {
	q := db.Queries(s.pool)
	if _, err := s.get(ctx, q, actor, id); err != nil {
		return nil, err
	}
	return versions(ctx, q, id)
}

// Version returns one published version with its definition and day-2 operations.
func (s *Service) Version(ctx context.Context, actor access.Principal, id uuid.UUID, n int) (Version, error) {
	q := db.Queries(s.pool)
	if _, err := s.get(ctx, q, actor, id); err != nil {
		return Version{}, err
	}
	return version(ctx, q, id, n)
}

func version(ctx context.Context, q *dbgen.Queries, id uuid.UUID, n int) (Version, error) {
	r, err := q.GetStackVersion(ctx, dbgen.GetStackVersionParams{StackID: id, Version: int32(n)})
	if errors.Is(err, pgx.ErrNoRows) {
		return Version{}, problem.ErrNotFound
	}
	if err != nil {
		return Version{}, fmt.Errorf("get version %d of stack %s: %w", n, id, err)
	}
	def, err := LoadVersion(ctx, q, id, n)
	if err != nil {
		return Version{}, err
	}
	v := Version{Version: int(r.Version), Changelog: r.Changelog, PublishedAt: r.PublishedAt, ArchivedAt: r.ArchivedAt, Definition: &def}
	if r.PublishedBy != nil {
		v.PublishedBy = *r.PublishedBy
	}
	return v, nil
}

// Archive keeps a version from deploying new instances; refused while an instance uses it.
func (s *Service) Archive(ctx context.Context, actor access.Principal, id uuid.UUID, n int) error {
	return db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		st, err := s.editable(ctx, q, actor, id)
		if err != nil {
			return err
		}
		if _, err := q.GetStackVersion(ctx, dbgen.GetStackVersionParams{StackID: id, Version: int32(n)}); errors.Is(err, pgx.ErrNoRows) {
			return problem.ErrNotFound
		} else if err != nil {
			return err
		}
		live, err := q.StackLiveInstances(ctx, dbgen.StackLiveInstancesParams{StackID: id, Version: int32(n)})
		if err != nil {
			return err
		}
		if live > 0 {
			return problem.Invalid("version", "in_use", "%d instances use version %d; upgrade or destroy them first", live, n)
		}
		if err := q.ArchiveStackVersion(ctx, dbgen.ArchiveStackVersionParams{StackID: id, Version: int32(n)}); err != nil {
			return err
		}
		return audit.Record(ctx, q, actor, audit.Event{
			Tenant: st.tenant(), Action: "stack.archive_version", TargetType: "stack", TargetID: id.String(),
			Diff: map[string]any{"name": st.Name, "version": n},
		})
	})
}

// ForkRequest names the tenant a provider stack is copied into, the copy's name, and the
// version copied (0: the latest).
type ForkRequest struct {
	TenantID uuid.UUID `json:"tenant_id"`
	Name     string    `json:"name"`
	Version  int       `json:"version"`
}

// Fork copies a published version of a provider stack into a tenant as a new stack of its
// own, whose draft is that version's definition with its operations. The fork remembers
// where it came from and never changes when its parent does.
func (s *Service) Fork(ctx context.Context, actor access.Principal, id uuid.UUID, in ForkRequest) (Stack, error) {
	if !actor.Member(in.TenantID) {
		return Stack{}, problem.Invalid("tenant_id", "exists", "no tenant with this ID that you can see")
	}
	q := db.Queries(s.pool)
	parent, err := s.get(ctx, q, actor, id)
	if err != nil {
		return Stack{}, err
	}
	if !actor.Can(access.StackDefinitionCreate, in.TenantID) {
		return Stack{}, problem.ErrForbidden
	}
	if !parent.ProviderLevel() {
		return Stack{}, problem.Invalid("id", "provider", "only provider stacks are forked; this one is already a tenant's own")
	}
	in.Name = strings.TrimSpace(in.Name)
	if !stackName.MatchString(in.Name) {
		return Stack{}, problem.Invalid("name", "pattern", "a stack's name starts with a lowercase letter and holds only lowercase letters, digits and - (2 to 63)")
	}
	if in.Version == 0 {
		in.Version = parent.LatestVersion
	}
	if in.Version == 0 {
		return Stack{}, problem.Invalid("version", "published", "stack %s has no published version to fork", parent.Name)
	}
	def, err := LoadVersion(ctx, q, id, in.Version)
	if errors.Is(err, pgx.ErrNoRows) {
		return Stack{}, problem.Invalid("version", "published", "stack %s has no version %d", parent.Name, in.Version)
	} else if err != nil {
		return Stack{}, err
	}
	tenant := in.TenantID
	fork := New{TenantID: &tenant, Provider: parent.Provider, Name: in.Name, DisplayName: parent.DisplayName, Description: parent.Description}
	forkID, err := s.create(ctx, actor, fork, def, parent.providerID, &Parent{ID: id, Version: in.Version})
	if err != nil {
		return Stack{}, fmt.Errorf("fork stack %s: %w", id, err)
	}
	return s.Get(ctx, actor, forkID)
}
