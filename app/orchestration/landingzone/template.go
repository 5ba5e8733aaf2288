package landingzone

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"nimbus/app/domain/component"
	"nimbus/app/domain/resolver"
	"nimbus/app/kernel/access"
	"nimbus/app/kernel/lifecycle"
	"nimbus/app/kernel/problem"
	"nimbus/app/platform/audit"
	"nimbus/db"
	"nimbus/db/dbgen"
)

// Template is what environments of a zone are opened from: the components each gets.
type Template struct {
	ID          uuid.UUID `json:"id"`
	Name        string    `json:"name"`
	Description string    `json:"description"`
	Withdrawn   bool      `json:"withdrawn"` // opens no more environments
	Components  []Member  `json:"mandatory_components"`
}

// Member is one component of a template, or one system service: deployed under its name with
// its parameters, in position order.
type Member struct {
	ID          uuid.UUID      `json:"id"`
	ComponentID uuid.UUID      `json:"component_id"`
	Component   string         `json:"component"`
	Name        string         `json:"name"`
	Parameters  map[string]any `json:"parameters"`
	// Refers names, by input, the earlier member whose deployment's output the input takes.
	Refers   map[string]string `json:"refers,omitempty"`
	Position int               `json:"position"`
	// For a system service: its deployment, once the zone is published, and how it stands.
	DeploymentID *uuid.UUID `json:"deployment_id,omitempty"`
	Status       string     `json:"status,omitempty"`
}

// MemberIn is a component to add to a template or to the system services.
type MemberIn struct {
	ComponentID uuid.UUID      `json:"component_id"`
	Name        string         `json:"name"`
	Parameters  map[string]any `json:"parameters"`
	// Refers names, for an input that names another deployment (x-refers-to, such as a
	// machine's network_id), a member before this one of the semantic type the input names:
	// when an environment is opened, the input takes that member's deployment's output, and
	// this member is deployed after it.
	Refers map[string]string `json:"refers,omitempty"`
}

// siblings are the members beside the one being checked, for its refers to name: the semantic
// type of each member before it, and the names of all of them, by name.
type siblings struct {
	before map[string]string
	all    map[string]bool
}

// NewTemplate is a template to add to a zone.
type NewTemplate struct {
	Name                string     `json:"name"`
	Description         string     `json:"description"`
	MandatoryComponents []MemberIn `json:"mandatory_components"`
}

