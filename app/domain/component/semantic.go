package component

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"nimbus/app/kernel/access"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/audit"
	"nimbus/db"
	"nimbus/db/dbgen"
)

var (
	providerName = regexp.MustCompile(`^[a-z][a-z0-9-]{1,39}$`)
	typeName     = regexp.MustCompile(`^[A-Z][A-Za-z0-9]{1,59}$`)
	pulumiType   = regexp.MustCompile(`^[a-z][a-z0-9-]*:[A-Za-z0-9/_.-]*:[A-Za-z][A-Za-z0-9]*$`)
)

// NewTerm is a provider or semantic type to add.
type NewTerm struct {
	Name        string `json:"name"`
	DisplayName string `json:"display_name"`
	Description string `json:"description"`
}

func (t *NewTerm) check(pattern *regexp.Regexp, rule string) error {
	t.Name, t.DisplayName = strings.TrimSpace(t.Name), strings.TrimSpace(t.DisplayName)
	v := &problem.ValidationError{}
	if !pattern.MatchString(t.Name) {
		v.Add("name", "pattern", "%s", rule)
	}
	if t.DisplayName == "" {
		t.DisplayName = t.Name
	}
	if utf8.RuneCountInString(t.DisplayName) > 100 {
		v.Add("display_name", "max_length", "must be at most 100 characters")
	}
	if utf8.RuneCountInString(t.Description) > 1000 {
		v.Add("description", "max_length", "must be at most 1000 characters")
	}
	return v.Err()
}

// AddProvider adds a provider to the semantic layer; provider admins only.
func (s *Service) AddProvider(ctx context.Context, actor access.Principal, in NewTerm) error {
	if !actor.ProviderAdmin {
		return problem.ErrForbidden
	}
	if err := in.check(providerName, "must be 2–40 lower-case letters, digits and -, starting with a letter, such as proxmox"); err != nil {
		return err
	}
	return db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		p, err := q.CreateProvider(ctx, dbgen.CreateProviderParams{Name: in.Name, DisplayName: in.DisplayName, Description: in.Description})
		if db.IsUniqueViolation(err) {
			return problem.Invalid("name", "unique", "a provider named %q already exists", in.Name)
		}
		if err != nil {
			return fmt.Errorf("add provider: %w", err)
		}
		return audit.Record(ctx, q, actor, audit.Event{Action: "provider.create", TargetType: "provider", TargetID: p.ID.String(), Diff: map[string]any{"name": in.Name}})
	})
}

// AddSemanticType adds a semantic resource type; provider admins only.
func (s *Service) AddSemanticType(ctx context.Context, actor access.Principal, in NewTerm) error {
	if !actor.ProviderAdmin {
		return problem.ErrForbidden
	}
	if err := in.check(typeName, "must be 2–60 letters and digits in UpperCamelCase, such as VirtualMachine"); err != nil {
		return err
	}
	return db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		st, err := q.CreateSemanticType(ctx, dbgen.CreateSemanticTypeParams{Name: in.Name, DisplayName: in.DisplayName, Description: in.Description})
		if db.IsUniqueViolation(err) {
			return problem.Invalid("name", "unique", "a semantic type named %q already exists", in.Name)
		}
		if err != nil {
			return fmt.Errorf("add semantic type: %w", err)
		}
		return audit.Record(ctx, q, actor, audit.Event{Action: "semantic_type.create", TargetType: "semantic_type", TargetID: st.ID.String(), Diff: map[string]any{"name": in.Name}})
	})
}

// NewResourceType says which Pulumi resource type realises a semantic type on a provider.
type NewResourceType struct {
	Provider     string `json:"provider"`
	SemanticType string `json:"semantic_type"`
	PulumiType   string `json:"pulumi_type"`
	Description  string `json:"description"`
}

// AddResourceType maps a semantic type to a provider's Pulumi resource type; provider admins
// only.
func (s *Service) AddResourceType(ctx context.Context, actor access.Principal, in NewResourceType) error {
	if !actor.ProviderAdmin {
		return problem.ErrForbidden
	}
	in.PulumiType = strings.TrimSpace(in.PulumiType)
	v := &problem.ValidationError{}
	if !pulumiType.MatchString(in.PulumiType) {
		v.Add("pulumi_type", "pattern", "must be a Pulumi type token such as aws:ec2/instance:Instance")
	}
	if utf8.RuneCountInString(in.Description) > 1000 {
		v.Add("description", "max_length", "must be at most 1000 characters")
	}
	return db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		p, err := q.GetProviderByName(ctx, in.Provider)
		if errors.Is(err, pgx.ErrNoRows) {
			v.Add("provider", "exists", "no provider named %q", in.Provider)
		} else if err != nil {
			return err
		}
		st, err := q.GetSemanticTypeByName(ctx, in.SemanticType)
		if errors.Is(err, pgx.ErrNoRows) {
			v.Add("semantic_type", "exists", "no semantic type named %q", in.SemanticType)
		} else if err != nil {
			return err
		}
		if err := v.Err(); err != nil {
			return err
		}
		rt, err := q.CreateProviderResourceType(ctx, dbgen.CreateProviderResourceTypeParams{
			ProviderID: p.ID, SemanticTypeID: st.ID, PulumiType: in.PulumiType, Description: in.Description,
		})
		if db.IsUniqueViolation(err) {
			return problem.Invalid("pulumi_type", "unique", "%s already maps %s", in.Provider, in.PulumiType)
		}
		if err != nil {
			return fmt.Errorf("add resource type: %w", err)
		}
		return audit.Record(ctx, q, actor, audit.Event{Action: "resource_type.create", TargetType: "resource_type", TargetID: rt.ID.String(),
			Diff: map[string]any{"provider": in.Provider, "semantic_type": in.SemanticType, "pulumi_type": in.PulumiType}})
	})
}