var memberName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,39}$`)

// members reads a template's components; deployments, of the environment made from it, give
// each its deployment's status.
func members(ctx context.Context, q *dbgen.Queries, templateID uuid.UUID, deployments []dbgen.EnvironmentDeploymentsRow) ([]Member, error) {
	rows, err := q.TemplateComponents(ctx, templateID)
	if err != nil {
		return nil, fmt.Errorf("template components: %w", err)
	}
	out := make([]Member, len(rows))
	for i, r := range rows {
		out[i] = Member{ID: r.ID, ComponentID: r.ComponentID, Component: r.ComponentName, Name: r.Name, Position: int(r.Position),
			Parameters: map[string]any{}}
		_ = json.Unmarshal(r.Parameters, &out[i].Parameters)
		_ = json.Unmarshal(r.Refers, &out[i].Refers)
		for _, d := range deployments {
			if d.TemplateComponentID.Valid && d.TemplateComponentID.UUID == r.ID {
				id := d.ID
				out[i].DeploymentID, out[i].Status = &id, d.Status
			}
		}
	}
	return out, nil
}

// AddTemplate adds a template with its mandatory components to a zone that is not retired.
func (s *Service) AddTemplate(ctx context.Context, actor access.Principal, zoneID uuid.UUID, in NewTemplate) (Template, error) {
	if !actor.Can(access.LandingZoneManage, uuid.Nil) {
		return Template{}, problem.ErrForbidden
	}
	in.Name = strings.TrimSpace(in.Name)
	var out Template
	err := db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		z, err := zoneFor(ctx, q, zoneID)
		if err != nil {
			return err
		}
		if err := checkTemplate(ctx, q, z, in); err != nil {
			return err
		}
		t, err := q.CreateTemplate(ctx, dbgen.CreateTemplateParams{LandingZoneID: z.ID, Name: in.Name, Description: in.Description,
			CreatedBy: nullID(actor.UserID)})
		if db.IsUniqueViolation(err) {
			return problem.Invalid("name", "unique", "%s has a template named %q already", z.Name, in.Name)
		}
		if err != nil {
			return err
		}
		for _, m := range in.MandatoryComponents {
			if err := addMember(ctx, q, t.ID, m); err != nil {
				return err
			}
		}
		// A published zone takes environments now: the template must be whole already.
		if lifecycle.ZoneStatus(z.Status) == lifecycle.ZonePublished {
			if err := complete(ctx, q, z); err != nil {
				return err
			}
		}
		if out.Components, err = members(ctx, q, t.ID, nil); err != nil {
			return err
		}
		out.ID, out.Name, out.Description = t.ID, t.Name, t.Description
		return audit.Record(ctx, q, actor, audit.Event{Action: "landing_zone.template_create", TargetType: "landing_zone", TargetID: z.ID.String(),
			Diff: map[string]any{"template": t.Name, "mandatory_components": memberNames(in.MandatoryComponents)}})
	})
	if err != nil {
		return Template{}, fmt.Errorf("add template: %w", err)
	}
	return out, nil
}

// CheckTemplate reports what AddTemplate would refuse in a template, saving nothing: a form
// that cannot send all of it yet still hears every other problem at once.
func (s *Service) CheckTemplate(ctx context.Context, actor access.Principal, zoneID uuid.UUID, in NewTemplate) error {
	if !actor.Can(access.LandingZoneManage, uuid.Nil) {
		return problem.ErrForbidden
	}
	q := db.Queries(s.pool)
	z, err := q.GetLandingZone(ctx, zoneID)
	if errors.Is(err, pgx.ErrNoRows) {
		return problem.ErrNotFound
	}
	if err != nil {
		return err
	}
	in.Name = strings.TrimSpace(in.Name)
	return checkTemplate(ctx, q, z, in)
}

// checkTemplate refuses a template the zone could not offer, naming each problem's field.
func checkTemplate(ctx context.Context, q *dbgen.Queries, z dbgen.LandingZone, in NewTemplate) error {
	if lifecycle.ZoneStatus(z.Status) == lifecycle.ZoneRetired {
		return problem.Invalid("landing_zone", "retired", "landing zone %s is retired", z.Name)
	}
	v := &problem.ValidationError{}
	if in.Name == "" || len(in.Name) > 100 {
		v.Add("name", "length", "must be 1–100 characters")
	}
	if len(in.MandatoryComponents) == 0 {
		v.Add("mandatory_components", "required", "list at least one component every environment of this template gets")
	}
	sib := siblings{before: map[string]string{}, all: map[string]bool{}}
	for _, m := range in.MandatoryComponents {
		sib.all[m.Name] = true
	}
	seen := map[string]bool{}
	for i, m := range in.MandatoryComponents {
		field := fmt.Sprintf("mandatory_components[%d]", i)
		typ, err := checkMember(ctx, q, z, field, m, sib, v)
		if err != nil {
			return err
		}
		if seen[m.Name] {
			v.Add(field+".name", "unique", "%q is named twice", m.Name)
		} else {
			sib.before[m.Name] = typ
		}
		seen[m.Name] = true
	}
	return v.Err()
}

// AddSystemService adds a component that the draft zone deploys for itself when it is
// published.
func (s *Service) AddSystemService(ctx context.Context, actor access.Principal, zoneID uuid.UUID, in MemberIn) (Member, error) {
	if !actor.Can(access.LandingZoneManage, uuid.Nil) {
		return Member{}, problem.ErrForbidden
	}
	var out Member
	err := db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		z, err := zoneFor(ctx, q, zoneID)
		if err != nil {
			return err
		}
		if lifecycle.ZoneStatus(z.Status) != lifecycle.ZoneDraft {
			return problem.Invalid("landing_zone", "draft", "landing zone %s is %s: system services are added before it is published", z.Name, z.Status)
		}
		tpl, err := q.SystemTemplate(ctx, z.ID)
		if err != nil {
			return err
		}
		existing, err := q.TemplateComponents(ctx, tpl.ID)
		if err != nil {
			return err
		}
		// A new service comes after every one the zone has.
		sib := siblings{before: map[string]string{}, all: map[string]bool{}}
		for _, e := range existing {
			sib.before[e.Name], sib.all[e.Name] = e.SemanticType, true
		}
		v := &problem.ValidationError{}
		if _, err := checkMember(ctx, q, z, "", in, sib, v); err != nil {
			return err
		}
		if sib.all[in.Name] {
			v.Add("name", "unique", "%s has a system service named %q already", z.Name, in.Name)
		}
		if err := v.Err(); err != nil {
			return err
		}
		if err := addMember(ctx, q, tpl.ID, in); err != nil {
			return err
		}
		all, err := members(ctx, q, tpl.ID, nil)
		if err != nil {
			return err
		}
		out = all[len(all)-1]
		return audit.Record(ctx, q, actor, audit.Event{Action: "landing_zone.system_service_add", TargetType: "landing_zone", TargetID: z.ID.String(),
			Diff: map[string]any{"name": in.Name, "component_id": in.ComponentID.String(), "parameters": in.Parameters}})
	})
	if err != nil {
		return Member{}, fmt.Errorf("add system service: %w", err)
	}
	return out, nil
}

func zoneFor(ctx context.Context, q *dbgen.Queries, id uuid.UUID) (dbgen.LandingZone, error) {
	z, err := q.LockLandingZone(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return z, problem.ErrNotFound
	}
	return z, err
}

// checkMember refuses a component a zone's environments could not deploy: one that is not
// published, belongs to one tenant, or is for another provider; and parameters that are not
// its inputs. Secret inputs are refused: a template is no place to keep a secret, and a
// secret input should be bound to the secret provisioner. Each input it refers names a member
// of sib before it, of the semantic type the input names. It returns the component's semantic
// type ("" when there is no such component), and only errors of its own.
func checkMember(ctx context.Context, q *dbgen.Queries, z dbgen.LandingZone, field string, m MemberIn, sib siblings, v *problem.ValidationError) (string, error) {
	at := func(name string) string {
		if field == "" {
			return name
		}
		return field + "." + name
	}
	if !memberName.MatchString(m.Name) {
		v.Add(at("name"), "pattern", "must be 1–40 lower-case letters, digits and -, starting with a letter")
	}
	comp, err := q.GetComponent(ctx, m.ComponentID)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		v.Add(at("component_id"), "exists", "no component with this ID")
		return "", nil
	case err != nil:
		return "", err
	case comp.TenantID.Valid:
		v.Add(at("component_id"), "provider_level", "%s belongs to one tenant; a landing zone uses components every tenant can", comp.Name)
		return "", nil
	case comp.LatestVersion == 0:
		v.Add(at("component_id"), "published", "%s has no published version yet", comp.Name)
		return "", nil
	case comp.Provider != z.Provider:
		v.Add(at("component_id"), "provider", "%s is for %s; landing zone %s is for %s", comp.Name, comp.Provider, z.Name, z.Provider)
		return "", nil
	}
	ver, err := q.GetComponentVersion(ctx, dbgen.GetComponentVersionParams{ComponentID: comp.ID, Version: comp.LatestVersion})
	if err != nil {
		return "", err
	}
	schema := component.ParseSchema(at("component_id"), ver.InputSchema, v)
	if schema == nil {
		return comp.SemanticType, nil
	}
	checkRefers(schema, m, sib, at, v)
	filled, err := filledHere(ctx, q, z, ver.ResolverBindings)
	if err != nil {
		return "", err
	}
	for name, value := range m.Parameters {
		switch {
		case filled[name] != "":
			v.Add(at("parameters."+name), "resolved", "is filled by the %s resolver of landing zone %s when each environment deploys %s: leave it out",
				resolver.Label(filled[name]), z.Name, m.Name)
		case schema.Secret(name):
			v.Add(at("parameters."+name), "secret", "is a secret input: bind it to the secret provisioner rather than keep its value in a template")
		default:
			schema.CheckAt(at("parameters."+name), name, value, v)
		}
	}
	return comp.SemanticType, nil
}

// checkRefers refuses a refers naming no member before m, or one of another semantic type
// than its input names, or given for an input that names no other deployment or that m's
// parameters give a value.
func checkRefers(schema *component.Schema, m MemberIn, sib siblings, at func(string) string, v *problem.ValidationError) {
	for _, input := range slices.Sorted(maps.Keys(m.Refers)) {
		target, field := m.Refers[input], at("refers."+input)
		p := schema.Properties[input]
		typ, before := sib.before[target]
		_, given := m.Parameters[input]
		switch {
		case p == nil:
			v.Add(field, "exists", "the component has no input %s", input)
		case p.RefersTo == nil:
			v.Add(field, "refers_to", "input %s names no other deployment: give its value in parameters", input)
		case given:
			v.Add(field, "conflict", "input %s is given a value in parameters too: give it a value or a member, not both", input)
		case target == m.Name:
			v.Add(field, "earlier", "%s cannot name itself: name a member before it", m.Name)
		case before && typ != "" && typ != p.RefersTo.SemanticType:
			v.Add(field, "semantic_type", "%s is a %s, and input %s names a %s", target, typ, input, p.RefersTo.SemanticType)
		case before:
		case sib.all[target]:
			v.Add(field, "earlier", "%s comes after %s: name a member before it, which is deployed first", target, m.Name)
		default:
			v.Add(field, "exists", "no member named %q", target)
		}
	}
}

// filledHere maps the inputs a component binds to resolvers the zone configures onto their
// resolver types.
func filledHere(ctx context.Context, q *dbgen.Queries, z dbgen.LandingZone, rawBindings []byte) (map[string]string, error) {
	bindings, err := resolver.ParseBindings(rawBindings)
	if err != nil {
		return nil, nil // publishing the version checked them; a deploy says what is wrong
	}
	configs, err := q.OwnResolverConfigs(ctx, dbgen.OwnResolverConfigsParams{LandingZoneID: nullID(z.ID)})
	if err != nil {
		return nil, err
	}
	configured := map[string]bool{}
	for _, c := range configs {
		configured[c.Type] = true
	}
	out := map[string]string{}
	for _, b := range resolver.Active(bindings, configured) {
		out[b.Input] = b.Type
	}
	return out, nil
}

func addMember(ctx context.Context, q *dbgen.Queries, templateID uuid.UUID, m MemberIn) error {
	params, refers := m.Parameters, m.Refers
	if params == nil {
		params = map[string]any{}
	}
	if refers == nil {
		refers = map[string]string{}
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return err
	}
	rawRefers, err := json.Marshal(refers)
	if err != nil {
		return err
	}
	_, err = q.AddTemplateComponent(ctx, dbgen.AddTemplateComponentParams{TemplateID: templateID, ComponentID: m.ComponentID, Name: m.Name,
		Parameters: raw, Refers: rawRefers})
	return err
}

func memberNames(ms []MemberIn) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Name
	}
	return out
}

// WithdrawTemplate takes a template out of the choices for new environments; those opened
// from it keep it.
func (s *Service) WithdrawTemplate(ctx context.Context, actor access.Principal, zoneID, templateID uuid.UUID) error {
	if !actor.Can(access.LandingZoneManage, uuid.Nil) {
		return problem.ErrForbidden
	}
	return db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		z, err := zoneFor(ctx, q, zoneID)
		if err != nil {
			return err
		}
		n, err := q.WithdrawTemplate(ctx, dbgen.WithdrawTemplateParams{ID: templateID, LandingZoneID: z.ID})
		if err != nil {
			return err
		}
		if n == 0 {
			return problem.Invalid("template_id", "exists", "%s has no template with this ID that is offered", z.Name)
		}
		return audit.Record(ctx, q, actor, audit.Event{Action: "landing_zone.template_withdraw", TargetType: "landing_zone", TargetID: z.ID.String(),
			Diff: map[string]any{"template_id": templateID.String()}})
	})
}

// RemoveSystemService takes a system service off a draft zone, before anything was deployed.
func (s *Service) RemoveSystemService(ctx context.Context, actor access.Principal, zoneID, serviceID uuid.UUID) error {
	if !actor.Can(access.LandingZoneManage, uuid.Nil) {
		return problem.ErrForbidden
	}
	return db.Tx(ctx, s.pool, func(q *dbgen.Queries) error {
		z, err := zoneFor(ctx, q, zoneID)
		if err != nil {
			return err
		}
		if lifecycle.ZoneStatus(z.Status) != lifecycle.ZoneDraft {
			return problem.Invalid("landing_zone", "draft", "landing zone %s is %s: its system services go when it is retired", z.Name, z.Status)
		}
		tpl, err := q.SystemTemplate(ctx, z.ID)
		if err != nil {
			return err
		}
		existing, err := q.TemplateComponents(ctx, tpl.ID)
		if err != nil {
			return err
		}
		if err := unnamed(existing, serviceID); err != nil {
			return err
		}
		n, err := q.RemoveTemplateComponent(ctx, dbgen.RemoveTemplateComponentParams{ID: serviceID, TemplateID: tpl.ID})
		if err != nil {
			return err
		}
		if n == 0 {
			return problem.Invalid("service_id", "exists", "%s has no system service with this ID", z.Name)
		}
		return audit.Record(ctx, q, actor, audit.Event{Action: "landing_zone.system_service_remove", TargetType: "landing_zone", TargetID: z.ID.String(),
			Diff: map[string]any{"service_id": serviceID.String()}})
	})
}

// unnamed refuses to take the service id away from services while another names it in its
// refers: that one's input would wait for a deployment that never comes.
func unnamed(services []dbgen.TemplateComponentsRow, id uuid.UUID) error {
	var name string
	for _, m := range services {
		if m.ID == id {
			name = m.Name
		}
	}
	for _, m := range services {
		refers := map[string]string{}
		_ = json.Unmarshal(m.Refers, &refers)
		for _, input := range slices.Sorted(maps.Keys(refers)) {
			if name != "" && m.ID != id && refers[input] == name {
				return problem.Invalid("service_id", "referred", "system service %s takes its %s from %s: remove %s first", m.Name, input, name, m.Name)
			}
		}
	}
	return nil
}
